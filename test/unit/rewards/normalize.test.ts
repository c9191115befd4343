/** @module test/unit/rewards/normalize — answer normalisation and exact numbers (BC-05, BC-07, BC-08, BC-12, BC-13). */
import { describe, expect, it } from "vitest";
import { tasksFromObjects } from "../../../src/tasks/index.ts";
import {
  braceArguments,
  formatRational,
  normalizeAnswer,
  parseNumericAnswer,
  parseStrictDecimal,
  scoreMathAnswer,
  trimChars,
  unwrapLatex,
} from "../../../src/rewards/index.ts";

describe("normalizeAnswer", () => {
  it("maps each documented form to its canonical string", () => {
    const cases: [string, string][] = [
      ["\\$29.00", "29.00"],
      ["$18", "18"],
      ["18.", "18"],
      ["\u22123", "-3"],
      ["28\\%", "28"],
      ["28 percent", "28"],
      ["28 \\text{ dollars}", "28"],
      ["12 square meters", "12"],
      ["\\text{(B)}", "B"],
      ["(c)", "C"],
      ["**73**", "73"],
      ["1{,}000", "1,000"],
      ["1\\,000", "1000"],
      ["\\left( 1, 2 \\right)", "(1,2)"],
      ["x = 5", "5"],
      ["{5}", "5"],
      ["\\frac {1} {2}", "\\frac{1}{2}"],
      ["", ""],
      ["  ", ""],
    ];
    for (const [raw, expected] of cases) expect(normalizeAnswer(raw), raw).toBe(expected);
  });

  it("unwraps nested wrappers in one pass and keeps other braces balanced", () => {
    expect(unwrapLatex("\\text{\\textbf{B}}")).toBe("B");
    expect(unwrapLatex("\\mathrm{\\frac{1}{2}}")).toBe("\\frac{1}{2}");
    expect(unwrapLatex("\\tfrac{1}{2}")).toBe("\\frac{1}{2}");
  });
});

describe("exact numbers", () => {
  it("applies the strict decimal grammar before converting (BC-05)", () => {
    for (const bad of ["", " ", "1,00", "0x1A", "1e3", "18.", "Infinity", "1,0000", "--1"]) {
      expect(parseStrictDecimal(bad), bad).toBeNull();
    }
    expect(parseStrictDecimal("1,000")).toEqual({ num: 1000n, den: 1n });
    expect(parseStrictDecimal("-3.0")).toEqual({ num: -30n, den: 10n });
    expect(parseStrictDecimal(".5")).toEqual({ num: 5n, den: 10n });
  });

  it("reads fractions and small powers exactly, and formats canonical decimals", () => {
    expect(formatRational(parseNumericAnswer("\\frac{3}{4}")!)).toBe("0.75");
    expect(formatRational(parseNumericAnswer("-6/4")!)).toBe("-1.5");
    expect(formatRational(parseNumericAnswer("2^{10}")!)).toBe("1024");
    expect(formatRational(parseNumericAnswer("10^3")!)).toBe("1000");
    expect(formatRational(parseNumericAnswer("0.0100")!)).toBe("0.01");
    expect(formatRational(parseNumericAnswer("1/3")!)).toBe("1/3");
    expect(parseNumericAnswer("1/0")).toBeNull();
    expect(parseNumericAnswer("2^{65}")).toBeNull();
    expect(parseNumericAnswer("\\sqrt{2}")).toBeNull();
  });
});

describe("lists and digit groups", () => {
  it("BC-05 a comma followed by a space separates a list: `18, 190` is never 18190, `18,190` still is", () => {
    expect(normalizeAnswer("18, 190")).toBe("18, 190");
    expect(parseNumericAnswer(normalizeAnswer("18, 190"))).toBeNull();
    expect(scoreMathAnswer("\\boxed{18, 190}", "18190")).toMatchObject({ reward: 0, reason: "unparseable" });
    expect(scoreMathAnswer("\\boxed{18,190}", "18190").reward).toBe(1);
    expect(normalizeAnswer("\\left( 1, 2 \\right)")).toBe("(1,2)");
  });

  it("BC-05 a thin or narrow no-break space between digit groups is the SI thousands separator", () => {
    expect(normalizeAnswer("1\u2009000")).toBe("1000");
    expect(normalizeAnswer("1\u202F250\u202F000")).toBe("1250000");
    expect(normalizeAnswer("12\u200934")).toBe("12 34");
  });
});

describe("unwrapLatex command boundaries", () => {
  it("drops \\left but not the start of \\leftarrow", () => {
    expect(unwrapLatex("\\left(1\\right)")).toBe("(1)");
    expect(unwrapLatex("a \\leftarrow b")).toBe("a \\leftarrow b");
  });
});

describe("linear-time normalisation", () => {
  it("trims runs of markdown and punctuation with a loop (no regex backtracking)", () => {
    expect(trimChars("**__73__**", "*_")).toBe("73");
    expect(trimChars("18...;", ".;", "end")).toBe("18");
    expect(trimChars("..18..", ".", "end")).toBe("..18");
    expect(normalizeAnswer(".".repeat(999) + "x")).toBe(".".repeat(999) + "x");
    expect(normalizeAnswer(" ".repeat(999) + "x%")).toBe("X");
  });
});

describe("brace-less LaTeX arguments read as the braced form", () => {
  it.each([
    ["\\frac12", "\\frac{1}{2}"],
    ["\\frac 1 2", "\\frac{1}{2}"],
    ["\\dfrac12", "\\frac{1}{2}"],
    ["\\tfrac12", "\\frac{1}{2}"],
    ["\\cfrac 3 4", "\\frac{3}{4}"],
    ["\\frac1{2}", "\\frac{1}{2}"],
    ["\\frac{1}2", "\\frac{1}{2}"],
    ["-\\frac34", "-\\frac{3}{4}"],
    ["\\frac\\pi2", "\\frac{\\pi}{2}"],
    ["\\frac123", "\\frac{1}{2}3"],
    ["\\frac{\\frac12}{3}", "\\frac{\\frac{1}{2}}{3}"],
    ["\\sqrt2", "\\sqrt{2}"],
    ["\\frac{1}{\\sqrt2}", "\\frac{1}{\\sqrt{2}}"],
    ["\\sqrt[3]{8}", "\\sqrt[3]{8}"],
  ])("%s → %s", (raw, braced) => {
    expect(normalizeAnswer(raw)).toBe(braced);
  });

  it("leaves braced, unclosed and argument-less input as written", () => {
    expect(braceArguments("\\frac{1}{2}")).toBe("\\frac{1}{2}");
    expect(braceArguments("\\dfrac{1}{2}")).toBe("\\dfrac{1}{2}");
    expect(braceArguments("\\frac{1")).toBe("\\frac{1");
    expect(braceArguments("\\frac")).toBe("\\frac");
    expect(braceArguments("{\\frac}")).toBe("{\\frac}");
    expect(braceArguments("\\fraction12")).toBe("\\fraction12");
  });

  it("scores a brace-less fraction in a response and in a gold as the braced one (and as 0.5)", () => {
    expect(scoreMathAnswer("so \\boxed{\\frac12}", "\\frac{1}{2}")).toMatchObject({ reward: 1, normalized: "0.5" });
    expect(scoreMathAnswer("so \\boxed{\\dfrac 1 2}", "0.5").reward).toBe(1);
    expect(scoreMathAnswer("so \\boxed{\\frac{1}{2}}", "\\tfrac12").reward).toBe(1);
    expect(scoreMathAnswer("so \\boxed{\\frac13}", "\\frac12")).toMatchObject({ reward: 0, reason: "wrong" });
  });

  it("a MATH gold written brace-less in its solution's box scores against a braced answer", () => {
    const { tasks } = tasksFromObjects([{ problem: "Half of 1?", solution: "It is \\boxed{\\frac12}." }], { name: "m", kind: "math" });
    const gold = String(tasks[0]!.metadata["gold"]);
    expect(gold).toBe("\\frac12");
    expect(scoreMathAnswer("\\boxed{\\frac{1}{2}}", gold).reward).toBe(1);
  });
});
