import { describe, expect, it } from "vitest";
import { hashString, hashWords, nextRandom, seedRng } from "../../../src/scheduler/rng.ts";

function draw(state: number, n: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const [u, next] = nextRandom(state);
    out.push(u);
    state = next;
  }
  return out;
}

describe("seeded RNG (mulberry32)", () => {
  it("is a pure function of its state: same seed, same numbers", () => {
    expect(draw(seedRng(42), 20)).toEqual(draw(seedRng(42), 20));
    expect(draw(seedRng(42), 20)).not.toEqual(draw(seedRng(43), 20));
  });

  it("draws in [0, 1) with a plausible mean", () => {
    const xs = draw(seedRng(7), 10_000);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.02);
  });

  it("matches the reference mulberry32 output for state 0", () => {
    // reference: t = a += 0x6D2B79F5; t = imul(t ^ t >>> 15, t | 1); t ^= t + imul(t ^ t >>> 7, t | 61); (t ^ t >>> 14) >>> 0
    let a = 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    expect(nextRandom(0)[0]).toBe(((t ^ (t >>> 14)) >>> 0) / 4294967296);
  });

  it("hashes strings and word lists to stable, order-sensitive 32-bit values", () => {
    expect(hashString("gsm8k")).toBe(hashString("gsm8k"));
    expect(hashString("gsm8k")).not.toBe(hashString("gsm8K"));
    expect(hashWords(1, 2)).not.toBe(hashWords(2, 1));
    expect(Number.isInteger(hashWords(1, 2)) && hashWords(1, 2) >= 0 && hashWords(1, 2) < 2 ** 32).toBe(true);
  });
});
