/**
 * The up-front check that every train source can fill its share of a window with DISTINCT tasks (a window never
 * holds one task twice, so a source with fewer tasks would leave the server's batch short for ever).
 */
import { describe, expect, it } from "vitest";
import {
  RunSpec, WindowCapacityError, allocateSlots, initialState, maxWindowGroups, schedulerConfig, windowCapacityIssues,
  type CapacityRun, type RunSpecInput,
} from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

const spec = (overrides: Partial<RunSpecInput>) => RunSpec.parse(specInput(overrides));

/** Throws when the config is refused; the error. */
function refusal(input: Partial<RunSpecInput>, counts: Record<string, number>): WindowCapacityError {
  try {
    schedulerConfig(spec(input), counts);
  } catch (err) {
    if (err instanceof WindowCapacityError) return err;
    throw err;
  }
  throw new Error("expected a WindowCapacityError");
}

/** The plain maximum of each source's groups over `windows` allocations from zero credits. */
function bruteForceMost(weights: number[], batchSize: number, windows: number): number[] {
  let credits = weights.map(() => 0);
  const most = weights.map(() => 0);
  for (let w = 0; w < windows; w++) {
    const a = allocateSlots(credits, weights, batchSize);
    credits = a.credits;
    a.counts.forEach((c, i) => (most[i] = Math.max(most[i] ?? 0, c)));
  }
  return most;
}

describe("window capacity: a source must hold the most groups one window can take from it", () => {
  it("refuses 4 tasks with batch 8 (the academic-translation stall) with a message that names the dataset and the fix", () => {
    const err = refusal({ batchSize: 8, epochs: 2, datasets: [{ name: "x" }] }, { x: 4 });
    const message = 'dataset "x" has 4 tasks but a batch window of 8 needs up to 8 distinct tasks from it; lower batchSize to ≤ 4 or add tasks';
    expect(err).toBeInstanceOf(RangeError);
    expect(err.message).toBe(message);
    expect(err.issues).toEqual([{ path: "datasets.0", message }]);
    expect(() => initialState(spec({ batchSize: 8, datasets: [{ name: "x" }] }), { x: 4 })).toThrow(message);
    // the suggested fix is accepted
    expect(() => initialState(spec({ batchSize: 4, epochs: 2, datasets: [{ name: "x" }] }), { x: 4 })).not.toThrow();
  });

  it("names each short source by its index and suggests the largest batch size that fits it (a weight share is not the limit)", () => {
    const input = { batchSize: 8, datasets: [{ name: "big", weight: 2 }, { name: "a", weight: 1 }] };
    const err = refusal(input, { big: 100, a: 2 });
    expect(err.issues).toEqual([
      {
        path: "datasets.1",
        message: 'dataset "a" has 2 tasks but a batch window of 8 needs up to 3 distinct tasks from it; lower batchSize to ≤ 6, lower its weight or add tasks',
      },
    ]);
    expect(windowCapacityIssues(spec({ ...input, batchSize: 6 }), { big: 100, a: 2 })).toEqual([]); // 6 × 1/3 = 2 exactly
    expect(windowCapacityIssues(spec({ ...input, batchSize: 7 }), { big: 100, a: 2 })).toHaveLength(1); // 7 / 3 → 3 some windows
  });

  it("counts the carried deficit: weights 1/1/5 with batch 4 give the third source 4 groups in some windows, not ceil(2.86) = 3", () => {
    const input = { batchSize: 4, epochs: 3, datasets: [{ name: "a" }, { name: "b" }, { name: "c", weight: 5 }] };
    expect(bruteForceMost([1, 1, 5], 4, 14)).toEqual([1, 1, 4]); // c gets 3, 3, 2, 4, 2, 3 … groups
    // only the run's own windows count: in 1 epoch c's 3 tasks run out at window 0, long before the window of 4
    expect(windowCapacityIssues(spec({ ...input, epochs: 1 }), { a: 50, b: 50, c: 3 })).toEqual([]);
    expect(refusal(input, { a: 50, b: 50, c: 3 }).issues.map((i) => i.message)).toEqual([
      'dataset "c" has 3 tasks but a batch window of 4 needs up to 4 distinct tasks from it; lower batchSize to ≤ 3, lower its weight or add tasks',
    ]);
    expect(schedulerConfig(spec(input), { a: 50, b: 50, c: 4 }).sources.map((s) => s.maxWindowGroups)).toEqual([1, 1, 4]);
  });

  it("maxWindowGroups is the exact maximum of the mix over the run's windows for sources that could fall short", () => {
    const cases: { weights: number[]; batchSize: number }[] = [
      { weights: [1, 2], batchSize: 8 }, { weights: [1, 1, 1], batchSize: 4 }, { weights: [2, 3, 4], batchSize: 11 },
      { weights: [0.25, 0.75], batchSize: 8 }, { weights: [3, 4, 4], batchSize: 7 }, { weights: [1, 5, 5], batchSize: 10 },
    ];
    for (const { weights, batchSize } of cases) {
      // tiny sources (1 task) over 3 epochs: the run's windows are those until the first source runs out, plus one
      const run: CapacityRun = { batchSize, epochs: 3, maxSteps: null, sources: weights.map((weight, i) => ({ name: `s${i}`, weight, taskCount: 1, throttleRatio: null })) };
      const most = maxWindowGroups(run);
      expect(most.every((m, i) => m <= (bruteForceMost(weights, batchSize, 200)[i] ?? 0))).toBe(true);
      const long: CapacityRun = { ...run, sources: run.sources.map((s) => ({ ...s, taskCount: 2 })), epochs: 100 };
      expect(maxWindowGroups(long), JSON.stringify(weights)).toEqual(bruteForceMost(weights, batchSize, 200));
    }
  });

  it("every source's maximum counts, not only the first source's to reach its bound", () => {
    // one slot per window: c (weight 5) takes the first, a and b one of the next ones before c's 3 epochs run out
    const run: CapacityRun = { batchSize: 1, epochs: 3, maxSteps: null, sources: [2, 1, 5].map((weight, i) => ({ name: "abc"[i]!, weight, taskCount: 1, throttleRatio: null })) };
    expect(maxWindowGroups(run)).toEqual([1, 1, 1]);
  });

  it("honours per-source caps (BC-31) and maxSteps: a capped or short run needs fewer distinct tasks", () => {
    expect(windowCapacityIssues(spec({ batchSize: 8, datasets: [{ name: "a", throttleRatio: 0.5 }, { name: "b", weight: 3 }] }), { a: 3, b: 100 })).toEqual([]);
    expect(windowCapacityIssues(spec({ batchSize: 8, datasets: [{ name: "a", throttleRatio: 0.5 }, { name: "b", weight: 3 }] }), { a: 1, b: 100 })).toHaveLength(1);
    // weights 1/1/1, batch 4: the first window gives the first source 2, the next two windows 1
    const input = { batchSize: 4, datasets: [{ name: "a" }, { name: "b" }, { name: "c" }] };
    expect(windowCapacityIssues(spec(input), { a: 1, b: 100, c: 100 })).toHaveLength(1);
    expect(maxWindowGroups({ batchSize: 4, epochs: 10, maxSteps: 3, sources: ["a", "b", "c"].map((name) => ({ name, weight: 1, taskCount: 2, throttleRatio: null })) })).toEqual([2, 2, 2]);
  });

  it("eval runs have no windows: 4 tasks with batch 8 run each task's group once per epoch (repeats across epochs are fine)", () => {
    expect(windowCapacityIssues(spec({ episodeType: "eval", batchSize: 8 }), { gsm8k: 4 })).toEqual([]);
    const h = new Harness(specInput({ episodeType: "eval", batchSize: 8, numRepeat: 1, epochs: 2, maxParallel: 8 }), { gsm8k: 4 });
    h.start();
    h.rolling(1);
    h.serveAll(1);
    const groups = [...new Set(h.dispatched().map((d) => d.groupKey))];
    expect(groups).toHaveLength(8);
    expect(new Set(groups.map((g) => g.split("/")[2])).size).toBe(4);
    expect(h.state.run.phase).toBe("finished");
  });

  it("a large source is never simulated: its bound is enough (no work on the common path)", () => {
    const run: CapacityRun = { batchSize: 256, epochs: 1000, maxSteps: null, sources: [{ name: "g", weight: 1, taskCount: 7473, throttleRatio: null }] };
    expect(maxWindowGroups(run)).toEqual([256]);
  });
});
