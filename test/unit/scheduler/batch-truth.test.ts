/**
 * Batch truth (scheduler/batches): the run learns from status edges, global steps and the pool information which
 * server batch each accepted reward landed in, re-runs what a wipe took, tops up a batch that would not close, and
 * never says "finished" over rewards the server did not train.
 */
import { describe, expect, it } from "vitest";
import { runStatus, runSummary, STOP_UNKNOWN_GRACE_MS, type FinishRun, type PoolSeen } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";
import { runWithFakeSwarm } from "./fake-swarm.ts";

const finishOf = (h: Harness) => h.commands.find((c): c is FinishRun => c.type === "finishRun")?.summary;
const pool = (globalStep: number, episodeUuids: string[], completedTasks: number, completedTaskTarget = 0): PoolSeen => ({ globalStep, episodeUuids, completedTasks, completedTaskTarget });
const seen = (h: Harness, engineStatus: string, globalStep: number | null, p?: PoolSeen) =>
  h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus, globalStep, ...(p ? { pool: p } : {}) });
const uuidOf = (ref: { episodeKey: string; attempt: number }) => `uuid-${ref.episodeKey}-${ref.attempt}`;

describe("batch truth: which server batch each reward landed in", () => {
  it("a weight sync forced by another client splits a window over two batches: step rows show both real global steps, the status says the mix is not exact, and the tail batch is topped up", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 1, maxParallel: 1, maxSteps: 1 }));
    h.start();
    h.rolling(1);
    const [a] = h.takeDispatches();
    h.finishEpisode(a!, 1, 1); // lands in batch 1
    seen(h, "ENGINE.ROLLING", 2); // another client's episodes closed batch 1 early: the engine trained it
    expect(h.state.batches["0:1"]?.state).toBe("closed");
    const [b] = h.takeDispatches();
    h.finishEpisode(b!, 0, 2); // lands in batch 2, which holds 1 complete task of the 2 it needs
    const [topUp] = h.takeDispatches();
    expect(topUp).toMatchObject({ windowIndex: 0 });
    expect(h.state.steps["0"]).toMatchObject({ topUpGroups: 1, groupsOpened: 3 });
    h.finishEpisode(topUp!, 1, 2);
    expect(h.state.run.phase).toBe("finishing"); // batch 2 holds 2 complete tasks: the engine closes it on its own
    h.rolling(3);
    const summary = finishOf(h);
    expect(summary).toMatchObject({ verdict: "trained", untrainedRewards: 0, stopReason: "maxSteps" });
    expect(summary?.steps[0]).toMatchObject({ globalStep: 2, globalSteps: [1, 2], openedAtGlobalStep: 1, episodesEnded: 3 });
    expect(runStatus(h.state).batches).toMatchObject({ trained: 2, episodesTrained: 3, episodesUntrained: 0, exactMix: false });
    expect(runStatus(h.state).batches.note).toMatch(/landed in more than one server batch/);
  });

  it("counts other clients' complete tasks from the pool: no top-up when they complete the batch, and the status names the shared batch", () => {
    const h = new Harness(specInput({ batchSize: 4, numRepeat: 1, epochs: 1, maxParallel: 1 }), { gsm8k: 6 });
    h.start();
    h.rolling(1);
    h.serveAll(1);
    h.rolling(2);
    const [first] = h.takeDispatches();
    h.finishEpisode(first!, 1, 2);
    // before the last group ends, the pool lists our episode and two complete tasks of another client
    seen(h, "ENGINE.ROLLING", 2, pool(2, [uuidOf(first!), "x1", "x2"], 3, 4));
    const [second] = h.takeDispatches();
    h.finishEpisode(second!, 1, 2); // our 2 + their 2 = 4 complete: nothing to top up
    expect(h.state.steps["1"]?.topUpGroups ?? 0).toBe(0);
    expect(h.takeDispatches()).toEqual([]);
    expect(h.state.batches["0:2"]).toMatchObject({ foreignEpisodes: 2, poolCompletedTasks: 3, poolTaskTarget: 4 });
    expect(runStatus(h.state).batches).toMatchObject({ exactMix: false, note: expect.stringMatching(/other clients' episodes shared 1 server batch/) });
    h.rolling(3);
    expect(finishOf(h)).toMatchObject({ verdict: "trained", untrainedRewards: 0 });
  });
});

describe("top-ups of a batch other runs share", () => {
  /** One step of 2 groups × 2 repeats served at global step 1; then the pool says the server's batch takes 3 tasks. */
  function sharedBatch(p: Omit<PoolSeen, "globalStep" | "episodeUuids" | "completedTasks" | "completedTaskTarget">) {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 2, maxParallel: 4, maxSteps: 1 }), { gsm8k: 10 });
    h.start();
    h.rolling(1);
    const sent = h.takeDispatches();
    for (const d of sent) h.finishEpisode(d, 1, 1);
    const ours = sent.map(uuidOf);
    const taskEpisodes = { "ours-a": ours.slice(0, 2), "ours-b": ours.slice(2), ...(p.taskEpisodes ?? {}) };
    const uuids = Object.values(taskEpisodes).flat();
    seen(h, "ENGINE.ROLLING", 1, { globalStep: 1, episodeUuids: uuids, completedTasks: 2, completedTaskTarget: 3, taskEpisodes, ...(p.runningTaskIds ? { runningTaskIds: p.runningTaskIds } : {}) });
    return h;
  }

  it("another run's task still being served (its claims running, from the pool) takes the last place: no top-up that would overflow into the next batch", () => {
    const h = sharedBatch({ taskEpisodes: { "other:7": ["x1"] }, runningTaskIds: { x2: "other:7" } });
    expect(h.state.batches["0:1"]?.poolForeignTasks).toBe(1);
    expect(h.takeDispatches()).toEqual([]);
    expect(h.state.run.totals.groupsToppedUp ?? 0).toBe(0);
    expect(h.state.run.phase).toBe("finishing");
  });

  it("an incomplete task of another client with nothing running is not counted: the batch is topped up with what is missing", () => {
    const h = sharedBatch({ taskEpisodes: { "other:7": ["x1"] }, runningTaskIds: {} });
    expect(h.state.batches["0:1"]?.poolForeignTasks).toBe(0);
    const topUp = h.takeDispatches();
    expect(topUp).toHaveLength(2); // one group of 2 repeats
    expect(h.state.run.totals.groupsToppedUp).toBe(1);
  });

  it("another client's complete task counts as taken, and ours are never counted as theirs", () => {
    const h = sharedBatch({ taskEpisodes: { "other:8": ["y1", "y2"] }, runningTaskIds: { "uuid-ours-not-in-flight": "ours-a" } });
    expect(h.state.batches["0:1"]?.poolForeignTasks).toBe(1);
    expect(h.takeDispatches()).toEqual([]);
  });
});

describe("wipes are re-run", () => {
  it("another client's restart mid-batch (fake server): the wiped groups run again, nothing is stranded, and the run's counts match what the server trained", () => {
    const h = new Harness(specInput({ batchSize: 4, numRepeat: 2, maxParallel: 4, maxSteps: 2 }), { gsm8k: 50 });
    const run = runWithFakeSwarm(h, { restart: { whenBatchHolds: 4, bootMs: 5000 } });
    expect(h.state.run.phase).toBe("finished");
    const wiped = run.wiped.flatMap((b) => [...b.values()].flat()).length;
    expect(wiped).toBe(4);
    expect(run.openBatch.size).toBe(0); // nothing left in a batch that never closes
    const trained = run.batches.flatMap((b) => [...b.values()].flat()).length;
    const summary = finishOf(h)!;
    expect(summary).toMatchObject({ verdict: "trained", untrainedRewards: 0, stopReason: "maxSteps" });
    expect(summary.totals.episodesWiped).toBe(wiped);
    expect(summary.totals.episodesEnded).toBe(trained); // every reward the run counts was trained, and only those
    expect(summary.totals.groupsRerun + (h.state.steps["0"]?.episodesWiped ?? 0)).toBeGreaterThan(0);
    expect(summary.steps.map((s) => s.globalStep)).toEqual([1, 2]); // the new engine's steps, not the wiped one's
  });

  it("the step going backwards without an OFFLINE or BOOTING in between is a restart: the batch is wiped and its group runs again", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 1, maxParallel: 1 }));
    h.start();
    h.rolling(5);
    const [a] = h.takeDispatches();
    h.finishEpisode(a!, 1, 5);
    seen(h, "ENGINE.ROLLING", 1); // stopped and started between two polls
    expect(h.state.batches["0:5"]?.state).toBe("wiped");
    expect(h.state.run.engines[0]).toMatchObject({ restarts: 1, globalStep: 1 });
    expect(h.row(`${a!.groupKey}~1#0`)).toMatchObject({ status: "queued", attempt: 1, taskIndex: a!.taskIndex, windowIndex: 0 });
    expect(h.state.run.totals).toMatchObject({ episodesWiped: 1, groupsRerun: 1 });
  });

  it("episodes the pool listed for a step and no longer lists at that step mean the engine's batch was emptied: wiped and re-run", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 2, maxParallel: 2 }));
    h.start();
    h.rolling(3);
    const [a0, a1] = h.takeDispatches();
    h.finishEpisode(a0!, 1, 3);
    h.finishEpisode(a1!, 0, 3); // group a complete in batch 3; group b is dispatched next
    seen(h, "ENGINE.ROLLING", 3, pool(3, [uuidOf(a0!), uuidOf(a1!)], 1, 2));
    expect([...h.state.batches["0:3"]!.episodes.values()].every((e) => e.confirmed)).toBe(true);
    seen(h, "ENGINE.ROLLING", 3, pool(3, [], 0, 2)); // restarted at the same step from a checkpoint
    expect(h.state.batches["0:3"]?.state).toBe("wiped");
    expect(h.state.run.totals).toMatchObject({ episodesWiped: 2, groupsRerun: 1 });
    // later landings belong to a new batch generation at the same step, never to the wiped one
    for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 3);
    expect(Object.keys(h.state.batches).sort()).toEqual(["0:3", "1:3"]);
  });

  it("an end the server accepted just before a wipe the core already saw is run again, not counted", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 2, maxParallel: 2 }));
    h.start();
    h.rolling(2);
    const [a, b] = h.takeDispatches();
    h.finishEpisode(a!, 1, 2); // batch 2 holds a
    h.claim(b!, 2);
    h.outcome(b!, { kind: "end", reward: 1 });
    h.engine("ENGINE.OFFLINE", 2); // another client's stop_engine (global_step kept): batch 2 wiped, a re-queued
    h.report(b!, "ended"); // b's end was accepted before the stop: it was wiped too
    expect(h.row(b!.episodeKey)).toMatchObject({ status: "queued", attempt: 2, wipes: 1, lastCause: "wiped" });
    expect(h.row(a!.episodeKey)).toMatchObject({ status: "queued", attempt: 2, wipes: 1 });
    expect(h.state.run.totals).toMatchObject({ episodesWiped: 2, episodesEnded: 0, attemptsFailed: 0 });
  });

  it("a clean engine exit after it drained the batch (OFFLINE, global_step 0) trained it: not a wipe", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 1, maxSteps: 1 }));
    h.start();
    h.rolling(7);
    h.serveAll(7);
    seen(h, "ENGINE.ROLLING_POST", 7);
    seen(h, "ENGINE.OFFLINE", 0); // its last step: trained, then exited
    expect(h.state.batches["0:7"]?.state).toBe("closed");
    expect(finishOf(h)).toMatchObject({ verdict: "trained", untrainedRewards: 0, totals: { episodesWiped: 0 } });
  });
});

describe("nothing stranded at the end", () => {
  it("a stop with rewards in a batch the server has not closed finishes saying exactly how many are untrained", () => {
    const h = new Harness(specInput({ batchSize: 4, numRepeat: 2, maxParallel: 2 }));
    h.start();
    h.rolling(1);
    h.serveAll(1); // 2 in flight at a time: serve everything, then stop before the batch closes
    h.apply({ type: "stopRequested" });
    // the batch is complete: the stop waits (bounded) for the engine to close it; it never does
    expect(h.state.run.phase).toBe("draining");
    h.advance(STOP_UNKNOWN_GRACE_MS);
    expect(h.state.run.phase).toBe("finished");
    const summary = runSummary(h.state);
    expect(summary).toMatchObject({ verdict: "untrained", untrainedRewards: 8, stopReason: "stopRequested" });
  });

  it("the last window waits for the engine to train its batch, however long, and never finishes while its rewards are untrained", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 1, maxSteps: 1 }));
    h.start();
    h.rolling(1);
    h.serveAll(1);
    for (let i = 0; i < 20; i++) h.advance(60_000);
    expect(h.state.run.phase).toBe("finishing");
    expect(runStatus(h.state).batches).toMatchObject({ episodesUntrained: 2, open: [{ batchKey: "0:1", episodes: 2 }] });
    seen(h, "ENGINE.WEIGHT_SYNCING", 1);
    expect(h.state.run.phase).toBe("finishing");
    h.rolling(2);
    expect(finishOf(h)).toMatchObject({ verdict: "trained", untrainedRewards: 0 });
  });
});
