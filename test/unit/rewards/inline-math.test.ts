/**
 * @module test/unit/rewards/inline-math — BC-14's prose reader (`final-number`) reads a value written as inline math
 * (`… is $18$.`, `\(18\)`, `$\frac{1}{2}$`, `$18\text{ cm}^2$`) as one value, tells a currency `$5` from math by
 * pandoc's rule, and still reads nothing when the sentence states two values.
 */
import { describe, expect, it } from "vitest";
import { type AnswerReader, extractFinalNumber, scoreMathAnswer } from "../../../src/rewards/index.ts";

const PROSE: AnswerReader[] = ["boxed", "hash", "final-answer", "final-number"];
const prose = (text: string, gold: string) => scoreMathAnswer(text, gold, { readers: PROSE });

describe("BC-14 inline math in prose", () => {
  it.each([
    ["Adding the two amounts, the total is $18$.", "18"],
    ["So Janet makes $18$ dollars every day.", "18"],
    ["The answer is \\(18\\).", "18"],
    ["The answer is $$18$$", "18"],
    ["The answer is \\[18\\]", "18"],
    ["Half of the pie is left, so the answer is $\\frac{1}{2}$.", "0.5"],
    ["So she needs $\\dfrac{3}{4}$ of a cup.", "0.75"],
    ["The area of the garden is $18\\text{ cm}^2$.", "18"],
    ["It costs $\\$18.00$.", "18"],
    ["The temperature drops to $-3$ degrees.", "-3"],
    ["The population is $1.5 \\times 10^{6}$.", "1500000"],
    ["The total is $1{,}250$.", "1250"],
    ["Therefore $x = 18$.", "18"],
    ["She pays **$18$** in total.", "18"],
    ["So $9 \\times 2 = 18$.", "18"],
    ["Janet has $16 - 3 - 4 = 9$ eggs, so she makes $9 \\cdot 2 = 18$ dollars.", "18"],
  ])("%s → %s", (text, gold) => {
    expect(prose(text, gold)).toMatchObject({ reward: 1, source: "final-number" });
  });

  it("returns the math's content for the normaliser", () => {
    expect(extractFinalNumber("the total is $18$.")).toBe("18");
    expect(extractFinalNumber("the answer is $\\frac{1}{2}$.")).toBe("\\frac{1}{2}");
    expect(extractFinalNumber("The area is $18\\text{ cm}^2$.")).toBe("18\\text{ cm}^2");
  });

  it("a currency sign is not math: `$5 and $6` are two numbers; `costs $18.` is one", () => {
    expect(extractFinalNumber("She paid $5 and got $6 back.")).toBeNull();
    expect(extractFinalNumber("It costs $18.")).toBe("$18");
    expect(prose("She spends $5 on eggs, so she keeps $13.", "13")).toMatchObject({ reward: 0, reason: "no_answer" });
  });

  it.each([
    ["The answer is $18$ or $19$.", "18"],
    ["It is between $18$ and $19$.", "18"],
    ["So the answer is $18.5$.", "18"],
    ["So the answer is $184$.", "18"],
    ["She has $18$ more than Bob.", "18"],
    ["The answer is $18x$.", "18"],
    ["The answer is $x^{18}$.", "18"],
    ["We get $18$, and then $20$ remain.", "18"],
  ])("never a false positive: %s is not %s", (text, gold) => {
    expect(prose(text, gold).reward).toBe(0);
  });

  it("an exponent is no number of its own: `18 cm^2` is 18, and `x^2` gives nothing", () => {
    expect(extractFinalNumber("The area is 18 cm^2.")).toBe("18");
    expect(extractFinalNumber("It grows like x^2.")).toBeNull();
  });

  it("needs the prose reader: box and #### readers read no inline math", () => {
    expect(scoreMathAnswer("the total is $18$.", "18", { readers: ["boxed", "hash"] })).toMatchObject({ reward: 0, reason: "no_answer" });
  });

  it("bounded: a long run of `$` and unclosed math reads in linear time and gives nothing", () => {
    const noisy = "$".repeat(50_000) + " the value is $" + "1".repeat(300);
    expect(prose(noisy, "18")).toMatchObject({ reward: 0 });
    expect(extractFinalNumber("$".repeat(3000))).toBeNull();
  });
});
