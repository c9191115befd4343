/**
 * @module test/unit/rewards/reader-rules — rules of the answer readers that the example tests left open (found by
 * mutation testing, issue 24), stated through the public API of src/rewards: which message is scored, where a
 * marker's answer ends, the size limits at their exact boundary, exact numbers with negative denominators, and the
 * Countdown tag and multiset rules.
 */
import { describe, expect, it } from "vitest";
import {
  extractHashAnswer, extractLastAnswerTag, extractLastBoxed, findLastBox, finalAssistantText, lastBoxedSpan, matchBrace, stripBox, formatRational, messageText, parseGsm8kGold, parseNumericAnswer, parseStrictDecimal,
  sameMultiset, scoreCountdown, scoreMathAnswer,
} from "../../../src/rewards/index.ts";

describe("BC-04 the text scored is the last assistant message's", () => {
  it("the last assistant message wins over earlier ones and over the user's and tools' after it; none → empty", () => {
    const conversation = [
      { role: "system", content: "Answer in \\boxed{}" },
      { role: "assistant", content: "first try \\boxed{1}" },
      { role: "user", content: "again" },
      { role: "assistant", content: "\\boxed{2}" },
      { role: "tool", content: "\\boxed{3}" },
    ];
    expect(finalAssistantText(conversation)).toBe("\\boxed{2}");
    expect(finalAssistantText([{ role: "assistant", content: "only" }])).toBe("only");
    expect(finalAssistantText([{ role: "user", content: "\\boxed{9}" }])).toBe("");
    expect(finalAssistantText([])).toBe("");
  });

  it("content parts are joined from their text fields (strings kept, other parts and non-text values skipped); null is empty", () => {
    expect(messageText([{ type: "text", text: "a" }, "b", { type: "image_url", image_url: { url: "x" } }, null, { text: 7 }, { type: "text", text: "c" }])).toBe("abc");
    expect(messageText(null)).toBe("");
    expect(messageText(42)).toBe("");
    expect(messageText({ text: "not a list" })).toBe("");
  });
});

describe("markers: where the answer starts and ends", () => {
  it("BC-10 `####` reads to the end of its line, from the last marker; a marker on the first line still ends at its newline", () => {
    expect(extractHashAnswer("#### 18\nmore text")).toBe("18");
    expect(extractHashAnswer("x\n#### 5\n#### 18\nthanks")).toBe("18");
    expect(extractHashAnswer("no marker")).toBeNull();
    expect(extractHashAnswer("####123456", 3)).toBe("123"); // at most maxChars after the marker
    expect(parseGsm8kGold("#### 18\n")).toBe("18");
  });

  it("BC-14 Final Answer: the marker may be spaced, bold, or followed by `is:`; only the line after it is read", () => {
    const fa = (text: string, gold: string) => scoreMathAnswer(text, gold, { readers: ["final-answer"] });
    expect(fa("Final   Answer: 73", "73")).toMatchObject({ reward: 1, extracted: "73" });
    expect(fa("Final Answer is: 73", "73")).toMatchObject({ reward: 1, extracted: "73" });
    expect(fa("Final Answer:   **73** \nbecause 74 was wrong", "73")).toMatchObject({ reward: 1, extracted: "73" });
    expect(fa("Final Answer: __73__", "73")).toMatchObject({ reward: 1 });
    expect(fa("Final Answer: 3: 4", "3: 4")).toMatchObject({ extracted: "3: 4" }); // only a leading colon is the marker's
    expect(fa("Final Answer\n\n73", "73")).toMatchObject({ reward: 0, reason: "no_answer" }); // the line after, not further
    expect(fa("so the Final Answer:", "73")).toMatchObject({ reward: 0, reason: "no_answer" }); // nothing after it
  });

  it("BC-16 Final Answer is read only in the message's last 4,000 characters, and its position counts in the whole message", () => {
    const early = `Final Answer: 19\n${"x".repeat(5000)}`;
    expect(scoreMathAnswer(early, "19", { readers: ["final-answer"] })).toMatchObject({ reason: "no_answer" });
    const padded = `${"y".repeat(5000)}\n#### 18\nFinal Answer: 19`;
    expect(scoreMathAnswer(padded, "19", { readers: ["hash", "final-answer"] })).toMatchObject({ reward: 1, source: "final-answer" });
    const hashLast = `${"y".repeat(5000)}\nFinal Answer: 19\n#### 18`;
    expect(scoreMathAnswer(hashLast, "18", { readers: ["hash", "final-answer"] })).toMatchObject({ reward: 1, source: "hash" });
  });
});

describe("BC-16 size limits hold at their exact boundary", () => {
  it("a message of exactly maxInputChars is scored; one more character is too_long", () => {
    const text = "\\boxed{7}";
    expect(scoreMathAnswer(text, "7", { maxInputChars: text.length })).toMatchObject({ reward: 1 });
    expect(scoreMathAnswer(text, "7", { maxInputChars: text.length - 1 })).toMatchObject({ reward: 0, reason: "too_long" });
    const tag = "<answer>1+2</answer>";
    expect(scoreCountdown(tag, 3, [1, 2], { maxInputChars: tag.length })).toMatchObject({ reward: 1 });
    expect(scoreCountdown(tag, 3, [1, 2], { maxInputChars: tag.length - 1 })).toMatchObject({ reward: 0, reason: "too_long" });
  });

  it("an answer after a marker of exactly maxAnswerChars is read; one more is too_long (for #### and Final Answer alike)", () => {
    for (const readers of [["hash"], ["final-answer"]] as const) {
      const mark = readers[0] === "hash" ? "####" : "Final Answer: ";
      expect(scoreMathAnswer(`${mark}12345`, "12345", { readers: [...readers], maxAnswerChars: 5 })).toMatchObject({ reward: 1 });
      expect(scoreMathAnswer(`${mark}123456`, "123456", { readers: [...readers], maxAnswerChars: 5 })).toMatchObject({ reward: 0, reason: "too_long" });
    }
  });

  it("a number of 400 characters is read exactly; a longer one is not a number", () => {
    const n400 = "1".repeat(400);
    expect(parseNumericAnswer(n400)).not.toBeNull();
    expect(parseNumericAnswer(`${n400}1`)).toBeNull();
    expect(parseStrictDecimal(`${n400}1`)).toBeNull();
    expect(parseNumericAnswer(`${"1".repeat(199)}/${"1".repeat(201)}`)).toBeNull(); // 401 characters
    expect(parseNumericAnswer(`${"1".repeat(198)}/${"1".repeat(201)}`)).not.toBeNull(); // 400
  });
});

describe("exact numbers", () => {
  it("a fraction with a negative denominator is the negative number, its denominator kept positive", () => {
    const r = parseNumericAnswer("1/-2")!;
    expect(r.den > 0n).toBe(true);
    expect(formatRational(r)).toBe("-0.5");
    expect(formatRational(parseNumericAnswer("\\frac{-3}{-4}")!)).toBe("0.75");
    expect(scoreMathAnswer("\\boxed{\\frac{1}{-2}}", "-0.5")).toMatchObject({ reward: 1, normalized: "-0.5" });
    expect(parseNumericAnswer("1/0")).toBeNull();
    expect(formatRational(parseNumericAnswer("0.5/0.25")!)).toBe("2"); // decimal parts divide exactly
    expect(scoreMathAnswer("\\boxed{\\frac{0.5}{0.25}}", "2")).toMatchObject({ reward: 1 });
  });

  it("only a sign at the start is a sign; a fraction needs both parts to be numbers; powers up to 64", () => {
    expect(parseNumericAnswer("1-2")).toBeNull();
    expect(parseNumericAnswer("x/2")).toBeNull();
    expect(parseNumericAnswer("2/x")).toBeNull();
    expect(formatRational(parseNumericAnswer("2^{64}")!)).toBe((2n ** 64n).toString());
    expect(parseNumericAnswer("2^{65}")).toBeNull();
    expect(formatRational(parseNumericAnswer("-.5")!)).toBe("-0.5");
    expect(formatRational(parseNumericAnswer(".5")!)).toBe("0.5");
  });

  it("a terminating fraction is shown as its exact decimal, negatives included; others as n/d in lowest terms", () => {
    expect(formatRational({ num: 7n, den: 40n })).toBe("0.175"); // 2^3·5: three places
    expect(formatRational({ num: 1n, den: 25n })).toBe("0.04"); // 5^2: two places
    expect(formatRational({ num: 3n, den: 60n })).toBe("0.05"); // reduced first (1/20)
    expect(formatRational({ num: -7n, den: 40n })).toBe("-0.175");
    expect(formatRational({ num: -1n, den: 3n })).toBe("-1/3");
    expect(formatRational({ num: 6n, den: 9n })).toBe("2/3");
    expect(formatRational({ num: -30n, den: 10n })).toBe("-3");
    expect(formatRational({ num: 0n, den: 5n })).toBe("0");
  });
});

describe("Countdown: the last closed answer tag, exactly the given numbers", () => {
  it("BC-17 reads the last <answer> tag; an unclosed last tag is no answer, a tag closed at position 0 of the rest still counts", () => {
    expect(extractLastAnswerTag("<answer>1+2</answer> then <answer> 3*4 </answer>")).toBe("3*4");
    expect(extractLastAnswerTag("<answer>1+2</answer> then <answer>3*4")).toBeNull();
    expect(extractLastAnswerTag("</answer><answer></answer>")).toBe("");
    expect(extractLastAnswerTag("no tag")).toBeNull();
    expect(extractLastAnswerTag("1+2</answer>")).toBeNull(); // a closing tag alone is no answer
    expect(scoreCountdown("<answer></answer>", 3, [1, 2])).toMatchObject({ reward: 0, reason: "no_answer" });
  });

  it("BC-17 numbers compare as multisets: order free, multiplicity exact", () => {
    expect(sameMultiset([3, 1, 2], [1, 2, 3])).toBe(true);
    expect(sameMultiset([1, 1, 2], [1, 2, 2])).toBe(false);
    expect(sameMultiset([1, 2], [1, 2, 2])).toBe(false);
    expect(sameMultiset([5, 1], [1, 6])).toBe(false);
  });

  it("a wrong equation earns the format score with its reason and detail; within 1e-5 is the target, 1e-5 away is not", () => {
    expect(scoreCountdown("<answer>1+2</answer>", 3, [1, 3])).toMatchObject({ reward: 0.1, reason: "wrong_numbers", detail: "used [1,2], given [1,3]" });
    expect(scoreCountdown("<answer>1+2</answer>", 4, [1, 2])).toMatchObject({ reward: 0.1, reason: "wrong_result", value: 3, isSuccess: false });
    expect(scoreCountdown("<answer>1/3</answer>", 0.333334, [1, 3], { tolerance: 1e-5 })).toMatchObject({ reward: 1 });
    expect(scoreCountdown("<answer>1+2</answer>", 3.00001, [1, 2], { tolerance: 1e-5 })).toMatchObject({ reason: "wrong_result" });
    expect(scoreCountdown("<answer>1+</answer>", 3, [1, 2])).toMatchObject({ reward: 0.1, isSuccess: false, equation: "1+" });
    expect(() => scoreCountdown("<answer>1</answer>", 1, [1, Number.NaN])).toThrow(/finite target and finite nums, got 1 \/ \[1,NaN\]/);
    expect(() => scoreCountdown("<answer>1</answer>", Number.POSITIVE_INFINITY, [1])).toThrow(RangeError);
  });

  it("an equation longer than maxEquationChars (default 1,000) is refused, not evaluated", () => {
    const long = Array.from({ length: 400 }, () => "1").join("+"); // 799 characters
    expect(scoreCountdown(`<answer>${long}</answer>`, 400, Array.from({ length: 400 }, () => 1))).toMatchObject({ reward: 1 });
    expect(scoreCountdown(`<answer>${long}</answer>`, 400, Array.from({ length: 400 }, () => 1), { maxEquationChars: 100 })).toMatchObject({ isSuccess: false });
    const longer = Array.from({ length: 501 }, () => "1").join("+"); // 1,001 characters
    expect(scoreCountdown(`<answer>${longer}</answer>`, 501, Array.from({ length: 501 }, () => 1))).toMatchObject({ isSuccess: false });
  });
});

describe("BC-10 the gold's own errors", () => {
  it("an empty gold is a data error that names the gold and the fix; a gold that normalises to text compares as text", () => {
    expect(() => scoreMathAnswer("\\boxed{1}", "  ")).toThrow(/gold answer " {2}" is empty after normalisation; give the task a non-empty metadata\.gold/);
    expect(scoreMathAnswer("\\boxed{B}", "B")).toMatchObject({ reward: 1, isSuccess: true });
    expect(scoreMathAnswer("nothing here", "B")).toMatchObject({ reward: 0, isSuccess: false, reason: "no_answer" });
    expect(scoreMathAnswer("\\boxed{\\text{}}", "B")).toMatchObject({ reward: 0, isSuccess: false, reason: "no_answer", extracted: "\\text{}" });
  });
});

describe("BC-01/BC-03 what a box is", () => {
  it("a marker followed by a letter is another command (either case); spaces, tabs and newlines may stand before the brace", () => {
    for (const other of ["\\boxedx{1}", "\\boxedZ{1}", "\\boxeda{1}", "\\boxedA{1}", "\\boxedz{1}"]) expect(extractLastBoxed(other)).toBeNull();
    for (const ws of [" ", "\t", "\n", "\r\n", "  \t"]) expect(extractLastBoxed(`\\boxed${ws}{18}`)).toBe("18");
    expect(extractLastBoxed("\\boxed5")).toBeNull(); // `\boxed5`: not a box
    expect(extractLastBoxed("\\boxed 5$ and")).toBe("5"); // a brace-less token ends at `$` or whitespace
    expect(extractLastBoxed("x \\boxed")).toBeNull();
    expect(extractLastBoxed("x \\boxed   ")).toBeNull();
  });

  it("braces nest and escaped braces do not count; an unclosed last box is no answer, never the earlier complete one", () => {
    expect(extractLastBoxed("\\boxed{\\frac{1}{2}}")).toBe("\\frac{1}{2}");
    expect(extractLastBoxed("\\boxed{a\\}b}")).toBe("a\\}b");
    expect(findLastBox("\\boxed{1} then \\boxed{2")).toMatchObject({ kind: "unbalanced", start: 15 });
    expect(scoreMathAnswer("\\boxed{18} so \\boxed{18", "18")).toMatchObject({ reward: 0, reason: "no_answer" });
  });

  it("the box that starts last wins across markers (\\fbox after \\boxed, and the other way)", () => {
    expect(extractLastBoxed("\\boxed{1} then \\fbox{2}")).toBe("2");
    expect(extractLastBoxed("\\fbox{2} then \\boxed{1}")).toBe("1");
    expect(extractLastBoxed("\\boxed{1} then \\boxedtext{2}")).toBe("1"); // a later non-box marker is skipped
    expect(lastBoxedSpan("a \\fbox{7} b")).toBe("\\fbox{7}");
    expect(lastBoxedSpan("a \\fbox{7")).toBeNull();
  });

  it("BC-16 box content of exactly maxContentChars is read, one more is too_long; braced and brace-less alike", () => {
    expect(findLastBox("\\boxed{12345}", 5)).toMatchObject({ kind: "box", content: "12345" });
    expect(findLastBox("\\boxed{123456}", 5)).toMatchObject({ kind: "too_long" });
    expect(findLastBox("\\boxed 12345", 5)).toMatchObject({ kind: "box", content: "12345" });
    expect(findLastBox("\\boxed 123456", 5)).toMatchObject({ kind: "too_long" });
    expect(matchBrace("{abc}", 0, 3)).toBe(4);
    expect(matchBrace("{abcd}", 0, 3)).toBe(-2);
    expect(matchBrace("{ab", 0, 10)).toBe(-1);
  });

  it("stripBox takes exactly one complete box: nothing after it, nothing missing", () => {
    expect(stripBox("\\fbox{7}")).toBe("7");
    expect(stripBox("\\boxed 5")).toBe("5");
    expect(stripBox("\\boxed{7} and more")).toBeNull();
    expect(stripBox("\\boxed{7")).toBeNull();
    expect(stripBox("7")).toBeNull();
  });
});
