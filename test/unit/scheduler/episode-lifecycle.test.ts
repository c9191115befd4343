import { describe, expect, it } from "vitest";
import { isDispatchCurrent, type RunSpecInput, type SchedulerEvent } from "../../../src/scheduler/index.ts";
import { Harness, rollingRun, specInput } from "./harness.ts";

const started = (overrides: Partial<RunSpecInput> = {}) => rollingRun(specInput({ batchSize: 2, numRepeat: 2, ...overrides }));

describe("idempotent events (BC-45, BC-47)", () => {
  it("BC-45 applying any episode event twice changes nothing the second time and says duplicate", () => {
    const { h, sent } = started();
    const d = sent[0]!;
    const ref = { episodeKey: d.episodeKey, attempt: d.attempt };
    const events: SchedulerEvent[] = [
      { type: "episodeClaimed", ...ref, dispatchId: d.dispatchId, claims: [{ swarm: "default", episodeUuid: "u1", globalStep: 1 }] },
      { type: "episodeOutcomeRecorded", ...ref, outcome: { kind: "end", reward: 0.5 } },
      { type: "episodeReported", ...ref, result: "ended" },
    ];
    for (const event of events) {
      expect(h.apply(event).ack).toEqual({ status: "applied" });
      const before = h.state;
      const again = h.apply(event);
      expect(again.ack.status).toBe("duplicate");
      expect(again.state).toBe(before);
      expect(again.changes).toEqual({ run: null, episodes: [], deletedEpisodeKeys: [], steps: [], evalTasks: [], batches: [], landed: [] });
      expect(again.commands).toEqual([]);
    }
    expect(h.state.run.totals.episodesEnded).toBe(1);
  });

  it("BC-47 a duplicate outcome answers with the outcome already recorded, so a retried RPC carries on with it", () => {
    const { h, sent } = started();
    h.claim(sent[0]!, 1);
    h.outcome(sent[0]!, { kind: "end", reward: 1 });
    expect(h.outcome(sent[0]!, { kind: "end", reward: 1 }).ack).toEqual({ status: "duplicate", outcome: { kind: "end", reward: 1 } });
  });

  it("BC-47 a second claim for the same (episodeKey, attempt) with other uuids is refused: the episode has one owner", () => {
    const { h, sent } = started();
    h.claim(sent[0]!, 1, "first");
    expect(h.claim(sent[0]!, 1, "second").ack.status).toBe("stale");
    expect(h.row(sent[0]!.episodeKey)?.claims.map((c) => c.episodeUuid)).toEqual(["first"]);
  });

  it("events for closed attempts are stale and unknown episodes are unknown; neither changes the state", () => {
    const { h, sent } = started();
    const d = sent[0]!;
    h.claim(d, 1);
    h.outcome(d, { kind: "abort", cause: "no_llm_call" });
    h.report(d, "aborted");
    expect(h.row(d.episodeKey)).toMatchObject({ attempt: 2, status: "dispatched" }); // retried at once: a slot was free
    const before = h.state;
    expect(h.outcome(d, { kind: "end", reward: 1 }).ack.status).toBe("stale"); // the old consumer must abort, never end
    expect(h.apply({ type: "episodeReported", episodeKey: "nope/0/0#0", attempt: 1, result: "ended" }).ack.status).toBe("unknown");
    expect(h.state).toBe(before);
  });
});

describe("retries under the same task id", () => {
  it("BC-23 one expired episode leads to no duplicate end and exactly one re-queued repeat", () => {
    const { h, sent } = started({ maxParallel: 1 });
    const d = sent[0]!;
    h.claim(d, 1);
    h.outcome(d, { kind: "end", reward: 1 });
    const expired = h.report(d, "expired");
    expect(h.row(d.episodeKey)).toMatchObject({ status: "dispatched", attempt: 2, lastCause: "expired", outcome: null });
    expect(expired.commands.filter((c) => c.type === "dispatchEpisodes")).toEqual([
      { type: "dispatchEpisodes", episodes: [expect.objectContaining({ episodeKey: d.episodeKey, attempt: 2, groupKey: d.groupKey })] },
    ]);
    expect(h.report(d, "expired").ack.status).toBe("stale"); // the duplicate report of attempt 1 re-queues nothing
    expect(h.dispatched().filter((x) => x.episodeKey === d.episodeKey)).toHaveLength(2); // attempt 1 and attempt 2 only
    expect(h.commands.some((c) => c.type === "resolveOutbox" || c.type === "abortEpisodes")).toBe(false);
    expect(h.state.run.failuresByCause).toEqual({ expired: 1 });
  });

  it("BC-29 and BC-22 aborted repeats (no_llm_call, invalid_reward) are retried with the same task and counted by cause", () => {
    const { h, sent } = started();
    for (const [d, cause] of [[sent[0]!, "no_llm_call"], [sent[1]!, "invalid_reward"]] as const) {
      h.claim(d, 1);
      h.outcome(d, { kind: "abort", cause });
      h.report(d, "aborted");
      expect(h.row(d.episodeKey)).toMatchObject({ status: "dispatched", attempt: 2, taskIndex: d.taskIndex, lastCause: cause });
    }
    expect(h.state.run.failuresByCause).toEqual({ no_llm_call: 1, invalid_reward: 1 });
  });

  it("BC-32 retries are capped at maxAttempts; then the group is dropped, logged, and replaced in the same window", () => {
    const { h, sent } = started({ batchSize: 2, numRepeat: 2, maxParallel: 4, maxAttempts: 3 });
    const bad = sent[0]!;
    const sibling = sent.find((s) => s.groupKey === bad.groupKey && s.repeat === 1)!;
    h.claim(sibling, 1); // the sibling is running when the group is dropped
    for (let attempt = 1; attempt <= 3; attempt++) {
      const ref = { episodeKey: bad.episodeKey, attempt, dispatchId: h.row(bad.episodeKey)!.dispatchId };
      h.claim(ref, 1);
      h.outcome(ref, { kind: "abort", cause: "function_error" });
      h.report(ref, "aborted");
    }
    expect(h.row(bad.episodeKey)).toMatchObject({ status: "failed", attempt: 3 });
    expect(h.row(sibling.episodeKey)).toMatchObject({ status: "running", groupDropped: true });
    expect(h.commands).toContainEqual(expect.objectContaining({ type: "log", level: "warn", message: "task group dropped after maxAttempts tries of one repeat" }));
    const step = h.state.steps["0"]!;
    expect(step).toMatchObject({ groupsOpened: 3, replacementGroups: 1 });
    const replacement = [...h.state.episodes.values()].filter((r) => ![bad.groupKey, sent[2]!.groupKey].includes(r.groupKey));
    expect(replacement.map((r) => [r.source, r.windowIndex, r.attempt])).toEqual([["gsm8k", 0, 1], ["gsm8k", 0, 1]]);
    // the sibling ends: counted, and the dropped group resolves as dropped; its failure would not have been retried
    h.outcome(sibling, { kind: "end", reward: 1 });
    h.report(sibling, "ended");
    expect(h.state.steps["0"]).toMatchObject({ groupsDropped: 1, droppedGroupKeys: [bad.groupKey], episodesEnded: 1 });
    expect(h.state.run.failuresByCause).toEqual({ function_error: 3 });
    // the window still fills with batchSize complete groups, then closes
    for (const d of sent.filter((x) => x.groupKey !== bad.groupKey)) h.finishEpisode(d, 1, 1);
    const replacementSent = h.takeDispatches().filter((x) => x.groupKey !== bad.groupKey);
    expect(replacementSent.map((x) => x.episodeKey).sort()).toEqual(replacement.map((r) => r.episodeKey).sort());
    for (const d of replacementSent) h.finishEpisode(d, 1, 1);
    expect(h.state.steps["0"]).toMatchObject({ groupsCompleted: 2, groupsDropped: 1, resolvedAtMs: h.nowMs });
  });

  it("BC-32 a data error (invalid_task) drops the group at once instead of burning maxAttempts tries", () => {
    const { h, sent } = started({ batchSize: 2, numRepeat: 2, maxParallel: 4, maxAttempts: 3 });
    const bad = sent[0]!;
    h.claim(bad, 1);
    h.outcome(bad, { kind: "abort", cause: "invalid_task" });
    h.report(bad, "aborted");
    expect(h.row(bad.episodeKey)).toMatchObject({ status: "failed", attempt: 1, lastCause: "invalid_task" });
    expect(h.state.run.failuresByCause).toEqual({ invalid_task: 1 });
    expect(h.state.steps["0"]).toMatchObject({ replacementGroups: 1 });
  });

  it("a claim failure is not an attempt: the back-off doubles up to the cap, with jitter from the seeded RNG", () => {
    const delays = (seed: number) => {
      const { h, sent } = started({ batchSize: 1, numRepeat: 1, maxParallel: 1, seed, tuning: { claimRetryMs: 1000, claimRetryMaxMs: 8000 } });
      const d = sent[0]!;
      const out: number[] = [];
      for (let i = 0; i < 6; i++) {
        h.apply({ type: "claimFailed", episodeKey: d.episodeKey, attempt: 1, dispatchId: i + 1, kind: "noEpisodes" });
        const row = h.row(d.episodeKey)!;
        expect(row).toMatchObject({ status: "queued", attempt: 1, claimFailures: i + 1 });
        out.push(row.notBeforeMs! - h.nowMs);
        h.nowMs = row.notBeforeMs!;
        h.apply({ type: "tick" }); // re-dispatched at the end of the back-off
        expect(h.row(d.episodeKey)?.status).toBe("dispatched");
      }
      return out;
    };
    const a = delays(1);
    [1000, 2000, 4000, 8000, 8000, 8000].forEach((base, i) => {
      expect(a[i]).toBeGreaterThanOrEqual(base);
      expect(a[i]).toBeLessThanOrEqual(base * 1.25);
    });
    expect(delays(1)).toEqual(a);
    expect(delays(2)).not.toEqual(a);
  });

  it("a failed sendBatch puts the episodes back in the queue without spending an attempt", () => {
    const { h, sent } = started({ maxParallel: 2 });
    const refs = sent.map((d) => ({ episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId }));
    expect(h.apply({ type: "dispatchFailed", episodes: refs, reason: "queue down" }).ack).toEqual({ status: "applied" });
    expect(refs.map((r) => h.row(r.episodeKey)?.status)).toEqual(["queued", "queued"]);
    expect(h.state.run.claimFailuresByKind).toEqual({ dispatch: 2 });
    expect(h.apply({ type: "dispatchFailed", episodes: refs }).ack).toEqual({ status: "duplicate" });
  });
});

describe("multi-swarm episodes (issue 4 §4)", () => {
  it("dispatches only when every swarm is ROLLING, and takes the step from the first swarm's claim", () => {
    const h = new Harness(specInput({ swarms: [{ name: "policy", url: "http://a:1" }, { name: "judge", url: "http://b:1" }], batchSize: 1, numRepeat: 1 }));
    h.start();
    h.apply({ type: "engineStatusSeen", swarm: "policy", engineStatus: "ENGINE.ROLLING", globalStep: 3 });
    expect(h.takeDispatches()).toEqual([]);
    h.apply({ type: "engineStatusSeen", swarm: "judge", engineStatus: "ENGINE.ROLLING", globalStep: 40 });
    const [d] = h.takeDispatches();
    expect(d?.swarms).toEqual(["policy", "judge"]);
    expect(h.state.steps["0"]?.globalStep).toBe(3);
    h.apply({ type: "episodeClaimed", episodeKey: d!.episodeKey, attempt: 1, dispatchId: 1, claims: [
      { swarm: "policy", episodeUuid: "p1", globalStep: 3 }, { swarm: "judge", episodeUuid: "j1", globalStep: 40 },
    ] });
    expect(h.row(d!.episodeKey)).toMatchObject({ status: "running", globalStep: 3 });
    expect(h.apply({ type: "engineStatusSeen", swarm: "other", engineStatus: "ENGINE.ROLLING", globalStep: 1 }).ack.status).toBe("unknown");
  });
});

describe("isDispatchCurrent", () => {
  it("is true only for the latest message of the current attempt while it waits for its claim", () => {
    const { h, sent } = started({ batchSize: 1, numRepeat: 1, maxParallel: 1 });
    const d = sent[0]!;
    expect(isDispatchCurrent(h.state, d)).toBe(true);
    h.apply({ type: "claimFailed", episodeKey: d.episodeKey, attempt: 1, dispatchId: 1, kind: "noEpisodes" });
    h.nowMs = h.row(d.episodeKey)!.notBeforeMs!;
    h.apply({ type: "tick" });
    expect(isDispatchCurrent(h.state, d)).toBe(false); // the old message, redelivered
    expect(isDispatchCurrent(h.state, { ...d, dispatchId: 2 })).toBe(true);
    h.claim({ ...d, dispatchId: 2 }, 1);
    expect(isDispatchCurrent(h.state, { ...d, dispatchId: 2 })).toBe(false);
  });
});

describe("outcomes in the run's terms", () => {
  it("an eval run reads an end outcome as a score; a train run reads a score as an abort (nothing was delivered)", () => {
    const train = started({ batchSize: 1, numRepeat: 1 });
    const d = train.sent[0]!;
    train.h.claim(d, 1);
    train.h.outcome(d, { kind: "score", reward: 1 });
    expect(train.h.row(d.episodeKey)?.outcome).toEqual({ kind: "abort", cause: "score_in_train_run" });
    const ev = rollingRun(specInput({ episodeType: "eval", batchSize: 1, numRepeat: 1, maxParallel: 1 }), { gsm8k: 1 });
    const e = ev.sent[0]!;
    ev.h.claim(e, 1);
    ev.h.outcome(e, { kind: "end", reward: 0.5 });
    ev.h.report(e, "aborted");
    expect(ev.h.state.evalTasks[e.groupKey]?.rewards).toEqual([0.5]);
  });
});
