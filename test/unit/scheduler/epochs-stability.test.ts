/**
 * A source's task order is a keyed permutation (scheduler/epochs): a run resumed after a deploy, or replayed from its
 * stored rows, must walk the same order, so the permutation of a given key may not change between versions. Pinned
 * here to the orders today's runs use (the bijection and the epoch walk are stated in epochs.test.ts).
 */
import { describe, expect, it } from "vitest";
import { permutationKey, permuteIndex, takeTask } from "../../../src/scheduler/epochs.ts";

describe("stable task orders", () => {
  it("the order of a source under a run seed and epoch is the one today's runs walk", () => {
    const key = permutationKey(42, "gsm8k", 0);
    expect(key).toBe(1584030566);
    expect(Array.from({ length: 10 }, (_, i) => permuteIndex(i, 10, key))).toEqual([8, 4, 0, 7, 1, 9, 3, 5, 2, 6]);
    expect(Array.from({ length: 7 }, (_, i) => permuteIndex(i, 7, permutationKey(7, "math", 3)))).toEqual([2, 4, 6, 5, 0, 1, 3]);
    expect(permuteIndex(123456, 1000003, key)).toBe(210044); // a large source (cycle walking past n)
  });

  it("takeTask walks that order and moves to the next epoch after the last position", () => {
    let cursor = { epoch: 0, position: 0 };
    const taken: [number, number][] = [];
    for (let i = 0; i < 12; i++) {
      const next = takeTask(cursor, 10, 2, 42, "gsm8k");
      if (!next) break;
      taken.push([next.task.epoch, next.task.taskIndex]);
      cursor = next.cursor;
    }
    expect(taken.slice(0, 10).map(([, t]) => t)).toEqual([8, 4, 0, 7, 1, 9, 3, 5, 2, 6]);
    expect(taken.slice(10).map(([e]) => e)).toEqual([1, 1]);
    expect(cursor).toEqual({ epoch: 1, position: 2 });
  });
});

describe("what permuteIndex refuses", () => {
  it("a task count that is not a whole number in [1, 2^31], and a position outside [0, n), each naming the value", () => {
    expect(() => permuteIndex(0, 2.5, 1)).toThrow("task count must be an integer in [1, 2^31], got 2.5");
    expect(() => permuteIndex(0, 2 ** 31 + 1, 1)).toThrow(`got ${2 ** 31 + 1}`);
    expect(() => permuteIndex(-1, 5, 1)).toThrow("position must be an integer in [0, 5), got -1");
    expect(() => permuteIndex(1.5, 5, 1)).toThrow(RangeError);
    expect(permuteIndex(2 ** 31 - 1, 2 ** 31, 1)).toBeLessThan(2 ** 31); // the largest count is accepted
    expect(permuteIndex(0, 1, 99)).toBe(0);
  });
});
