/**
 * Over-provisioning (scheduler/over-provision, issue 23 §2): how many extra task groups a window opens, when its
 * slow repeats are cut, what happens to a cut repeat's end, abort and lease, and that every task of an epoch is still
 * trained exactly once (its cut group re-run by a later window under a fresh key).
 */
import { describe, expect, it } from "vitest";
import { extraGroups, parseRunSpec, type ExtraGroupsInput, type FinishRun } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";
import { completeTasks, runWithFakeSwarm, taskIdOf } from "./fake-swarm.ts";

const base: ExtraGroupsInput = { batchSize: 8, numRepeat: 4, ratio: 0.25, throttleRatio: 1.5, maxEnvWorker: 32, heldByRun: 0, heldByOthers: 0 };
const finishOf = (h: Harness) => h.commands.find((c): c is FinishRun => c.type === "finishRun")?.summary;

describe("extraGroups: the rules", () => {
  it.each([
    ["off: ratio 0", { ratio: 0 }, 0],
    ["off: a negative ratio", { ratio: -0.5 }, 0],
    ["the ask: ceil(8 × 0.25) = 2", {}, 2],
    ["the ask rounds up: ceil(8 × 0.3) = 3", { ratio: 0.3 }, 3],
    ["an exact product is not rounded up by float noise: 10 × 0.3 = 3", { batchSize: 10, ratio: 0.3, throttleRatio: 2, maxEnvWorker: 100 }, 3],
    ["the throttle room: ceil(8 × 1.5) − 8 = 4 caps an ask of 8", { ratio: 1 }, 4],
    ["the throttle room: ceil(8 × 1.2) − 8 = 2", { ratio: 1, throttleRatio: 1.2 }, 2],
    ["no throttle room: ratio 1 allows exactly the batch", { throttleRatio: 1 }, 0],
    ["the worker budget: floor((32 − 24 held) / 4) = 2 caps an ask of 4", { ratio: 0.5, heldByRun: 24 }, 2],
    ["the worker budget: other clients' claims count, floor((32 − 27) / 4) = 1", { ratio: 0.5, heldByOthers: 27 }, 1],
    ["the worker budget: run and others add up, floor((32 − 20 − 8) / 4) = 1", { ratio: 0.5, heldByRun: 20, heldByOthers: 8 }, 1],
    ["the worker budget: a part group is no group, floor(3 / 4) = 0", { heldByRun: 29 }, 0],
    ["never below 0: more held than the budget", { heldByRun: 40 }, 0],
    ["a whole group of budget left: floor(4 / 4) = 1", { heldByRun: 28 }, 1],
  ] as const)("%s", (_name, over, want) => {
    expect(extraGroups({ ...base, ...over })).toBe(want);
  });
});

describe("the run spec's overProvision", () => {
  const issues = (over: Record<string, unknown>) => {
    const r = parseRunSpec(specInput(over));
    return r.success ? [] : r.issues;
  };
  it("defaults to 0 (off) and keeps a valid ratio", () => {
    const off = parseRunSpec(specInput());
    expect(off.success && off.data.overProvision).toBe(0);
    const on = parseRunSpec(specInput({ overProvision: 0.25 }));
    expect(on.success && on.data.overProvision).toBe(0.25);
  });
  it.each([
    [{ overProvision: -0.1 }, /overProvision must be ≥ 0/],
    [{ overProvision: 1.5 }, /overProvision must be ≤ 1/],
    [{ overProvision: "lots" }, /overProvision must be a number/],
    [{ overProvision: 0.5, episodeType: "eval" }, /overProvision 0.5 needs a train run/],
    [{ overProvision: 0.5, job: { swarmModeSampleCollectionMethod: "rollout_until_finish_enough_episodes" } }, /needs swarmModeSampleCollectionMethod "rollout_until_finish_enough_tasks" \(got "rollout_until_finish_enough_episodes"\)/],
    [{ overProvision: 0.5, throttleRatio: 1 }, /overProvision 0.5 has no room: throttleRatio 1 allows 8 unique tasks per batch of 8/],
  ])("refuses %j naming the field", (over, message) => {
    const found = issues(over);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ path: "overProvision", message: expect.stringMatching(message) });
  });
  it("accepts the tasks method named explicitly, and 0 with any method", () => {
    expect(issues({ overProvision: 0.5, job: { swarmModeSampleCollectionMethod: "rollout_until_finish_enough_tasks" } })).toEqual([]);
    expect(issues({ overProvision: 0, episodeType: "eval" })).toEqual([]);
  });
});

/** A run of batch 2 × 2 repeats with one extra group (overProvision 0.5), ROLLING at step 1, everything dispatched. */
function withExtra(over: Record<string, unknown> = {}) {
  const h = new Harness(specInput({ batchSize: 2, numRepeat: 2, maxParallel: 6, maxEnvWorker: 8, overProvision: 0.5, ...over }), { gsm8k: 10 });
  h.start();
  h.rolling(1);
  return { h, sent: h.takeDispatches() };
}

describe("a window with extras", () => {
  it("opens batchSize + extra groups, mixed in slot order, and says so on its step row", () => {
    const { h, sent } = withExtra();
    expect(new Set(sent.map((d) => d.groupKey)).size).toBe(3);
    expect(sent).toHaveLength(6);
    expect(h.state.steps["0"]).toMatchObject({ groupsOpened: 3, plannedGroups: 3, extraGroups: 1, groupsCut: 0, partial: false, cutAtMs: null });
  });

  it("without overProvision opens batchSize groups and keeps no extra fields", () => {
    const { h, sent } = withExtra({ overProvision: 0 });
    expect(sent).toHaveLength(4);
    expect(h.state.steps["0"]?.extraGroups).toBeUndefined();
  });

  it("the worker budget bounds the window: maxEnvWorker 4 (one batch's worth) leaves no room for an extra group", () => {
    const { sent } = withExtra({ maxEnvWorker: 4, maxParallel: 4 });
    expect(sent).toHaveLength(4);
  });

  it("cuts the slow group once batchSize groups are complete: queued and dispatched repeats dropped, running ones marked cut with a lease of heartbeatLeaseSeconds", () => {
    const { h, sent } = withExtra();
    const groups = [...new Set(sent.map((d) => d.groupKey))];
    const slow = sent.filter((d) => d.groupKey === groups[2]);
    h.claim(slow[0]!, 1); // one repeat of the slow group runs; the other is still dispatched
    for (const d of sent.filter((x) => x.groupKey !== groups[2])) h.finishEpisode(d, 1, 1);
    expect(h.state.steps["0"]).toMatchObject({ groupsCompleted: 2, cutAtMs: h.nowMs });
    expect(h.row(slow[0]!.episodeKey)).toMatchObject({ status: "running", cut: true, deadlineAtMs: h.nowMs + 30_000 });
    expect(h.row(slow[1]!.episodeKey)).toMatchObject({ status: "dropped", cut: true, lastCause: "batch_closed" });
    expect(h.state.run.totals.episodesCut).toBe(2);
    // a late claim of the dropped dispatch is refused: the consumer gives it back
    expect(h.claim(slow[1]!, 1).ack.status).toBe("stale");
  });

  it("a cut repeat's end is refused (the consumer aborts); its group resolves cut, not failed, and its task waits in the deferred list under the next re-run key", () => {
    const { h, sent } = withExtra();
    const groups = [...new Set(sent.map((d) => d.groupKey))];
    const slow = sent.filter((d) => d.groupKey === groups[2]);
    for (const d of slow) h.claim(d, 1);
    for (const d of sent.filter((x) => x.groupKey !== groups[2])) h.finishEpisode(d, 1, 1);
    const failedBefore = h.state.run.totals.attemptsFailed;
    const refused = h.outcome(slow[0]!, { kind: "end", reward: 1 });
    expect(refused.ack).toMatchObject({ status: "stale", reason: expect.stringMatching(/abort the claim, do not end it/) });
    // the other cut repeat's own abort is recorded as any abort (the refusal is for ends only)
    expect(h.outcome(slow[1]!, { kind: "abort", cause: "batch_closed" }).ack.status).toBe("applied");
    h.report(slow[1]!, "aborted");
    expect(h.state.run.totals.attemptsFailed).toBe(failedBefore);
    expect(h.state.run.failuresByCause["batch_closed"]).toBeUndefined();
    expect(h.state.steps["0"]).toMatchObject({ groupsCut: 1, cutGroupKeys: [groups[2]], groupsCompleted: 2, resolvedAtMs: h.nowMs });
    expect(h.state.run.totals.groupsCut).toBe(1);
    const slowTask = slow[0]!.taskIndex;
    expect(h.state.run.deferred[0]).toEqual([{ taskIndex: slowTask, epoch: 0, rerun: 1 }]);
    // the next window (after the batch trained) serves the cut task first, as a fresh group `…~1`
    h.rolling(2);
    const next = h.takeDispatches();
    expect(next[0]).toMatchObject({ windowIndex: 1, taskIndex: slowTask, groupKey: `gsm8k/0/${slowTask}~1` });
    expect(h.state.run.deferred[0]).toEqual([]);
  });

  it.each(["ENGINE.ROLLING_POST", "ENGINE.WEIGHT_SYNCING"])("the engine seen %s at the batch's step cuts the window even before the run counts it complete", (status) => {
    const { h, sent } = withExtra();
    h.finishEpisode(sent[0]!, 1, 1);
    for (const d of sent.slice(1)) h.claim(d, 1);
    h.engine(status, 1);
    expect(h.state.steps["0"]?.cutAtMs).toBe(h.nowMs);
    expect(sent.slice(1).every((d) => h.row(d.episodeKey)?.cut === true)).toBe(true);
  });

  it("the engine still ROLLING and the batch lacking groups: nothing is cut", () => {
    const { h, sent } = withExtra();
    h.finishEpisode(sent[0]!, 1, 1);
    for (const d of sent.slice(1)) h.claim(d, 1);
    h.engine("ENGINE.ROLLING", 1);
    expect(h.state.steps["0"]?.cutAtMs).toBeNull();
    expect(sent.slice(1).some((d) => h.row(d.episodeKey)?.cut === true)).toBe(false);
  });

  it("a repeat waiting in the queue (backed off after 'No available episodes') is dropped by the cut, not dispatched later", () => {
    const { h, sent } = withExtra();
    const groups = [...new Set(sent.map((d) => d.groupKey))];
    const waiting = sent.find((d) => d.groupKey === groups[2])!;
    h.apply({ type: "claimFailed", episodeKey: waiting.episodeKey, attempt: waiting.attempt, dispatchId: waiting.dispatchId, kind: "noEpisodes" });
    expect(h.row(waiting.episodeKey)?.status).toBe("queued");
    for (const d of sent.filter((x) => x.groupKey !== groups[2])) h.finishEpisode(d, 1, 1);
    // both repeats of the group are over (dropped), so the group resolved as cut and its rows are gone
    expect(h.row(waiting.episodeKey)).toBeUndefined();
    expect(h.state.steps["0"]).toMatchObject({ groupsCut: 1, cutGroupKeys: [groups[2]] });
    h.advance(120_000);
    expect(h.takeDispatches().filter((d) => d.episodeKey === waiting.episodeKey)).toEqual([]);
  });

  it("a batch closed by another client while the window is split over it is not a reason to cut: the window goes on into the next batch", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 1, maxParallel: 1, maxEnvWorker: 8, overProvision: 1, throttleRatio: 2 }), { gsm8k: 10 });
    h.start();
    h.rolling(1);
    const [first] = h.takeDispatches();
    h.finishEpisode(first!, 1, 1); // lands in batch 1: 1 complete task of 2
    h.rolling(2); // another client closed batch 1: the engine trained it
    expect(h.state.batches["0:1"]?.state).toBe("closed");
    expect(h.state.steps["0"]?.cutAtMs).toBeNull();
    const [second] = h.takeDispatches();
    expect(second).toMatchObject({ windowIndex: 0 });
  });

  it("a stopping run cuts nothing: its in-flight repeats finish or stop the stop's way", () => {
    const { h, sent } = withExtra();
    const groups = [...new Set(sent.map((d) => d.groupKey))];
    for (const d of sent) h.claim(d, 1);
    h.apply({ type: "stopRequested", reason: "test" });
    for (const d of sent.filter((x) => x.groupKey !== groups[2])) {
      h.outcome(d, { kind: "end", reward: 1 });
      h.report(d, "ended");
    }
    expect(h.state.run.phase).toBe("draining");
    expect(h.state.steps["0"]?.cutAtMs ?? null).toBeNull();
    expect(sent.filter((d) => d.groupKey === groups[2]).every((d) => h.row(d.episodeKey)?.cut === undefined)).toBe(true);
  });

  it("a run stored before maxEnvWorker was in its config bounds its extras by maxParallel", () => {
    const make = (dropMaxEnvWorker: boolean) => {
      const h = new Harness(specInput({ batchSize: 2, numRepeat: 2, maxParallel: 2, maxEnvWorker: 8, overProvision: 1, throttleRatio: 2 }), { gsm8k: 10 });
      if (dropMaxEnvWorker) delete (h.state.run.config as { maxEnvWorker?: number }).maxEnvWorker;
      h.start();
      h.rolling(1);
      return h.state.steps["0"]?.extraGroups;
    };
    expect(make(false)).toBe(2); // floor(8 / 2) = 4 ≥ the ask of 2
    expect(make(true)).toBe(1); // floor(maxParallel 2 / 2) = 1
  });

  it("a cut repeat whose consumer goes quiet: its lease aborts the claim once on the server, and it is not a failure", () => {
    const { h, sent } = withExtra();
    const groups = [...new Set(sent.map((d) => d.groupKey))];
    const slow = sent.filter((d) => d.groupKey === groups[2]);
    for (const d of slow) h.claim(d, 1);
    for (const d of sent.filter((x) => x.groupKey !== groups[2])) h.finishEpisode(d, 1, 1);
    const failedBefore = h.state.run.totals.attemptsFailed;
    const d = h.advance(30_001);
    const aborts = d.commands.filter((c) => c.type === "abortEpisodes");
    expect(aborts.length).toBeGreaterThan(0);
    expect(JSON.stringify(aborts)).toContain(`uuid-${slow[0]!.episodeKey}-1`);
    expect(h.state.run.totals.attemptsFailed).toBe(failedBefore);
    expect(h.state.steps["0"]).toMatchObject({ groupsCut: 1 });
  });

  it("an end recorded before the cut still ends (the server holds the batch): its group completes and is not deferred", () => {
    const { h, sent } = withExtra();
    const groups = [...new Set(sent.map((d) => d.groupKey))];
    const slow = sent.filter((d) => d.groupKey === groups[2]);
    for (const d of slow) h.claim(d, 1);
    h.outcome(slow[0]!, { kind: "end", reward: 1 });
    h.outcome(slow[1]!, { kind: "end", reward: 1 });
    for (const d of sent.filter((x) => x.groupKey !== groups[2])) h.finishEpisode(d, 1, 1);
    expect(h.row(slow[0]!.episodeKey)).toMatchObject({ status: "reporting" });
    expect(h.row(slow[0]!.episodeKey)?.cut).toBeUndefined();
    h.report(slow[0]!, "ended");
    h.report(slow[1]!, "ended");
    expect(h.state.steps["0"]).toMatchObject({ groupsCompleted: 3, groupsCut: 0 });
    expect(h.state.run.deferred[0]).toEqual([]);
  });

  it("without extras a complete batch cuts nothing: the running repeats may still end", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 1, maxParallel: 2, maxSteps: 1 }), { gsm8k: 10 });
    h.start();
    h.rolling(1);
    const [a, b] = h.takeDispatches();
    h.claim(b!, 1);
    h.finishEpisode(a!, 1, 1);
    h.engine("ENGINE.ROLLING_POST", 1);
    expect(h.row(b!.episodeKey)?.cut).toBeUndefined();
    expect(h.outcome(b!, { kind: "end", reward: 1 }).ack.status).toBe("applied");
  });
});

describe("a window's extras count other clients' claims from the last pool read", () => {
  /** batch 2 × 2, overProvision 1, throttleRatio 2, max_env_worker 8: 2 extras when nobody else holds a slot */
  function served(foreignRunningPerStep: number[]) {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 2, maxParallel: 8, maxEnvWorker: 8, overProvision: 1, throttleRatio: 2 }), { gsm8k: 40 });
    h.start();
    foreignRunningPerStep.forEach((foreign, i) => {
      const step = i + 1;
      h.rolling(step);
      const sent = h.takeDispatches();
      const groups = [...new Set(sent.map((d) => d.groupKey))];
      // the first two groups end; the pool then shows `foreign` tasks another client is serving; the rest is cut
      const ends = sent.filter((d) => groups.indexOf(d.groupKey) < 2);
      for (const d of ends) h.finishEpisode(d, 1, step);
      const runningTaskIds = Object.fromEntries([...Array(foreign).keys()].map((k) => [`other-${step}-${k}`, `other:${k}`]));
      const ours = ends.map((d) => `uuid-${d.episodeKey}-${d.attempt}`);
      h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING_POST", globalStep: step, pool: { globalStep: step, episodeUuids: ours, completedTasks: 2, completedTaskTarget: 2, taskEpisodes: { a: ours.slice(0, 2), b: ours.slice(2) }, runningTaskIds } });
      for (const d of sent.filter((x) => groups.indexOf(x.groupKey) >= 2)) if (h.row(d.episodeKey)?.status === "dispatched") h.claim(d, step);
      for (const d of sent) if (h.row(d.episodeKey)?.status === "running") {
        h.outcome(d, { kind: "abort", cause: "batch_closed" });
        h.report(d, "aborted");
      }
    });
    h.rolling(foreignRunningPerStep.length + 1);
    return h.state.steps[String(foreignRunningPerStep.length)];
  }

  it.each([
    [[0], 2],
    [[2], 2], // 4 episodes held by others: floor((8 − 4) / 2) = 2
    [[3], 1], // 6 held: floor(2 / 2) = 1
    [[4], 0], // 8 held: no room
    [[4, 0], 2], // the latest batch counts, not an older one
    [[0, 3], 1],
  ] as const)("foreign running tasks per step %j: the next window opens %i extras", (foreign, extras) => {
    const step = served([...foreign]);
    expect(step?.extraGroups ?? 0).toBe(extras);
    expect(step?.groupsOpened).toBe(2 + extras);
  });
});

describe("over-provisioning keeps exact quotas and batch truth", () => {
  /** a heavy tail: about one episode in five takes 60 s, the others 5 s (by its key: the same in every run) */
  const tail = (d: { episodeKey: string; attempt: number }) => {
    let x = d.attempt;
    for (const ch of d.episodeKey) x = (x * 31 + ch.charCodeAt(0)) % 1_000_003;
    return x % 5 === 0 ? 60_000 : 5_000;
  };

  it.each([0, 0.5, 1])("overProvision %s over 2 epochs of 12 tasks: every batch closes complete, every task is complete in a trained batch in each epoch, the run counts what the server holds", (ratio) => {
    const h = new Harness(specInput({ batchSize: 4, numRepeat: 2, epochs: 2, overProvision: ratio }), { gsm8k: 12 });
    const run = runWithFakeSwarm(h, { durationMs: tail, maxSteps: 20_000 });
    expect(h.state.run.phase).toBe("finished");
    const completeIn = new Map<string, number>();
    for (const batch of run.batches) {
      expect(completeTasks(batch, 2)).toBeGreaterThanOrEqual(4);
      for (const [task, rewards] of batch) if (rewards.length >= 2) completeIn.set(task, (completeIn.get(task) ?? 0) + 1);
    }
    // 24 task-epochs: the last batch may be topped up from a further pass, so each task is complete 2 or 3 times
    const tasks = [...Array(12).keys()].map((i) => taskIdOf({ source: "gsm8k", taskIndex: i }));
    for (const t of tasks) expect(completeIn.get(t) ?? 0).toBeGreaterThanOrEqual(2);
    const summary = finishOf(h);
    expect(summary).toMatchObject({ verdict: "trained", untrainedRewards: 0 });
    // the run's counts equal what the server's batches hold
    const held = run.batches.reduce((n, b) => n + [...b.values()].reduce((m, r) => m + r.length, 0), 0);
    expect(summary?.totals.episodesEnded).toBe(held);
    if (ratio > 0) expect(summary?.totals.groupsCut).toBeGreaterThan(0);
    else expect(summary?.totals.groupsCut).toBe(0);
  });

  it("the tail costs fewer steps' wall time with extras than without", () => {
    const time = (ratio: number) => {
      const h = new Harness(specInput({ batchSize: 4, numRepeat: 2, epochs: 1, overProvision: ratio, maxSteps: 2 }), { gsm8k: 12 });
      runWithFakeSwarm(h, { durationMs: tail, maxSteps: 20_000 });
      expect(h.state.run.phase).toBe("finished");
      return h.nowMs;
    };
    expect(time(1)).toBeLessThan(time(0));
  });
});
