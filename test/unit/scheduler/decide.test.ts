import { describe, expect, it } from "vitest";
import { nextWakeAtMs, type FinishRun } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

const finishOf = (h: Harness) => h.commands.find((c): c is FinishRun => c.type === "finishRun");

describe("engine gate and dispatch (BC-25)", () => {
  it("BC-25 dispatches nothing before the engine is ROLLING, then on the edge into ROLLING", () => {
    const h = new Harness(specInput({ maxParallel: 12 }));
    const started = h.start();
    expect(started.commands).toContainEqual({ type: "pollEngineStatus", swarms: ["default"] });
    h.engine("ENGINE.BOOTING", null);
    h.advance(5000);
    expect(h.takeDispatches()).toEqual([]);
    expect(h.state.run.windowsOpened).toBe(0);
    h.rolling(1);
    const sent = h.takeDispatches();
    expect(sent).toHaveLength(12);
    expect(h.state.steps["0"]?.globalStep).toBe(1);
  });

  it("BC-25 stops dispatching when the engine leaves ROLLING mid-window and resumes on the edge back, with no sleep", () => {
    const h = new Harness(specInput({ maxParallel: 8 }));
    h.start();
    h.rolling(1);
    const first = h.takeDispatches();
    expect(first).toHaveLength(8);
    h.engine("ENGINE.ROLLING_POST", 1);
    for (const d of first.slice(0, 4)) h.finishEpisode(d, 1, 1);
    expect(h.takeDispatches()).toEqual([]); // slots free, but the gate is closed
    h.rolling(1); // back to ROLLING (same step): dispatch resumes immediately
    expect(h.takeDispatches()).toHaveLength(4);
  });

  it("BC-25 a claim failure that names a non-ROLLING status closes the gate until a poll sees ROLLING again", () => {
    const h = new Harness(specInput({ maxParallel: 4 }));
    h.start();
    h.rolling(1);
    const [d] = h.takeDispatches();
    if (!d) throw new Error("no dispatch");
    h.apply({ type: "claimFailed", episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, kind: "syncing", swarm: "default", engineStatus: "ENGINE.WEIGHT_SYNCING" });
    expect(h.state.run.engines[0]?.engineStatus).toBe("ENGINE.WEIGHT_SYNCING");
    expect(h.row(d.episodeKey)).toMatchObject({ status: "queued", attempt: 1, claimFailures: 1 });
    const backoff = (h.row(d.episodeKey)?.notBeforeMs ?? 0) - h.nowMs;
    expect(backoff).toBeGreaterThanOrEqual(15_000);
    expect(backoff).toBeLessThanOrEqual(15_000 * 1.25);
    h.advance(1000);
    expect(h.takeDispatches()).toEqual([]);
    h.rolling(1); // the edge releases the back-off at once
    expect(h.takeDispatches().map((x) => x.episodeKey)).toEqual([d.episodeKey]);
  });
});

describe("task groups and batch windows", () => {
  it("opens batchSize groups of numRepeat episodes with one task each, all in the window, dispatched group by group", () => {
    const h = new Harness(specInput({ batchSize: 8, numRepeat: 4, maxParallel: 32 }));
    h.start();
    h.rolling(1);
    const sent = h.takeDispatches();
    expect(sent).toHaveLength(32);
    const groups = new Map<string, typeof sent>();
    for (const d of sent) groups.set(d.groupKey, [...(groups.get(d.groupKey) ?? []), d]);
    expect(groups.size).toBe(8);
    for (const members of groups.values()) {
      expect(members.map((m) => m.repeat)).toEqual([0, 1, 2, 3]);
      expect(new Set(members.map((m) => m.taskIndex)).size).toBe(1);
      expect(new Set(members.map((m) => m.windowIndex))).toEqual(new Set([0]));
    }
    expect(sent.map((d) => d.groupKey)).toEqual([...groups.keys()].flatMap((k) => [k, k, k, k])); // contiguous
    expect(sent[0]?.throttle).toEqual({ ratio: 1.5, expected_batch_size: 8, expected_num_repeat: 4 });
    expect(sent[0]).toMatchObject({ episodeType: "train", swarms: ["default"], discardEpisodeTimeoutSeconds: 240, attempt: 1 });
  });

  it("opens the next window only after the last is resolved AND the engine is ROLLING at a higher step (no pipelining)", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 2 }));
    h.start();
    h.rolling(1);
    expect(h.serveAll(1)).toBe(4);
    expect(h.state.run.windowsOpened).toBe(1);
    h.advance(3000);
    h.rolling(1); // still step 1: the server has not trained the batch
    expect(h.takeDispatches()).toEqual([]);
    h.engine("ENGINE.ROLLING_POST", 1);
    h.engine("ENGINE.WEIGHT_SYNCING", 1);
    expect(h.takeDispatches()).toEqual([]);
    h.rolling(2);
    const next = h.takeDispatches();
    expect(next).toHaveLength(4);
    expect(next.every((d) => d.windowIndex === 1)).toBe(true);
    expect(h.state.steps["1"]?.globalStep).toBe(2);
  });

  it("keeps at most maxParallel episodes in flight and refills a slot as soon as one is freed", () => {
    const h = new Harness(specInput({ batchSize: 8, numRepeat: 4, maxParallel: 10 }));
    h.start();
    h.rolling(1);
    const first = h.takeDispatches();
    expect(first).toHaveLength(10);
    expect(h.inFlight()).toBe(10);
    h.finishEpisode(first[0]!, 1, 1);
    expect(h.takeDispatches()).toHaveLength(1);
    expect(h.inFlight()).toBe(10);
  });
});

describe("stop conditions", () => {
  it("maxSteps: after the last window resolves the run waits for the engine to move past its step, then finishes", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 2, maxSteps: 2 }));
    h.start();
    h.rolling(5);
    h.serveAll(5);
    h.rolling(6);
    h.serveAll(6);
    expect(h.state.run.phase).toBe("finishing");
    expect(h.state.run.windowsOpened).toBe(2);
    h.engine("ENGINE.WEIGHT_SYNCING", 6);
    expect(h.state.run.phase).toBe("finishing");
    h.rolling(7);
    expect(h.state.run.phase).toBe("finished");
    expect(h.takeDispatches()).toEqual([]);
    expect(finishOf(h)?.summary).toMatchObject({ stopReason: "maxSteps", totals: { windows: 2, episodesEnded: 8 } });
    expect(nextWakeAtMs(h.state)).toBeNull();
  });

  it("epochs done with a partial final window: the batch holding it is topped up with 2 groups, and the run finishes once the server trained it", () => {
    const h = new Harness(specInput({ batchSize: 4, numRepeat: 2, epochs: 1 }), { gsm8k: 6 });
    h.start();
    h.rolling(1);
    h.serveAll(1);
    h.rolling(2);
    expect(h.state.steps["1"]).toMatchObject({ plannedGroups: 2, partial: true });
    h.serveAll(2); // the 2 planned groups, then the 2 top-up groups (tasks from a further pass: the data is used up)
    expect(h.state.steps["1"]).toMatchObject({ groupsOpened: 4, topUpGroups: 2, groupsCompleted: 4 });
    expect(h.state.run.phase).toBe("finishing"); // 4 complete tasks sit in batch 2: the engine closes it on its own
    h.rolling(3);
    expect(h.state.run.phase).toBe("finished");
    expect(finishOf(h)?.summary).toMatchObject({
      stopReason: "epochsDone", untrainedRewards: 0, verdict: "trained",
      totals: { windows: 2, episodesEnded: 16, groupsCompleted: 8, groupsToppedUp: 2 },
    });
  });

  it("epochs done with a partial final window and topUpLastBatch false: finishes at once and says exactly how many rewards are untrained", () => {
    const h = new Harness(specInput({ batchSize: 4, numRepeat: 2, epochs: 1, topUpLastBatch: false }), { gsm8k: 6 });
    h.start();
    h.rolling(1);
    h.serveAll(1);
    h.rolling(2);
    h.serveAll(2);
    expect(h.state.run.phase).toBe("finished");
    expect(finishOf(h)?.summary).toMatchObject({ stopReason: "epochsDone", untrainedRewards: 4, verdict: "untrained", totals: { windows: 2, episodesEnded: 12 } });
  });

  it("mixed source sizes: the run stops when the first source has used its epochs (the mix is never broken)", () => {
    const h = new Harness(specInput({ batchSize: 4, numRepeat: 1, datasets: [{ name: "small" }, { name: "big" }] }), { small: 4, big: 100 });
    h.start();
    for (let step = 1; h.state.run.phase === "running"; step++) {
      h.rolling(step);
      h.serveAll(step);
    }
    h.rolling(99);
    expect(h.state.run).toMatchObject({ phase: "finished", stopReason: "epochsDone", windowsOpened: 2 });
    expect(Object.values(h.state.steps).map((s) => s.sourceGroups)).toEqual([{ small: 2, big: 2 }, { small: 2, big: 2 }]);
  });

  it("drain on stop: no new dispatch, queued episodes dropped, a late claim refused, in-flight ones finish, then done", () => {
    const h = new Harness(specInput({ batchSize: 4, numRepeat: 2, maxParallel: 4 }));
    h.start();
    h.rolling(1);
    const sent = h.takeDispatches();
    h.claim(sent[0]!, 1);
    h.claim(sent[1]!, 1);
    const stop = h.apply({ type: "stopRequested", reason: "user" });
    expect(stop.ack).toEqual({ status: "applied" });
    expect(h.state.run.phase).toBe("draining");
    expect([...h.state.episodes.values()].filter((r) => r.status === "queued")).toEqual([]);
    const late = h.claim(sent[2]!, 1);
    expect(late.ack.status).toBe("stale"); // the consumer aborts its claim
    h.outcome(sent[0]!, { kind: "end", reward: 1 });
    h.report(sent[0]!, "ended");
    h.apply({ type: "claimFailed", episodeKey: sent[3]!.episodeKey, attempt: 1, dispatchId: 1, kind: "noEpisodes" });
    expect(h.state.run.phase).toBe("draining");
    h.outcome(sent[1]!, { kind: "abort", cause: "function_error" });
    h.report(sent[1]!, "aborted");
    expect(h.state.run.phase).toBe("finished");
    const summary = finishOf(h)?.summary;
    expect(summary).toMatchObject({ stopReason: "stopRequested", totals: { episodesEnded: 1, groupsAbandoned: 4 } });
    expect(summary?.failuresByCause).toEqual({ function_error: 1 });
    expect(h.apply({ type: "stopRequested" }).ack).toEqual({ status: "duplicate" });
  });
});

describe("engine restarts", () => {
  it("BC-28 a restart mid-window wipes the server's batch: the group whose end it held runs again, the window waits for it, then the next opens", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 1 }));
    h.start();
    h.rolling(3);
    const [a, b] = h.takeDispatches();
    h.finishEpisode(a!, 1, 3); // accepted into batch 3 of the first engine run
    h.claim(b!, 3);
    h.engine("ENGINE.OFFLINE", 0); // another client stops the engine: every record is wiped (spec §4.3)
    expect(h.state.batches["0:3"]).toMatchObject({ state: "wiped", episodesLanded: 1 });
    expect(h.state.run.totals).toMatchObject({ episodesWiped: 1, groupsRerun: 1, episodesEnded: 0 });
    h.outcome(b!, { kind: "abort", cause: "infra_error" }); // LLM 404 after the wipe: aborted locally, re-queued
    h.report(b!, "aborted");
    h.engine("ENGINE.BOOTING", 0);
    h.rolling(3); // resumed from the same checkpoint
    expect(h.state.steps["0"]?.closedAtMs).toBeNull();
    const again = h.takeDispatches();
    expect(again.map((x) => [x.episodeKey, x.attempt]).sort()).toEqual([[`${a!.groupKey}~1#0`, 1], [b!.episodeKey, 2]].sort());
    for (const x of again) h.finishEpisode(x, 1, 3);
    expect(h.state.batches["1:3"]).toMatchObject({ state: "open", episodesLanded: 2 });
    expect(h.state.run.windowsOpened).toBe(1); // batch 3 of the new engine run holds window 0: wait for it
    h.rolling(4);
    expect(h.state.batches["1:3"]?.state).toBe("closed");
    expect(h.state.run.windowsOpened).toBe(2); // no stall waiting for a step that will not come
    expect(h.state.steps["0"]).toMatchObject({ rerunGroups: 1, episodesWiped: 1, episodesEnded: 2, landed: { "1:3": 2 } });
  });
});

describe("nextWakeAtMs", () => {
  it("is null before start, then the earliest of the next poll, a lease deadline and a claim back-off", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 1, tuning: { dispatchLeaseSeconds: 51, statusPollRollingMs: 60_000 } }));
    expect(nextWakeAtMs(h.state)).toBeNull();
    const started = h.start();
    expect(started.commands.some((c) => c.type === "pollEngineStatus")).toBe(true);
    expect(h.state.run.nextPollAtMs).toBe(h.nowMs + 1000); // polled while the gate was closed: the waiting interval
    h.rolling(1);
    const t0 = h.nowMs;
    expect(nextWakeAtMs(h.state)).toBe(t0 + 1000);
    const polled = h.advance(1000);
    expect(polled.commands).toContainEqual(expect.objectContaining({ type: "pollEngineStatus", swarms: ["default"] }));
    expect(h.state.run.nextPollAtMs).toBe(t0 + 1000 + 60_000); // gate open: the rolling interval
    expect(nextWakeAtMs(h.state)).toBe(t0 + 51_000); // the dispatch lease comes first
    const [d] = h.takeDispatches();
    h.apply({ type: "claimFailed", episodeKey: d!.episodeKey, attempt: 1, dispatchId: 1, kind: "noEpisodes" });
    const notBefore = h.row(d!.episodeKey)?.notBeforeMs ?? 0;
    expect(notBefore - t0).toBeGreaterThanOrEqual(2000);
    expect(nextWakeAtMs(h.state)).toBe(Math.min(notBefore, t0 + 61_000));
    h.nowMs = notBefore;
    h.apply({ type: "tick" });
    expect(h.takeDispatches().map((x) => x.episodeKey)).toEqual([d!.episodeKey]);
    expect(nextWakeAtMs(h.state)).toBeGreaterThan(h.nowMs);
  });
});
