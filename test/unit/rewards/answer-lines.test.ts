/**
 * @module test/unit/rewards/answer-lines — where a marked answer is read from: the `####` answer is on the marker's
 * own line (the next line is never read), and a Countdown `</answer>` without an `<answer>` before it is no answer.
 */
import { describe, expect, it } from "vitest";
import { extractHashAnswer, extractLastAnswerTag, parseGsm8kGold, scoreCountdown } from "../../../src/rewards/index.ts";

describe("the #### answer is on the marker's line", () => {
  it("a #### that ends its line has no answer; the next line is not read as one", () => {
    expect(extractHashAnswer("####\n42")).toBe("");
    expect(parseGsm8kGold("so we get\n####\n42")).toBeNull();
    expect(extractHashAnswer("#### 7\n42")).toBe("7");
  });
});

describe("a Countdown answer needs its opening tag", () => {
  it("a closing </answer> without an opening one is no answer, wherever it sits", () => {
    expect(extractLastAnswerTag("I think 1+2+3</answer>")).toBeNull();
    expect(extractLastAnswerTag("</answer> 1+2+3")).toBeNull();
    expect(scoreCountdown("the result is 3 + 4 </answer>", 7, [3, 4])).toMatchObject({ reward: 0, reason: "no_answer" });
  });
});
