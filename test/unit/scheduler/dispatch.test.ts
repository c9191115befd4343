import { describe, expect, it } from "vitest";
import { claimBackoffMs } from "../../../src/scheduler/dispatch.ts";
import { resolveTuning } from "../../../src/scheduler/tuning.ts";
import { seedRng } from "../../../src/scheduler/rng.ts";

const timing = resolveTuning({}, 240);

describe("claim back-off (spec §8.3, BC-25)", () => {
  it("starts at 2 s after 'No available episodes' and at 15 s when the engine was not ROLLING, doubling to the cap, +≤25 % jitter", () => {
    const cases: [string, number, number][] = [["noEpisodes", 1, 2000], ["noEpisodes", 3, 8000], ["dispatch", 1, 2000], ["syncing", 1, 15_000], ["postRolling", 2, 30_000], ["notReady", 5, 60_000], ["deadline", 1, 15_000]];
    let rng = seedRng(3);
    for (const [kind, failures, base] of cases) {
      const [delay, next] = claimBackoffMs(timing, kind, failures, rng);
      expect(delay, kind).toBeGreaterThanOrEqual(base);
      expect(delay, kind).toBeLessThanOrEqual(base * 1.25);
      expect(next).not.toBe(rng);
      rng = next;
    }
  });

  it("is a pure function of the RNG state", () => {
    expect(claimBackoffMs(timing, "noEpisodes", 2, 99)).toEqual(claimBackoffMs(timing, "noEpisodes", 2, 99));
  });
});
