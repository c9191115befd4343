/** @module test/unit/rewards/math — field cases BC-01 … BC-16 for the math answer reward. */
import { describe, expect, it } from "vitest";
import {
  extractLastBoxed,
  finalAssistantText,
  lastBoxedSpan,
  parseGsm8kGold,
  scoreMathAnswer,
  stripBox,
} from "../../../src/rewards/index.ts";

const score = (text: string, gold: string, fallbacks?: ("hash" | "final-answer")[]) =>
  scoreMathAnswer(text, gold, fallbacks ? { fallbacks } : {});

describe("math reward: field cases", () => {
  it("BC-01 keeps nested braces inside \\boxed{} and evaluates 2^{10} exactly", () => {
    const fraction = score("…so the probability is \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}");
    expect(fraction).toMatchObject({ reward: 1, reason: "correct", extracted: "\\frac{1}{2}", normalized: "0.5" });
    // Documented policy: simple integer powers are evaluated exactly, so 2^{10} equals 1024.
    const power = score("\\boxed{2^{10}}", "1024");
    expect(power).toMatchObject({ reward: 1, reason: "correct", extracted: "2^{10}", normalized: "1024" });
    expect(score("\\boxed{2^{10}}", "1000")).toMatchObject({ reward: 0, reason: "wrong" });
  });

  it("BC-03 unbalanced box is no answer; \\boxed 5 and \\fbox{7} are read; extract and strip agree", () => {
    expect(score("…therefore \\boxed{12", "12")).toMatchObject({ reward: 0, reason: "no_answer", extracted: null });
    expect(score("answer: \\boxed 5$", "5")).toMatchObject({ reward: 1, extracted: "5" });
    expect(score("answer: \\fbox{7}", "7")).toMatchObject({ reward: 1, extracted: "7" });
    for (const text of ["answer: \\boxed 5$", "answer: \\fbox{7}", "x \\boxed{\\frac{1}{2}} y", "\\boxed {3}."]) {
      const span = lastBoxedSpan(text);
      expect(span).not.toBeNull();
      expect(stripBox(span!)).toBe(extractLastBoxed(text));
    }
    expect(lastBoxedSpan("…therefore \\boxed{12")).toBeNull();
    expect(stripBox("\\boxed{12")).toBeNull();
  });

  it("BC-04 scores only the final assistant message; a template's \\boxed{} gives nothing", () => {
    const conversation = [
      { role: "system", content: "Put your final answer within \\boxed{}. Example: \\boxed{7}" },
      { role: "user", content: "What is 3 + 4?" },
      { role: "assistant", content: "The answer is 7." },
    ];
    const joined = conversation.map((m) => m.content).join("\n");
    expect(score(joined, "7").reward).toBe(1); // the fault: the prompt's example box gives credit
    expect(score(finalAssistantText(conversation), "7")).toMatchObject({ reward: 0, reason: "no_answer" });
    expect(score("Sure: \\boxed{}", "7")).toMatchObject({ reward: 0, reason: "no_answer" });
  });

  it("BC-05 uses a strict decimal grammar: empty is not 0, 1,000 is 1000, hex is refused", () => {
    expect(score("\\boxed{}", parseGsm8kGold("#### 0")!)).toMatchObject({ reward: 0, reason: "no_answer" });
    expect(score("\\boxed{1,000}", "1000")).toMatchObject({ reward: 1, normalized: "1000" });
    expect(score("\\boxed{1,000}", "1")).toMatchObject({ reward: 0, reason: "wrong" });
    expect(score("\\boxed{0x1A}", "26")).toMatchObject({ reward: 0, reason: "unparseable" });
    expect(score("\\boxed{ }", "0")).toMatchObject({ reward: 0, reason: "no_answer" });
    expect(score("\\boxed{1,00}", "100")).toMatchObject({ reward: 0, reason: "unparseable" });
  });

  it("BC-07 trailing period, trailing zeros and currency normalise; 8.5 is not rounded to 9", () => {
    expect(parseGsm8kGold("#### 18.")).toBe("18");
    expect(parseGsm8kGold("#### $18")).toBe("18");
    expect(score("#### 18.", "18", ["hash"]).reward).toBe(1);
    expect(score("#### $18", "18", ["hash"]).reward).toBe(1);
    expect(score("\\boxed{\\$29.00}", "29")).toMatchObject({ reward: 1, normalized: "29" });
    expect(score("\\boxed{8.5}", "9")).toMatchObject({ reward: 0, reason: "wrong" });
  });

  it("BC-08 keeps signs; U+2212 is a minus", () => {
    const gold = parseGsm8kGold("#### -3")!;
    expect(gold).toBe("-3");
    expect(score("\\boxed{-3}", gold).reward).toBe(1);
    expect(score("\\boxed{3}", gold).reward).toBe(0);
    expect(score("\\boxed{-3.0}", gold).reward).toBe(1);
    expect(score("\\boxed{+7}", "7").reward).toBe(1);
    expect(score("\\boxed{\u22123}", gold).reward).toBe(1);
  });

  it("BC-10 reads the GSM8K gold after the last ####, and the box answer with commas matches it", () => {
    const answer = "Cost 80,000+50,000=$<<80000+50000=130000>>130,000\nProfit …\n#### 70000";
    const gold = parseGsm8kGold(answer);
    expect(gold).toBe("70000");
    expect(score("… \\boxed{70,000}", gold!)).toMatchObject({ reward: 1, extracted: "70,000", normalized: "70000" });
    expect(parseGsm8kGold("The answer is 5 with no marker")).toBeNull();
    expect(parseGsm8kGold("#### ")).toBeNull();
    expect(() => scoreMathAnswer("\\boxed{5}", " $ ")).toThrow(RangeError);
  });

  it("BC-12 strips \\text{}, \\textbf{} and the parentheses of a choice letter", () => {
    expect(score("\\boxed{\\text{13}}", "13").reward).toBe(1);
    expect(score("\\boxed{\\text{(B)}}", "B")).toMatchObject({ reward: 1, extracted: "\\text{(B)}", normalized: "B" });
    expect(score("\\boxed{\\textbf{B}}", "B").reward).toBe(1);
    expect(score("\\boxed{\\mathrm{(C)}}", "B")).toMatchObject({ reward: 0, reason: "wrong" });
  });

  it("BC-13 strips a trailing percent or unit word without rescaling", () => {
    const gold = parseGsm8kGold("#### 28")!;
    expect(score("\\boxed{28\\%}", gold).reward).toBe(1);
    expect(score("\\boxed{28 percent}", gold).reward).toBe(1);
    expect(score("\\boxed{0.28}", gold)).toMatchObject({ reward: 0, reason: "wrong" });
    expect(score("\\boxed{28 \\text{ dollars}}", gold).reward).toBe(1);
    expect(score("\\boxed{28 and 30}", gold).reward).toBe(0); // joining words are not units
  });

  it("BC-14 box-only by default; the opt-in Final Answer fallback strips markdown and never reads the reasoning", () => {
    const text = "Adding: 437 + 468 = 905, then 905 - 671 = 234 …\nFinal Answer: **73**";
    expect(score(text, "73")).toMatchObject({ reward: 0, reason: "no_answer" });
    const withFallback = score(text, "73", ["final-answer"]);
    expect(withFallback).toMatchObject({ reward: 1, extracted: "73", source: "final-answer" });
    expect(score("437 + 468 = 905\n**Final Answer**: __73__", "73", ["final-answer"]).reward).toBe(1);
    expect(score("Final Answer:\n**73**", "73", ["final-answer"]).reward).toBe(1);
    expect(score("437 + 468 = 905\nso 234", "234", ["final-answer"])).toMatchObject({ reason: "no_answer" });
    // a box still wins over the fallback
    expect(score("Final Answer: 73 \\boxed{74}", "73", ["final-answer"])).toMatchObject({ reward: 0, source: "boxed" });
  });

  it("BC-16 a 120 KB degenerate \\frac{ output is too_long with reward 0, and the normal ones still score", () => {
    const degenerate = "\\boxed{" + "\\frac{".repeat(20_000);
    expect(degenerate.length).toBeGreaterThan(120_000);
    expect(score(degenerate, "42")).toMatchObject({ reward: 0, reason: "too_long", extracted: null });
    // without any box marker the same text is simply "no answer"
    expect(score("\\frac{".repeat(20_000), "42")).toMatchObject({ reward: 0, reason: "no_answer" });
    // a long but normal output keeps its last box (BC-52: the bounded window around the last marker never cuts the answer of a long output)
    expect(score("reasoning ".repeat(50_000) + "\\boxed{42}", "42").reward).toBe(1);
    expect(score("x".repeat(1_000_001) + "\\boxed{42}", "42")).toMatchObject({ reward: 0, reason: "too_long" });
    const batch = Array.from({ length: 63 }, () => score("work … \\boxed{42}", "42").reward);
    expect(batch.every((r) => r === 1)).toBe(true);
  });
});

describe("math reward: extraction details", () => {
  it("takes the LAST box, including when it is truncated", () => {
    expect(score("\\boxed{3} then \\boxed{4}", "4").reward).toBe(1);
    expect(score("\\boxed{4} then \\boxed{5", "4")).toMatchObject({ reason: "no_answer" });
    expect(score("\\fbox{9} and \\boxed{8}", "8").reward).toBe(1);
  });

  it("honours escaped braces and ignores longer command names", () => {
    expect(extractLastBoxed("\\boxed{\\{1,2\\}}")).toBe("\\{1,2\\}");
    expect(extractLastBoxed("\\boxed{5} \\boxedtext{6}")).toBe("5");
  });

  it("normalises x = 5, degrees, $ delimiters and \\dfrac", () => {
    expect(score("\\boxed{x = 5}", "5").reward).toBe(1);
    expect(score("\\boxed{90^\\circ}", "90").reward).toBe(1);
    expect(score("$\\boxed{\\dfrac{3}{4}}$", "0.75").reward).toBe(1);
    expect(score("\\boxed{\\frac{1}{3}}", "1/3")).toMatchObject({ reward: 1, normalized: "1/3" });
  });
});
