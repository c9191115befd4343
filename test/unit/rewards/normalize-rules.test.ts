/**
 * @module test/unit/rewards/normalize-rules — the canonical form's single rules (src/rewards/normalize.ts), one
 * per test: which wrappers, units, prefixes, braces and choice letters are removed, and what stays as written so
 * that two different answers never normalise to the same string (BC-07, BC-08, BC-12, BC-13).
 */
import { describe, expect, it } from "vitest";
import { braceArguments, extractMathAnswer, normalizeAnswer, unwrapLatex } from "../../../src/rewards/index.ts";

describe("normalizeAnswer: units and signs after the value", () => {
  it("a trailing percent in any spelling is dropped, never rescaled", () => {
    for (const raw of ["50%", "50\\%", "50 percent", "50 per cent", "50 per  cent", "50 Percent", "50percent", "50per cent"]) expect(normalizeAnswer(raw)).toBe("50");
    expect(normalizeAnswer("x per  cent")).toBe(normalizeAnswer("x%")); // after any answer, not only after a number
  });

  it("only a percent or degree sign that ends the answer is dropped; one inside an expression stays", () => {
    expect(normalizeAnswer("18% of 50")).toContain("%");
    expect(normalizeAnswer("30^\\circ + x")).toBe("30^\\circ+x");
  });

  it("signs and units after the value go in either order and spacing", () => {
    for (const raw of ["18° C %", "18 ° C %", "18cm °", "18^{\\circ} C", "18degree"]) expect(normalizeAnswer(raw)).toBe("18");
  });

  it("a trailing degree in any spelling is dropped", () => {
    for (const raw of ["90°", "90^\\circ", "90^{\\circ}", "90 degree", "90 degrees", "90°C", "90^{\\circ} F"]) expect(normalizeAnswer(raw)).toBe("90");
  });
});

describe("normalizeAnswer: a leading variable assignment", () => {
  it("`x = 5` in any spacing is the value 5", () => {
    for (const raw of ["x=5", "x = 5", "x =5", "x= 5", "y  =  5"]) expect(normalizeAnswer(raw)).toBe("5");
  });

  it("only a single letter at the start is an assignment: an expression equal to a value stays whole", () => {
    expect(normalizeAnswer("a+b=5")).toBe("a+b=5");
    expect(normalizeAnswer("2x=5")).toBe("2x=5");
  });
});

describe("normalizeAnswer: outer braces and choice letters", () => {
  it("one pair of braces around the whole answer is dropped; braces of two groups are not", () => {
    expect(normalizeAnswer("{5}")).toBe("5");
    expect(normalizeAnswer("{1},{2}")).toBe("{1},{2}");
    expect(normalizeAnswer("{1}{2}")).toBe("{1}{2}");
  });

  it("a single choice letter in any dress is that capital letter", () => {
    for (const raw of ["b", "B", "(b)", "(B).", "B.", "b:", "B)", "\\text{(B)}"]) expect(normalizeAnswer(raw)).toBe("B");
  });

  it("a letter followed by more is no choice letter", () => {
    expect(normalizeAnswer("B) 5")).not.toBe("B");
    expect(normalizeAnswer("(b) and (c)")).not.toBe("B");
  });
});

describe("normalizeAnswer: spaces and punctuation", () => {
  it("a space between two word characters is kept (x y is not xy); around operators it goes", () => {
    expect(normalizeAnswer("x y")).toBe("x y");
    expect(normalizeAnswer("2 x")).toBe("2 x");
    expect(normalizeAnswer("1 + 2")).toBe("1+2");
    expect(normalizeAnswer("18  19")).toBe("18 19"); // a run of spaces is one space: never the number 1819
    expect(normalizeAnswer("18 + 190")).toBe("18+190");
  });

  it("the space after a comma stays only between a number and exactly three digits, which could read as thousands", () => {
    expect(normalizeAnswer("(18, 190)")).toBe("(18, 190)"); // never 18,190
    expect(normalizeAnswer("18, 190")).toBe("18, 190");
    expect(normalizeAnswer("(a, 100)")).toBe("(a,100)"); // a letter before the comma: no number to misread
    expect(normalizeAnswer("18; 100")).toBe("18;100"); // a semicolon is no thousands separator
    expect(normalizeAnswer("18, 1900")).toBe("18,1900"); // four digits are no thousands group
  });

  it("markdown emphasis and a trailing period or semicolon around the answer are dropped, spaces around them too", () => {
    for (const raw of [" **18** ", "**18**.", "_18_", "18;", "  18 .", "* 18 *", "**18** \\,"]) expect(normalizeAnswer(raw)).toBe("18");
  });

  it("a LaTeX forced space stays a space between words", () => {
    expect(normalizeAnswer("a\\ b")).toBe("a b");
  });
});

describe("unwrapLatex", () => {
  it("a wrapper command keeps its whole balanced content, nested braces included", () => {
    expect(unwrapLatex("\\text{a{b}c}")).toBe("a{b}c");
    expect(unwrapLatex("\\mathbf{x} + \\textbf{y}")).toBe("x + y");
  });

  it("a wrapper name without a brace after it is left as written", () => {
    expect(unwrapLatex("\\text 5")).toBe("\\text 5");
  });

  it("sizing commands go, but a longer command that starts with their name (\\leftarrow) stays", () => {
    expect(unwrapLatex("\\left(5\\right)")).toBe("(5)");
    expect(unwrapLatex("\\left5")).toBe("5");
    expect(unwrapLatex("\\leftarrow x")).toBe("\\leftarrow x");
    expect(unwrapLatex("\\rightarrow")).toBe("\\rightarrow");
    expect(unwrapLatex("\\,x\\;y\\!")).toBe("xy");
  });

  it("other commands, and a lone backslash at the end, are kept as written", () => {
    expect(unwrapLatex("\\pi r")).toBe("\\pi r");
    expect(unwrapLatex("5\\")).toBe("5\\");
  });
});

describe("braceArguments", () => {
  it("a braced argument is the whole balanced group; the next argument starts after it", () => {
    expect(braceArguments("\\frac{{1}2}3")).toBe("\\frac{{1}2}{3}");
    expect(braceArguments("\\frac{a{b}}{2}")).toBe("\\frac{a{b}}{2}");
  });

  it("a control word or a control symbol is one argument token", () => {
    expect(braceArguments("\\frac\\pi2")).toBe("\\frac{\\pi}{2}");
    expect(braceArguments("\\sqrt\\,2")).toBe("\\sqrt{\\,}2");
    expect(braceArguments("\\sqrt\\%")).toBe("\\sqrt{\\%}");
  });

  it("\\sqrt with an optional [n] argument is left as written, with or without a space before it", () => {
    expect(braceArguments("\\sqrt[3]{8}")).toBe("\\sqrt[3]{8}");
    expect(braceArguments("\\sqrt [3]{8}")).toBe("\\sqrt [3]{8}");
  });

  it("only \\sqrt has an optional argument: \\frac takes a `[` as its first one-token argument, as TeX does", () => {
    expect(braceArguments("\\frac[1]{2}")).toBe("\\frac{[}{1}]{2}");
  });

  it("a longer command name is not the command (\\fraction), and an unclosed group stays as written", () => {
    expect(braceArguments("\\fraction12")).toBe("\\fraction12");
    expect(braceArguments("\\frac{1")).toBe("\\frac{1");
    expect(braceArguments("\\frac123")).toBe("\\frac{1}{2}3");
  });
});

describe("extractMathAnswer: the Final Answer line and no answer", () => {
  it("reads the Final Answer line in its usual dresses, or the next line when the marker's line is empty", () => {
    const read = (text: string) => extractMathAnswer(text, { fallbacks: ["final-answer"] });
    for (const text of ["Final Answer: **18**", "Final Answer is: 18", "final answer:18", "Final answer:\n18", "**Final Answer**\n18", "_Final answer_ is 18", "**Final Answer** _18_", "Final Answer is : 18"]) {
      expect(read(text)).toEqual({ kind: "answer", text: "18", source: "final-answer" });
    }
  });

  it("only an `is` or a colon right after the marker is dropped; a colon inside the answer stays", () => {
    expect(extractMathAnswer("**Final Answer**\n10:30", { fallbacks: ["final-answer"] })).toMatchObject({ text: "10:30" });
  });

  it("a message without any answer, or with an unclosed last box, is `none` (not too long, not an answer)", () => {
    expect(extractMathAnswer("I could not solve it.", { fallbacks: ["hash", "final-answer"] })).toEqual({ kind: "none" });
    expect(extractMathAnswer("\\boxed{1} but \\boxed{12")).toEqual({ kind: "none" });
  });
});
