/**
 * More of the capacity check (scheduler/window-capacity): without throttle caps, a source with plenty of tasks is
 * bounded by its weight share plus the carried credit, `ceil(share + 2) − 1` groups per window (not the whole batch).
 */
import { describe, expect, it } from "vitest";
import { maxWindowGroups } from "../../../src/scheduler/index.ts";

describe("the bound of a source with plenty of tasks", () => {
  it("without caps it is the weight share plus the carried credit, ceil(share + 2) − 1, never the whole batch", () => {
    const plenty = (weights: number[], batchSize: number) =>
      maxWindowGroups({ batchSize, epochs: 1, maxSteps: null, sources: weights.map((weight, i) => ({ name: `s${i}`, weight, taskCount: 10_000, throttleRatio: null })) });
    expect(plenty([1, 1], 4)).toEqual([3, 3]); // share 2 each
    expect(plenty([1, 3], 8)).toEqual([3, 7]); // shares 2 and 6
  });
});

describe("the windows the simulation counts", () => {
  it("the window that gives a source its epochs' tasks plus a full deferred list is the run's last one", () => {
    // a (share 3.75, bound 5) gets 4 + 4 = 8 = 3 tasks + 5 in windows 0 and 1: no window 2, where b would get 2
    const run = { batchSize: 5, epochs: 1, maxSteps: 9, sources: [
      { name: "a", weight: 3, taskCount: 3, throttleRatio: null }, { name: "b", weight: 1, taskCount: 11, throttleRatio: null },
    ] };
    expect(maxWindowGroups(run)).toEqual([4, 1]);
  });
});
