/**
 * @module test/unit/rewards/scientific-notation — a right value in scientific notation scores as the value, exactly:
 * `a \times 10^{n}`, `a \cdot 10^n`, `a × 10^n`, `10^{-n}`, and `aEn`; no rounding, and the strict decimal grammar of
 * BC-05 still refuses hex and malformed numbers.
 */
import { describe, expect, it } from "vitest";
import { formatRational, MAX_SCIENTIFIC_EXPONENT, parseNumericAnswer, parseStrictDecimal, scoreMathAnswer } from "../../../src/rewards/index.ts";

const boxed = (answer: string, gold: string) => scoreMathAnswer(`So the answer is \\boxed{${answer}}.`, gold);
const value = (text: string) => {
  const r = parseNumericAnswer(text);
  return r && formatRational(r);
};

describe("scientific notation a \\times 10^{n}", () => {
  it.each([
    ["3 \\times 10^{5}", "300000"],
    ["3\\times10^5", "300000"],
    ["2.125 \\times 10^{3}", "2125"],
    ["1.8 \\cdot 10^{1}", "18"],
    ["1.8\\cdot10^1", "18"],
    ["1.5 × 10^6", "1500000"],
    ["1.5 · 10^6", "1500000"],
    ["-2.5 \\times 10^{2}", "-250"],
    ["\\mathbf{7.2 \\times 10^{4}}", "72000"],
    ["6.02 \\times 10^{23}", "602000000000000000000000"],
    ["1.6 \\times 10^{-19}", "1.6e-19"],
    ["5 \\times 10^{-3}", "0.005"],
    ["10^{-3}", "0.001"],
    ["\\dfrac{3}{2}", "1.5"],
  ])("\\boxed{%s} scores 1 against %s", (answer, gold) => {
    expect(boxed(answer, gold)).toMatchObject({ reward: 1, reason: "correct" });
  });

  it("reads exactly: the canonical value is the plain decimal", () => {
    expect(value("2.125 \\times 10^{3}")).toBe("2125");
    expect(value("1.6\\times 10^{-19}")).toBe("0.00000000000000000016");
    expect(boxed("3 \\times 10^{5}", "300000").normalized).toBe("300000");
  });

  it("near misses stay wrong: another exponent, another mantissa, a missing power", () => {
    expect(boxed("3 \\times 10^{4}", "300000")).toMatchObject({ reward: 0, reason: "wrong" });
    expect(boxed("3.1 \\times 10^{5}", "300000")).toMatchObject({ reward: 0, reason: "wrong" });
    expect(boxed("2.1249 \\times 10^{3}", "2125")).toMatchObject({ reward: 0, reason: "wrong" });
    expect(boxed("3 \\times 10", "300000").reward).toBe(0);
    expect(boxed("3 \\times 10^{5} + 1", "300000").reward).toBe(0);
  });

  it("a power of ten beyond ±400 is not read (bounded work), and a non-decimal mantissa is not a number", () => {
    expect(value(`1 \\times 10^{${MAX_SCIENTIFIC_EXPONENT}}`)).not.toBeNull();
    expect(value(`1 \\times 10^{${MAX_SCIENTIFIC_EXPONENT + 1}}`)).toBeNull();
    expect(value("1e99999999999999999999")).toBeNull();
    expect(value("x \\times 10^{3}")).toBeNull();
    expect(value("0x1A \\times 10^{3}")).toBeNull();
  });
});

describe("E notation aEn", () => {
  it.each([
    ["1.5e3", "1500"],
    ["1.5E3", "1500"],
    ["1.5E+03", "1500"],
    ["2E-4", "0.0002"],
    ["-1.8E1", "-18"],
    ["1e3", "1000"],
  ])("\\boxed{%s} scores 1 against %s", (answer, gold) => {
    expect(boxed(answer, gold)).toMatchObject({ reward: 1 });
  });

  it("BC-05 the strict decimal grammar is unchanged: 1e3 is not a strict decimal, hex and stray letters are refused", () => {
    expect(parseStrictDecimal("1e3")).toBeNull();
    for (const bad of ["0x1A", "1.e3", "e3", "1e", "1e3.5", "1,00e3", "Infinity"]) expect(value(bad), bad).toBeNull();
    expect(boxed("0x1A", "26")).toMatchObject({ reward: 0, reason: "unparseable" });
  });
});

describe("scientific notation behind the other readers", () => {
  it("#### N, a Final Answer line and inline math in prose", () => {
    expect(scoreMathAnswer("#### 1.5 \\times 10^{3}", "1500", { readers: ["hash"] }).reward).toBe(1);
    expect(scoreMathAnswer("Final Answer: $1.5\\times 10^3$", "1500", { readers: ["final-answer"] }).reward).toBe(1);
    expect(scoreMathAnswer("The mass is $1.5 \\times 10^{3}$ kg.", "1500", { readers: ["final-number"] }).reward).toBe(1);
    expect(scoreMathAnswer("The mass is 1.5 × 10^3 kg.", "1500", { readers: ["final-number"] }).reward).toBe(1);
    expect(scoreMathAnswer("The mass is 1.5e3 kg.", "1500", { readers: ["final-number"] }).reward).toBe(1);
  });
});

describe("plain-text exponents after a times sign", () => {
  it("`10^12`, `10^-3` and `{10}^{6}` read whole where a times sign or nothing precedes them; `2^10` is left as written", () => {
    expect(boxed("1.5 \\times 10^12", "1500000000000").reward).toBe(1);
    expect(boxed("1.5 x 10^-3", "0.0015").reward).toBe(1);
    expect(boxed("10^-3", "0.001").reward).toBe(1);
    expect(boxed("2.5 \\times {10}^{6}", "2500000").reward).toBe(1);
    expect(boxed("2^10", "1024")).toMatchObject({ reward: 0, reason: "unparseable" });
  });
});
