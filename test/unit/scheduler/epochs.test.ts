import { describe, expect, it } from "vitest";
import { isExhausted, permutationKey, permuteIndex, takeTask, type SourceCursor } from "../../../src/scheduler/epochs.ts";

const pass = (n: number, key: number) => Array.from({ length: n }, (_, p) => permuteIndex(p, n, key));
const identity = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("seeded per-epoch permutation", () => {
  it("is a bijection on [0, n) for small, odd, power-of-two and large n", () => {
    for (const n of [1, 2, 3, 7, 64, 1000, 4097, 7473]) {
      const p = pass(n, permutationKey(42, "gsm8k", 0));
      expect([...p].sort((a, b) => a - b)).toEqual(identity(n));
    }
  });

  it("is deterministic for a seed, and different per epoch, per seed and per source", () => {
    const n = 500;
    const base = pass(n, permutationKey(42, "gsm8k", 0));
    expect(pass(n, permutationKey(42, "gsm8k", 0))).toEqual(base);
    expect(pass(n, permutationKey(42, "gsm8k", 1))).not.toEqual(base);
    expect(pass(n, permutationKey(43, "gsm8k", 0))).not.toEqual(base);
    expect(pass(n, permutationKey(42, "math", 0))).not.toEqual(base);
    expect(base).not.toEqual(identity(n)); // actually shuffled
  });

  it("spreads the first positions over the whole range (not a near-identity walk)", () => {
    const n = 10_000;
    const firstHundred = Array.from({ length: 100 }, (_, p) => permuteIndex(p, n, permutationKey(1, "s", 0)));
    expect(firstHundred.filter((i) => i >= n / 2).length).toBeGreaterThan(30);
    expect(firstHundred.filter((i) => i < n / 2).length).toBeGreaterThan(30);
  });

  it("rejects positions and sizes out of range", () => {
    expect(() => permuteIndex(5, 5, 1)).toThrow(RangeError);
    expect(() => permuteIndex(0, 0, 1)).toThrow(RangeError);
  });
});

describe("source cursor", () => {
  it("serves every task once per epoch, in that epoch's order, then reports exhaustion", () => {
    const n = 5;
    let cursor: SourceCursor = { epoch: 0, position: 0 };
    const served: { taskIndex: number; epoch: number }[] = [];
    for (;;) {
      const taken = takeTask(cursor, n, 2, 9, "src");
      if (!taken) break;
      served.push(taken.task);
      cursor = taken.cursor;
    }
    expect(served).toHaveLength(10);
    expect(cursor).toEqual({ epoch: 2, position: 0 });
    expect(isExhausted(cursor, 2)).toBe(true);
    for (const epoch of [0, 1]) {
      const order = served.filter((t) => t.epoch === epoch).map((t) => t.taskIndex);
      expect(order).toEqual(pass(n, permutationKey(9, "src", epoch)));
    }
  });
});
