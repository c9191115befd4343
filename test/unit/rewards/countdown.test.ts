/** @module test/unit/rewards/countdown — field cases BC-17 … BC-19 and the countdown reward's answer rules. */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { extractLastAnswerTag, scoreCountdown } from "../../../src/rewards/index.ts";

const answer = (equation: string) => `Let me think… <answer>${equation}</answer>`;

describe("countdown reward: field cases", () => {
  it("BC-17 checks the numbers as a multiset and never truncates a fractional result", () => {
    expect(scoreCountdown(answer("81*1"), 81, [1, 81, 1, 1])).toMatchObject({ reward: 0.1, reason: "wrong_numbers" });
    expect(scoreCountdown(answer("81*1*1*1"), 81, [1, 81, 1, 1])).toMatchObject({ reward: 1, reason: "correct" });
    expect(scoreCountdown(answer("7/2"), 3, [7, 2])).toMatchObject({ reward: 0.1, reason: "wrong_result", value: 3.5 });
  });

  it("BC-18 accepts 8/(3-8/3) within 1e-5 and turns division by zero into the format score", () => {
    const classic = scoreCountdown(answer("8/(3-8/3)"), 24, [8, 3, 8, 3]);
    expect(classic).toMatchObject({ reward: 1, reason: "correct" });
    expect(classic.value).not.toBe(24); // 23.99999999999999: exact === would have refused it
    const byZero = scoreCountdown(answer("5/(3-3)"), 5, [3, 3, 5]);
    expect(byZero).toMatchObject({ reward: 0.1, reason: "division_by_zero", value: null });
    expect(Number.isFinite(byZero.reward)).toBe(true);
  });

  it("BC-19 evaluates without eval; ** is refused with the format score", () => {
    expect(scoreCountdown(answer("9*9*9"), 729, [9, 9, 9])).toMatchObject({ reward: 1 });
    expect(scoreCountdown(answer("9**9**9"), 729, [9, 9, 9])).toMatchObject({
      reward: 0.1,
      reason: "operator_not_allowed",
    });
    const source = readFileSync(fileURLToPath(new URL("../../../src/util/arithmetic.ts", import.meta.url)), "utf8");
    expect(source).not.toMatch(/\beval\s*\(|new\s+Function\s*\(/);
  });
});

describe("countdown reward: answer rules", () => {
  it("takes the last <answer> of the final message; no tag or an unclosed tag is no answer (0.0)", () => {
    const text = "Format: <answer>(1 + 2) / 3</answer>. Trying… <answer>6+4</answer>";
    expect(extractLastAnswerTag(text)).toBe("6+4");
    expect(scoreCountdown(text, 10, [6, 4]).reward).toBe(1);
    expect(scoreCountdown("6+4 = 10", 10, [6, 4])).toMatchObject({ reward: 0, reason: "no_answer" });
    expect(scoreCountdown("<answer>6+4</answer> then <answer>6*", 10, [6, 4])).toMatchObject({ reward: 0 });
    expect(scoreCountdown("<answer>  </answer>", 10, [6, 4])).toMatchObject({ reward: 0, reason: "no_answer" });
  });

  it("gives the format score to every refused equation: other characters, unary minus, decimals, = sign", () => {
    for (const [eq, reason] of [
      ["6^4", "operator_not_allowed"],
      ["6 % 4", "operator_not_allowed"],
      ["6 // 4", "operator_not_allowed"],
      ["-6+4+12", "syntax"],
      ["6.0+4", "unexpected_character"],
      ["6+4=10", "unexpected_character"],
      ["(6+4", "syntax"],
      ["abs(6)+4", "unexpected_character"],
    ] as const) {
      expect(scoreCountdown(answer(eq), 10, [6, 4]), eq).toMatchObject({ reward: 0.1, reason });
    }
  });

  it("caps input sizes and refuses non-finite task numbers", () => {
    expect(scoreCountdown(answer("1+".repeat(600) + "1"), 601, Array(601).fill(1))).toMatchObject({
      reward: 0.1,
      reason: "too_long",
    });
    expect(scoreCountdown("x".repeat(1_000_001), 1, [1])).toMatchObject({ reward: 0, reason: "too_long" });
    expect(() => scoreCountdown(answer("1"), Number.NaN, [1])).toThrow(RangeError);
  });

  it("takes formatScore and tolerance options", () => {
    expect(scoreCountdown(answer("7/2"), 3, [7, 2], { formatScore: 0 }).reward).toBe(0);
    expect(scoreCountdown(answer("7/2"), 3, [7, 2], { tolerance: 0.6 }).reward).toBe(1);
  });
});
