/** @module test/unit/util/backoff — the doubling back-off both claim back-offs share. */
import { describe, expect, it } from "vitest";
import { backoffDelayMs } from "../../../src/util/backoff.ts";

describe("backoffDelayMs", () => {
  const policy = { firstMs: 500, maxMs: 4_000, jitter: [0.5, 1.5] as const };

  it("doubles from the first delay per try and stops at the cap", () => {
    // u = 0.5 is the middle of [0.5, 1.5): factor 1
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelayMs(policy, n, 0.5))).toEqual([500, 1_000, 2_000, 4_000, 4_000, 4_000]);
  });

  it("the jitter spans [lo, hi) of the capped delay", () => {
    expect(backoffDelayMs(policy, 2, 0)).toBe(500);
    expect(backoffDelayMs(policy, 2, 0.999)).toBeCloseTo(1_499, 0);
    expect(backoffDelayMs({ firstMs: 2_000, maxMs: 60_000, jitter: [1, 1.25] }, 1, 0.5)).toBe(2_250);
  });

  it("a try count below 1 counts as the first", () => {
    expect(backoffDelayMs(policy, 0, 0.5)).toBe(500);
  });
});
