/**
 * A batch window never holds one task twice (scheduler/window-tasks): driven against a fake server that closes a
 * batch only when batchSize DISTINCT task ids are complete (spec §7.3). Before the rule, an epoch boundary inside a
 * window could repeat a task id and the run stalled for ever with every episode ended and the engine ROLLING.
 */
import { describe, expect, it } from "vitest";
import { permutationKey, permuteIndex, type FinishRun, type RunSpecInput } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";
import { completeTasks, groupsByWindow, runWithFakeSwarm, taskIdOf, type FakeSwarmOptions, type FakeSwarmRun } from "./fake-swarm.ts";

/** Runs a spec against the fake server and checks the window rule; returns what the server saw. */
function runChecked(input: RunSpecInput, counts: Record<string, number>, options: FakeSwarmOptions = {}): { h: Harness; run: FakeSwarmRun } {
  const h = new Harness(input, counts);
  const run = runWithFakeSwarm(h, options);
  const { batchSize, numRepeat } = h.state.run.config;
  expect(h.state.run.phase, "the run finishes (no stall)").toBe("finished");
  const windows = groupsByWindow(run.dispatched);
  for (const [w, groups] of windows) {
    // the groups the mix (and BC-32 replacements) opened; top-up groups come last and are distinct within the batch
    const topUps = h.state.steps[String(w)]?.topUpGroups ?? 0;
    const ids = [...groups.values()].map(taskIdOf).slice(0, groups.size - topUps);
    expect(new Set(ids).size, `window ${w} repeats a task: ${ids.join(", ")}`).toBe(ids.length);
  }
  // nothing stranded: every window (a partial one topped up) is one closed server batch of batchSize distinct tasks
  expect(h.state.run.untrainedRewards).toBe(0);
  expect(run.openBatch.size, "no reward left in a batch that never closed").toBe(0);
  const all = [...windows.entries()];
  expect(run.batches).toHaveLength(all.length);
  all.forEach(([w, groups], i) => {
    const batch = run.batches[i] ?? new Map<string, number[]>();
    expect(completeTasks(batch, numRepeat), `batch of window ${w}`).toBe(batchSize);
    const windowIds = new Set([...groups.values()].map(taskIdOf)); // a dropped group may have ended no episode
    expect([...batch.keys()].filter((id) => !windowIds.has(id)), `batch of window ${w} holds another window's task`).toEqual([]);
  });
  return { h, run };
}

/** How many groups each task id got over the whole run. */
function servedPerTask(run: FakeSwarmRun): Map<string, number> {
  const groups = new Set(run.dispatched.map((d) => d.groupKey));
  const served = new Map<string, number>();
  for (const g of groups) {
    const [source, , taskIndex] = g.split("/");
    const id = `${source}:train:${taskIndex}`;
    served.set(id, (served.get(id) ?? 0) + 1);
  }
  return served;
}

/** True when cutting the plain seeded walk into windows of `batchSize` would put one task twice in a window. */
function plainWalkRepeats(n: number, batchSize: number, epochs: number, seed: number, source: string): boolean {
  const walk = Array.from({ length: epochs }, (_, e) => Array.from({ length: n }, (_, p) => permuteIndex(p, n, permutationKey(seed, source, e)))).flat();
  for (let start = 0; start < walk.length; start += batchSize) {
    const window = walk.slice(start, start + batchSize);
    if (new Set(window).size < window.length) return true;
  }
  return false;
}

const allTasks = (source: string, n: number) => Array.from({ length: n }, (_, i) => `${source}:train:${i}`).sort();

// whole multi-epoch runs: up to ~18 s each alone, past the unit project's 20 s on a loaded 2-core machine (a time
// budget, not an assertion)
describe("a batch window never holds one task twice", { timeout: 120_000 }, () => {
  it("10 tasks, batch 8, 4 epochs: epoch boundaries inside windows never repeat a task, every batch closes, each task is served 4 times", () => {
    let repeatedBefore = 0;
    for (let seed = 0; seed < 12; seed++) {
      if (plainWalkRepeats(10, 8, 4, seed, "gsm8k")) repeatedBefore++;
      const { h, run } = runChecked(specInput({ batchSize: 8, numRepeat: 2, epochs: 4, seed }), { gsm8k: 10 });
      expect(run.batches, `seed ${seed}`).toHaveLength(5); // 40 tasks = 5 full windows
      expect(h.state.run.stopReason).toBe("epochsDone");
      const served = servedPerTask(run);
      expect([...served.keys()].sort()).toEqual(allTasks("gsm8k", 10));
      expect([...served.values()]).toEqual(Array(10).fill(4));
      expect(h.state.run.deferred).toEqual([[]]);
    }
    expect(repeatedBefore, "the seeds exercise the rule: the plain walk repeats a task in a window").toBeGreaterThan(3);
  });

  it("10 tasks, batch 8, 3 epochs: 3 full windows close, the partial last one is topped up from a further pass so its batch closes too", () => {
    const { h, run } = runChecked(specInput({ batchSize: 8, numRepeat: 2, epochs: 3, seed: 5 }), { gsm8k: 10 });
    expect(run.batches).toHaveLength(4);
    expect(Object.values(h.state.steps).map((s) => [s.groupsOpened, s.partial, s.topUpGroups ?? 0])).toEqual([[8, false, 0], [8, false, 0], [8, false, 0], [8, true, 2]]);
    const served = [...servedPerTask(run).values()];
    expect(served.every((n) => n >= 3)).toBe(true);
    expect(served.reduce((a, b) => a + b, 0)).toBe(32); // every task 3 times + the 2 top-up groups
    expect(h.state.run.totals.groupsToppedUp).toBe(2);
  });

  it("with topUpLastBatch false the partial last window ends the run, which reports exactly how many rewards are untrained", () => {
    const h = new Harness(specInput({ batchSize: 8, numRepeat: 2, epochs: 3, seed: 5, topUpLastBatch: false }), { gsm8k: 10 });
    const run = runWithFakeSwarm(h);
    expect(h.state.run.phase).toBe("finished");
    expect(run.batches).toHaveLength(3);
    const stranded = [...run.openBatch.values()].reduce((n, r) => n + r.length, 0);
    expect(stranded).toBe(12); // 6 groups × 2 repeats the server holds in a batch that never closes
    expect(h.state.run.untrainedRewards).toBe(stranded);
    const summary = h.commands.find((c): c is FinishRun => c.type === "finishRun")?.summary;
    expect(summary).toMatchObject({ untrainedRewards: 12, verdict: "untrained" });
  });

  it("a 2-source mix (weights 1:2, batch 8, 4 epochs) keeps the exact mix, closes every batch and serves each task 4 times", () => {
    for (let seed = 0; seed < 6; seed++) {
      const input = specInput({ batchSize: 8, numRepeat: 2, epochs: 4, seed, datasets: [{ name: "a", weight: 1 }, { name: "b", weight: 2 }] });
      // 6 and 12 tasks: both run out at window 9 (a gets 3/2/3 per 3 windows, b 5/6/5), epochs end inside windows
      const { h, run } = runChecked(input, { a: 6, b: 12 });
      expect(run.batches, `seed ${seed}`).toHaveLength(9);
      expect(Object.values(h.state.steps).map((s) => s.sourceGroups)).toEqual(
        Array(3).fill([{ a: 3, b: 5 }, { a: 2, b: 6 }, { a: 3, b: 5 }]).flat(),
      );
      const served = servedPerTask(run);
      expect([...served.keys()].sort()).toEqual([...allTasks("a", 6), ...allTasks("b", 12)].sort());
      expect(new Set(served.values())).toEqual(new Set([4]));
    }
  });
});

describe("the academic-translation case and uneven mixes", () => {
  it("4 tasks: batch 8 is refused up front; batch 4 over 3 epochs closes every batch and serves each task 3 times", () => {
    expect(() => new Harness(specInput({ batchSize: 8, epochs: 2 }), { gsm8k: 4 })).toThrow(/has 4 tasks but a batch window of 8 needs up to 8 distinct tasks/);
    const { run } = runChecked(specInput({ batchSize: 4, numRepeat: 4, epochs: 3, seed: 3 }), { gsm8k: 4 });
    expect(run.batches).toHaveLength(3);
    expect([...servedPerTask(run).values()]).toEqual(Array(4).fill(3));
  });

  it("weights 1/1/5 with batch 4: the source that sometimes gets 4 groups a window, with exactly 4 tasks, never repeats one", () => {
    for (let seed = 0; seed < 6; seed++) {
      const input = specInput({ batchSize: 4, numRepeat: 2, epochs: 3, seed, datasets: [{ name: "a" }, { name: "b" }, { name: "c", weight: 5 }] });
      const { h, run } = runChecked(input, { a: 30, b: 30, c: 4 });
      expect(h.state.run.stopReason).toBe("epochsDone");
      expect(Object.values(h.state.steps).some((s) => s.sourceGroups.c === 4)).toBe(true); // a window with every task of c
      const servedC = [...servedPerTask(run).entries()].filter(([id]) => id.startsWith("c:"));
      expect(servedC.map(([, n]) => n)).toEqual(Array(4).fill(3));
    }
  });
});

describe("BC-32 replacement groups never repeat a task already in the window", () => {
  /** Fails every attempt of the first group dispatched in window 0 (maxAttempts 1 → dropped at once). */
  const failFirstGroup = () => {
    let target: string | null = null;
    return (d: { groupKey: string; windowIndex: number | null }) => {
      if (target === null && d.windowIndex === 0) target = d.groupKey;
      return d.groupKey === target;
    };
  };

  it("BC-32 9 tasks, batch 8: the replacement is the one task not in the window (the dropped one counts), and the batch closes", () => {
    const { h, run } = runChecked(specInput({ batchSize: 8, numRepeat: 2, maxAttempts: 1, epochs: 2, seed: 1 }), { gsm8k: 9 }, { fails: failFirstGroup() });
    const step0 = h.state.steps["0"];
    expect(step0).toMatchObject({ groupsOpened: 9, replacementGroups: 1, groupsDropped: 1, partial: false });
    expect([...(step0?.taskIndices.gsm8k ?? [])].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(run.batches.length).toBeGreaterThanOrEqual(1);
    expect(h.state.run.stopReason).toBe("epochsDone");
  });

  it("BC-32 with exactly batchSize tasks a dropped group cannot be replaced in the window: the run ends after a top-up closes its batch (no stall, nothing stranded), and the logs say why", () => {
    const { h, run } = runChecked(specInput({ batchSize: 8, numRepeat: 2, maxAttempts: 1, epochs: 3 }), { gsm8k: 8 }, { fails: failFirstGroup() });
    expect(h.state.steps["0"]).toMatchObject({ groupsOpened: 9, replacementGroups: 0, topUpGroups: 1, partial: true });
    expect(Object.keys(h.state.steps)).toEqual(["0"]);
    expect(run.batches).toHaveLength(1);
    const logs = h.commands.flatMap((c) => (c.type === "log" ? [`${c.level} ${c.message}`] : []));
    expect(logs).toEqual(expect.arrayContaining([
      expect.stringMatching(/^info a window can take every task of this dataset/),
      expect.stringMatching(/^warn no task left that is not already in the window/),
      expect.stringMatching(/^info server batch topped up/),
    ]));
  });

  it("BC-32 a source whose tasks are all in the window is replaced from the next source, so the batch still closes", () => {
    const input = specInput({ batchSize: 8, numRepeat: 2, maxAttempts: 1, datasets: [{ name: "a" }, { name: "b" }], epochs: 2 });
    const fails = failFirstGroup();
    const { h, run } = runChecked(input, { a: 4, b: 50 }, { fails: (d) => d.source === "a" && fails(d) });
    expect(h.state.steps["0"]).toMatchObject({ groupsOpened: 9, replacementGroups: 1, partial: false, sourceGroups: { a: 4, b: 4 } });
    expect(h.state.steps["0"]?.taskIndices.b).toHaveLength(5);
    expect(run.batches).toHaveLength(2);
  });
});
