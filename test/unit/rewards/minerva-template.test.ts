/**
 * @module test/unit/rewards/minerva-template — BC-14's "Final Answer" reader reads the Minerva template that MATH
 * few-shot prompts (lm-evaluation-harness `minerva_math`) ask for: "Final Answer: The final answer is X. I hope it is
 * correct.", with X plain, in `$…$`, with a unit or a fraction; box-only stays the default.
 */
import { describe, expect, it } from "vitest";
import { type AnswerReader, scoreMathAnswer } from "../../../src/rewards/index.ts";

const FINAL: AnswerReader[] = ["boxed", "hash", "final-answer"];
const minerva = (x: string) => `Janet sells 16 - 3 - 4 = 9 eggs and makes 9 * 2 = 18 dollars.\nFinal Answer: The final answer is ${x}. I hope it is correct.`;

describe("BC-14 the Minerva template", () => {
  it.each([
    ["$18$", "18"],
    ["18", "18"],
    ["$\\$18$", "18"],
    ["\\$18.00", "18"],
    ["$18\\text{ dollars}$", "18"],
    ["$18$ dollars per day", "18"],
    ["$1,000$", "1000"],
    ["$-3$", "-3"],
    ["$\\frac{1}{2}$", "0.5"],
    ["$\\dfrac{3}{4}$", "\\frac{3}{4}"],
    ["$1.5 \\times 10^{3}$", "1500"],
    ["$28\\%$", "28"],
    ["$90^\\circ$", "90"],
    ["$\\text{(B)}$", "B"],
  ])("The final answer is %s. I hope it is correct. → 1 against %s", (x, gold) => {
    expect(scoreMathAnswer(minerva(x), gold, { readers: FINAL })).toMatchObject({ reward: 1, source: "final-answer" });
  });

  it("reads the template's value, not a number of the reasoning, and keeps its wrong answers wrong", () => {
    const s = scoreMathAnswer(minerva("$19$"), "18", { readers: FINAL });
    expect(s).toMatchObject({ reward: 0, reason: "wrong", extracted: "$19$", normalized: "19" });
    expect(scoreMathAnswer(minerva("$18$ or $19$"), "18", { readers: FINAL }).reward).toBe(0);
    expect(scoreMathAnswer(minerva("$18.5$"), "18", { readers: FINAL }).reward).toBe(0);
    expect(scoreMathAnswer(minerva("$180$"), "18", { readers: FINAL }).reward).toBe(0);
  });

  it("the variants models write: no 'Final Answer:' prefix, another case, no closing sentence, a closing 'this'", () => {
    for (const text of [
      "The final answer is $18$. I hope it is correct.",
      "FINAL ANSWER: The final answer is 18. I hope it is correct",
      "Final Answer: The final answer is $18$.",
      "Final Answer: The final answer is $18$. I hope this is correct.",
      "Final answer: the final answer is $18$.  I hope it is correct.  ",
    ]) {
      expect(scoreMathAnswer(text, "18", { readers: FINAL }).reward, text).toBe(1);
    }
  });

  it("the box stays the default (BC-14): without the final-answer reader the template is no answer; a box still wins", () => {
    expect(scoreMathAnswer(minerva("$18$"), "18")).toMatchObject({ reward: 0, reason: "no_answer" });
    expect(scoreMathAnswer(minerva("$18$"), "18", { readers: ["boxed", "hash"] })).toMatchObject({ reward: 0, reason: "no_answer" });
    expect(scoreMathAnswer(`${minerva("$18$")} \\boxed{19}`, "18", { readers: FINAL })).toMatchObject({ reward: 0, source: "boxed" });
    expect(scoreMathAnswer(`Final Answer: The final answer is $\\boxed{18}$. I hope it is correct.`, "18")).toMatchObject({ reward: 1, source: "boxed" });
  });

  it("a prose-only run reads the template too (the final-number reader sees `… is $18$.`)", () => {
    expect(scoreMathAnswer(minerva("$18$"), "18", { readers: ["final-number"] })).toMatchObject({ reward: 1, source: "final-number" });
  });
});
