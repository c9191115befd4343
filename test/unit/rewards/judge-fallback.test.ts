/** @module test/unit/rewards/judge-fallback — the demo fallback's text-overlap scores: values, bounds, edge cases. */
import { describe, expect, it } from "vitest";
import { charBigramF1, normalizeTerm, scriptShare, termListScore, termsFoundInSource } from "../../../src/rewards/judge-fallback.ts";

describe("charBigramF1", () => {
  it("is 1 for the same text (whitespace ignored), 0 for disjoint or empty texts", () => {
    expect(charBigramF1("大堡礁的珊瑚", "大堡礁 的 珊瑚")).toBe(1);
    expect(charBigramF1("你好", "再见")).toBe(0);
    expect(charBigramF1("", "再见")).toBe(0);
    expect(charBigramF1("57", "")).toBe(0);
  });

  it("gives partial credit by shared bigrams: 分析机 vs 分析器 share one of two", () => {
    // bigrams: {分析, 析机} vs {分析, 析器} → precision 1/2, recall 1/2 → F1 0.5
    expect(charBigramF1("分析机", "分析器")).toBe(0.5);
    expect(charBigramF1("a", "a")).toBe(1); // single characters compare as unigrams
  });
});

describe("scriptShare", () => {
  it("counts Han letters among all letters; digits and punctuation do not count", () => {
    expect(scriptShare("大堡礁 2016，GPU")).toBe(3 / 6);
    expect(scriptShare("123 !?")).toBe(0);
    expect(scriptShare("珊瑚白化。")).toBe(1);
  });
});

describe("term lists", () => {
  const reference = [
    { term: "Great Barrier Reef", rendering: "大堡礁" },
    { term: "Sentinel-2", rendering: "哨兵二号" },
  ];

  it("termListScore: half term F1, half exact renderings", () => {
    expect(termListScore(reference, reference)).toBe(1);
    expect(termListScore([{ term: "great  barrier reef", rendering: "大 堡礁" }], reference)).toBeCloseTo(0.5 * (2 / 3) + 0.5 * 0.5);
    expect(termListScore([{ term: "Sentinel-2", rendering: "哨兵2号" }, { term: "invented" }], reference)).toBeCloseTo(0.25);
    expect(termListScore([], reference)).toBe(0);
    expect(termListScore(reference, [])).toBe(0);
  });

  it("termsFoundInSource: the share of listed terms the source contains", () => {
    const source = "We map the Great Barrier Reef with Sentinel-2 data.";
    expect(termsFoundInSource([{ term: "great barrier reef" }, { term: "Landsat" }], source)).toBe(0.5);
    expect(termsFoundInSource([], source)).toBe(0);
    expect(normalizeTerm("  Ｓentinel\t2 ")).toBe("sentinel 2");
  });
});
