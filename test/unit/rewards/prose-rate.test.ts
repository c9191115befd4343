/**
 * @module test/unit/rewards/prose-rate — BC-13 in prose: the final-number reader reads a stated value followed by a
 * rate or a unit ("She makes 18 dollars per day.", "$18 per hour", "60 km/h", "18 cm^2"), and still reads nothing
 * when the words after the number relate it to another value.
 */
import { describe, expect, it } from "vitest";
import { type AnswerReader, extractFinalNumber, scoreMathAnswer } from "../../../src/rewards/index.ts";

const PROSE: AnswerReader[] = ["boxed", "hash", "final-number"];
const prose = (text: string, gold: string) => scoreMathAnswer(text, gold, { readers: PROSE });

describe("BC-13 a prose answer with a rate", () => {
  it.each([
    ["She makes 18 dollars per day.", "18"],
    ["She makes $18 per day.", "18"],
    ["She earns 18 dollars a day.", "18"],
    ["He earns $1,250 per month.", "1250"],
    ["The car goes 60 miles per hour.", "60"],
    ["The car goes 60 km/h.", "60"],
    ["The car goes 60 mph!", "60"],
    ["The tank fills at 2.5 liters per minute.", "2.5"],
    ["She saves 18 dollars each week.", "18"],
    ["They read 18 pages every day.", "18"],
    ["The room is 18 square meters.", "18"],
    ["The area is 18 cm^2.", "18"],
    ["The area is 18 m².", "18"],
    ["It accelerates at 9.8 m/s^2.", "9.8"],
    ["She needs 3 cups of flour.", "3"],
    ["The answer is 18 dollars per day.", "18"],
    ["Janet sells 16 - 3 - 4 = 9 eggs, so she makes 9 * 2 = 18 dollars per day.", "18"],
    ["It drops by -4 degrees per hour.", "-4"],
  ])("%s → %s", (text, gold) => {
    expect(prose(text, gold)).toMatchObject({ reward: 1, source: "final-number" });
  });

  it.each([
    ["She makes 18 dollars per day and 20 on Sundays.", "18"],
    ["She makes 18 dollars per 2 days.", "18"],
    ["She makes 18 more dollars per day.", "18"],
    ["She makes 18 dollars per.", "18"],
    ["She makes 18 or 19 dollars per day.", "18"],
    ["She makes 18 dollars more than Bob per day.", "18"],
    ["She makes 184 dollars per day.", "18"],
    ["She makes 18.5 dollars per day.", "18"],
    ["She makes 18 dollars per day, plus tips worth 20.", "18"],
  ])("never a false positive: %s is not %s", (text, gold) => {
    expect(prose(text, gold).reward).toBe(0);
  });

  it("reads the number as written; the normaliser compares it exactly", () => {
    expect(extractFinalNumber("She makes $18 per day.")).toBe("$18");
    expect(extractFinalNumber("She makes 18 dollars per day.")).toBe("18");
    expect(prose("She makes 18 dollars per day.", "18")).toMatchObject({ extracted: "18", normalized: "18" });
  });

  it("the same rates inside a box or after #### (the normaliser's unit phrases)", () => {
    expect(scoreMathAnswer("\\boxed{18 dollars per day}", "18").reward).toBe(1);
    expect(scoreMathAnswer("#### 18 dollars per day", "18", { readers: ["hash"] }).reward).toBe(1);
    expect(scoreMathAnswer("\\boxed{18 dollars per 2 days}", "18").reward).toBe(0);
  });
});

describe("BC-13 longer prose around the rate", () => {
  it("a rate written with a slash, and a plain phrase of up to eight words after the number", () => {
    expect(prose("She makes $18/day.", "18").reward).toBe(1);
    expect(prose("She makes 18 dollars/day.", "18").reward).toBe(1);
    expect(prose("Janet makes $18 every day at the farmers’ market.", "18").reward).toBe(1);
    expect(prose("She makes 18 dollars per day in total.", "18").reward).toBe(1);
    expect(scoreMathAnswer("\\boxed{18/day}", "18").reward).toBe(1);
    expect(scoreMathAnswer("\\boxed{18/20}", "18").reward).toBe(0);
  });

  it("words that compare or join still read nothing, however long the phrase", () => {
    expect(prose("It took 18 minutes longer than she expected it to take.", "18").reward).toBe(0);
    expect(prose("She has 18 apples, but gave away some.", "18").reward).toBe(0);
    expect(prose("Janet makes $18 every day at the market and more on weekends.", "18").reward).toBe(0);
    expect(prose("At first I thought 18 dollars per day, but that is wrong.", "18").reward).toBe(0);
    expect(prose("So 18 is wrong.", "18").reward).toBe(0);
    expect(prose("So 18 isn't right.", "18").reward).toBe(0);
  });
});
