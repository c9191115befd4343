/**
 * Rules of the prose "final number" reader (rewards/final-number), one example each, as its module states them:
 * inline math in every delimiter counts as one value; a `$` is currency unless it opens math by pandoc's rule; a
 * number glued to a word, an exponent or a decimal point is no answer; what follows the number may be end
 * punctuation, `%` and a unit; with several numbers only a stated result counts.
 */
import { describe, expect, it } from "vitest";
import { extractFinalNumber } from "../../../src/rewards/final-number.ts";

describe("inline math is one value in every delimiter", () => {
  it.each([
    ["So the answer is $$18$$.", "18"],
    ["So the answer is \\(18\\).", "18"],
    ["So the answer is \\[18\\].", "18"],
    ["So the answer is $18$.", "18"],
    ["The probability is $\\frac{1}{2}$.", "\\frac{1}{2}"],
  ])("%s → %s", (text, answer) => {
    expect(extractFinalNumber(text)).toBe(answer);
  });

  it("an unclosed or overlong span is no math: its text is read as prose", () => {
    expect(extractFinalNumber("So the answer is \\(18.")).toBe("18"); // no closing \\): the number is read in the prose
    expect(extractFinalNumber(`The answer is $$${"1".repeat(200)}$$.`)).toBe("1".repeat(200)); // 200 characters: math
    expect(extractFinalNumber(`The answer is $$${"1".repeat(201)}$$.`)).toBeNull(); // 201: stray `$$` around a number
  });
});

describe("currency and glued numbers", () => {
  it("a $ before a digit with another $ later is currency, not math", () => {
    expect(extractFinalNumber("I paid $5, so the total is $11.")).toBe("$11");
    expect(extractFinalNumber("It costs $5 and $6.")).toBeNull(); // two prices, no stated result
    expect(extractFinalNumber("He paid $29.")).toBe("$29");
  });

  it("a number glued to a word, an exponent or a decimal point is no answer", () => {
    expect(extractFinalNumber("The answer is x18.")).toBeNull();
    expect(extractFinalNumber("The value is 10^{18}.")).toBeNull();
    expect(extractFinalNumber("The value is 18.5.")).toBe("18.5");
    expect(extractFinalNumber("The value is .5.")).toBeNull();
    expect(extractFinalNumber("The version is 1.2.3.")).toBeNull(); // a dotted number is no single value
  });

  it("markdown emphasis around the number is not part of it", () => {
    expect(extractFinalNumber("The answer is _18_.")).toBe("18");
    expect(extractFinalNumber("The answer is **18**.")).toBe("18");
  });
});

describe("what may follow the number", () => {
  it("end punctuation, a percent sign or a unit; never another word that relates it", () => {
    expect(extractFinalNumber("The answer is 18!")).toBe("18");
    expect(extractFinalNumber("The rate is 18%.")).toBe("18");
    expect(extractFinalNumber("She walks 18 km/h.")).toBe("18");
    expect(extractFinalNumber("It is 18 or 19.")).toBeNull();
    expect(extractFinalNumber("It is 18 more than before.")).toBeNull();
  });
});

describe("several numbers in the last sentence", () => {
  it("only a stated result counts: 'answer is', 'result was', 'total:', or '='", () => {
    expect(extractFinalNumber("With 3 boxes of 6, the answer is 18.")).toBe("18");
    expect(extractFinalNumber("With 3 boxes of 6, the Total: 18.")).toBe("18");
    expect(extractFinalNumber("3 × 6 = 18.")).toBe("18");
    expect(extractFinalNumber("With 3 boxes of 6 I get 18.")).toBeNull();
  });

  it("the last sentence with a number decides, whatever came before", () => {
    expect(extractFinalNumber("The answer is 17. Wait, recounting, it is 18.")).toBe("18");
    expect(extractFinalNumber("The answer is 18.\n\nHope this helps!")).toBe("18");
  });
});
