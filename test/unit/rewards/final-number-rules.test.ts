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

describe("which `$` and backslash open inline math (pandoc's rule)", () => {
  it("an escaped `\\$`, a `$` with a space on its right, and a backslash other than `\\(`/`\\[` open nothing", () => {
    expect(extractFinalNumber("Pay \\$18$.")).toBeNull(); // `\$` is a dollar sign: `$18$` after it is no math
    expect(extractFinalNumber("The answer is $ 18$.")).toBeNull();
    expect(extractFinalNumber("The value \\approx 18$.")).toBeNull(); // a stray `$`: no span from the backslash
  });

  it("the closing `$` has a non-space on its left and no digit on its right, and no line break comes between", () => {
    expect(extractFinalNumber("The answer is $18 $.")).toBeNull();
    expect(extractFinalNumber("The answer is $18$5.")).toBeNull();
    expect(extractFinalNumber("The answer is $18\nmore$.")).toBe("$18"); // no span across lines: `$18` is currency
  });

  it("a `$…$` span holds at most 200 characters; a longer one is plain text", () => {
    expect(extractFinalNumber(`The answer is $${"1".repeat(200)}$.`)).toBe("1".repeat(200));
    expect(extractFinalNumber(`The answer is $${"1".repeat(201)}$.`)).toBeNull();
  });

  it("math without a digit is text: a later sentence with only `$x$` does not hide the answer", () => {
    expect(extractFinalNumber("The answer is 18. Here $x$ stands for the eggs.")).toBe("18");
  });

  it("a private-use character in the text is a plain symbol, never taken for marked math", () => {
    expect(extractFinalNumber("The answer is 18. \uE000")).toBe("18");
    expect(extractFinalNumber("The answer is 18. \uE000 and \uF8FF")).toBe("18"); // every one of them
    expect(extractFinalNumber("So $\uE000x$ and the answer is 18.")).toBe("18");
    expect(extractFinalNumber("The answer is 18 \uE000.")).toBeNull(); // an unknown symbol after the number is no unit
  });
});

describe("the order and boundaries of numbers in the sentence", () => {
  it("the last number is the last one written, as math or as prose", () => {
    expect(extractFinalNumber("With $3$ boxes of 6 eggs, the answer is 18.")).toBe("18");
  });

  it("an exponent is `^2` or `^{2}`: the 2 of `cm^{2}` is no number; another braced or bracketed number is one", () => {
    expect(extractFinalNumber("The area is 18 cm^{2}.")).toBe("18");
    expect(extractFinalNumber("From a_{1} we get 18.")).toBeNull(); // two numbers (1 and 18), no stated result
    expect(extractFinalNumber("From x^(2) we get 18.")).toBeNull(); // two numbers (2 and 18), no stated result
  });

  it("a number glued by a comma to a word is not read: `(a,18)` is a pair", () => {
    expect(extractFinalNumber("The point is (a,18).")).toBeNull();
  });

  it("a dotted number (a version `3.12.1`) is no number; a time or a fraction is two numbers", () => {
    expect(extractFinalNumber("Python 3.12.1 prints 18.")).toBe("18");
    expect(extractFinalNumber("The train leaves at 4:30.")).toBeNull();
    expect(extractFinalNumber("She ate 1/2 of the pie.")).toBeNull();
  });

  it("any run of end punctuation may follow the number; a `%` only right after it", () => {
    expect(extractFinalNumber("The answer is 18...")).toBe("18");
    expect(extractFinalNumber("The rate is 18 %.")).toBe("18");
    expect(extractFinalNumber("The answer is 18 km %.")).toBeNull();
  });
});

describe("a stated result among several numbers", () => {
  it("the statement must be affirmative and end right before the number", () => {
    expect(extractFinalNumber("With 3 boxes of 6, the answer wasn't 18.")).toBeNull();
    expect(extractFinalNumber("3 + 4 = 7, and 11 more makes 18.")).toBeNull();
    expect(extractFinalNumber("With 3 boxes, x=y 18.")).toBeNull();
  });
});
