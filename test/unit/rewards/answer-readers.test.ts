/**
 * @module test/unit/rewards/answer-readers — the answer readers a run chooses: the box, GSM8K's `#### N` (BC-10),
 * and the opt-in final-number reader for prose answers, which never scores a near miss as the gold.
 */
import { describe, expect, it } from "vitest";
import { extractFinalNumber, scoreMathAnswer, type AnswerReader } from "../../../src/rewards/index.ts";

const score = (text: string, gold: string, readers: AnswerReader[]) => scoreMathAnswer(text, gold, { readers });
const GSM8K: AnswerReader[] = ["boxed", "hash"];
const PROSE: AnswerReader[] = ["boxed", "hash", "final-number"];

describe("readers: box and #### N", () => {
  it("BC-10 with boxed + hash, `#### 18` scores like `\\boxed{18}`, and a box still wins over a ####", () => {
    expect(score("She sells 9 × 2 eggs.\n#### 18", "18", GSM8K)).toMatchObject({ reward: 1, source: "hash", extracted: "18" });
    expect(score("so \\boxed{18}", "18", GSM8K)).toMatchObject({ reward: 1, source: "boxed" });
    expect(score("#### 19\nso \\boxed{18}", "18", GSM8K)).toMatchObject({ reward: 1, source: "boxed" });
  });

  it("BC-10 near misses under #### score 0: `#### 19`, `#### 18.5`, `#### 18 or 19`", () => {
    expect(score("#### 19", "18", GSM8K)).toMatchObject({ reward: 0, reason: "wrong" });
    expect(score("#### 18.5", "18", GSM8K)).toMatchObject({ reward: 0, reason: "wrong", normalized: "18.5" });
    expect(score("#### 18 or 19", "18", GSM8K).reward).toBe(0);
  });

  it("box only (the default) gives no answer for `#### 18`; without `boxed` a box is not read", () => {
    expect(score("#### 18", "18", ["boxed"])).toMatchObject({ reward: 0, reason: "no_answer" });
    expect(scoreMathAnswer("#### 18", "18")).toMatchObject({ reward: 0, reason: "no_answer" });
    expect(score("\\boxed{18}", "18", ["hash"])).toMatchObject({ reward: 0, reason: "no_answer" });
  });
});

describe("the final-number reader", () => {
  it.each([
    ["The answer is 18.", "18"],
    ["Janet has 16 - 3 - 4 = 9 eggs, and 9 * 2 = 18.", "18"],
    ["So she makes $18 every day.\n\nHope this helps!", "$18"],
    ["The total is **18** dollars.", "18"],
    ["Answer: 1,000", "1,000"],
    ["The answer is -3.", "-3"],
    ["I get 18, which is the answer.", null],
    ["Version 3.18.2 is out", null],
    ["It costs 18%.", "18"],
  ])("reads %j as %j", (text, expected) => {
    expect(extractFinalNumber(text)).toBe(expected);
  });

  it("prose answers score 1 with final-number enabled, and 0 without it", () => {
    expect(score("Adding them up, the answer is 18.", "18", PROSE)).toMatchObject({ reward: 1, source: "final-number" });
    expect(score("So she makes $18 every day.", "18", PROSE)).toMatchObject({ reward: 1, normalized: "18" });
    expect(score("Adding them up, the answer is 18.", "18", GSM8K)).toMatchObject({ reward: 0, reason: "no_answer" });
  });

  it.each([
    ["#### 19", "wrong"],
    ["The answer is 18.5.", "wrong"],
    ["The answer is 18 or 19.", "no_answer"],
    ["It is between 18 and 19.", "no_answer"],
    ["There are 18 or more.", "no_answer"],
    ["After 3 days she has 18 left over.", "no_answer"],
    ["The answer is 184.", "wrong"],
    ["The answer is x18.", "no_answer"],
    ["She has 18 more than Bob.", "no_answer"],
    ["18 out of 20 were sold.", "no_answer"],
  ])("a near miss never scores as 18: %j → %s", (text, reason) => {
    const s = score(text, "18", ["final-number"]);
    expect(s.reward).toBe(0);
    expect(s.reason).toBe(reason);
  });

  it("a #### or Final Answer marker wins over the prose reader; a long reasoning keeps only its tail", () => {
    expect(score("The answer is 18.\n#### 19", "18", PROSE)).toMatchObject({ reward: 0, source: "hash" });
    expect(score("The total is 18.\nFinal Answer: 19", "18", ["final-answer", "final-number"])).toMatchObject({ reward: 0, source: "final-answer" });
    expect(score("the answer is 18. ".repeat(10) + "x".repeat(5000), "18", ["final-number"])).toMatchObject({ reason: "no_answer" });
  });
});
