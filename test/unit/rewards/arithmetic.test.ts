/** @module test/unit/rewards/arithmetic — the shared recursive-descent evaluator (countdown and calculator). */
import { describe, expect, it } from "vitest";
import { evaluateArithmetic } from "../../../src/rewards/index.ts";

describe("evaluateArithmetic", () => {
  it("follows precedence and left associativity and lists the literals in order", () => {
    expect(evaluateArithmetic("2+3*4")).toEqual({ ok: true, value: 14, numbers: [2, 3, 4] });
    expect(evaluateArithmetic("(2+3)*4")).toMatchObject({ value: 20 });
    expect(evaluateArithmetic("100/10/5")).toMatchObject({ value: 2 });
    expect(evaluateArithmetic("10-4-3")).toMatchObject({ value: 3 });
  });

  it("accepts decimals and unary signs only when enabled (calculator mode)", () => {
    const calc = { allowDecimals: true, allowUnary: true };
    expect(evaluateArithmetic("0.2 * 50", calc)).toMatchObject({ ok: true, value: 10 });
    expect(evaluateArithmetic("-3 + -(2)", calc)).toMatchObject({ ok: true, value: -5 });
    expect(evaluateArithmetic(".5+1", calc)).toMatchObject({ ok: true, value: 1.5 });
    expect(evaluateArithmetic("1.", calc)).toMatchObject({ ok: false, error: "syntax" });
    expect(evaluateArithmetic("-3")).toMatchObject({ ok: false, error: "syntax" });
  });

  it("refuses bad input without throwing, and never returns a non-finite value", () => {
    expect(evaluateArithmetic("")).toMatchObject({ ok: false, error: "empty" });
    expect(evaluateArithmetic("1/0")).toMatchObject({ ok: false, error: "division_by_zero", index: 1 });
    expect(evaluateArithmetic("1/0 +")).toMatchObject({ ok: false, error: "syntax" });
    expect(evaluateArithmetic("1234567890123456")).toMatchObject({ ok: false, error: "number_too_large" });
    expect(evaluateArithmetic("(".repeat(65) + "1" + ")".repeat(65))).toMatchObject({ error: "too_deep" });
    expect(evaluateArithmetic("999999999999999*".repeat(30) + "1")).toMatchObject({ ok: false, error: "non_finite" });
    expect(evaluateArithmetic("1 2")).toMatchObject({ ok: false, error: "syntax" });
    expect(evaluateArithmetic("2)")).toMatchObject({ ok: false, error: "syntax" });
    expect(evaluateArithmetic("x", { maxChars: 0 })).toMatchObject({ ok: false, error: "too_long" });
  });
});
