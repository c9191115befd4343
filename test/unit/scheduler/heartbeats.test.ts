import { describe, expect, it } from "vitest";
import type { AbortEpisodes, EpisodeDispatch, RunSpecInput } from "../../../src/scheduler/index.ts";
import { type Harness, rollingRun, specInput } from "./harness.ts";

const abortsOf = (h: Harness) => h.commands.filter((c): c is AbortEpisodes => c.type === "abortEpisodes").flatMap((c) => c.episodes);
const started = (h: Harness, d: EpisodeDispatch) => h.apply({ type: "episodeHeartbeat", episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, stage: "started" });
const beat = (h: Harness, d: EpisodeDispatch) => h.apply({ type: "episodeHeartbeat", episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, stage: "running" });

/** A rolling run (1 group × 2 repeats, both dispatched at once). */
const run = (overrides: Partial<RunSpecInput> = {}) => rollingRun(specInput({ batchSize: 1, numRepeat: 2, maxParallel: 2, ...overrides }));

describe("heartbeats: a dead consumer is noticed in seconds (scheduler/heartbeats)", () => {
  it("a running episode whose consumer stops heartbeating is reconciled after the heartbeat lease, not the run lease: claims aborted once, lease_expired, retried", () => {
    const { h, sent } = run();
    const d = sent[0]!;
    started(h, d);
    h.claim(d, 1, "uuid-a");
    h.advance(20_000);
    expect(beat(h, d).ack).toEqual({ status: "applied" });
    h.advance(29_000); // 49 s after the claim, 29 s after the last heartbeat
    expect(abortsOf(h)).toEqual([]);
    expect(h.row(d.episodeKey)).toMatchObject({ status: "running", attempt: 1 });
    h.advance(1_000); // 30 s after the last heartbeat (the run lease is 8 × 240 + 60 s)
    expect(abortsOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: 1, claims: [{ swarm: "default", episodeUuid: "uuid-a" }], reason: "lease_expired" }]);
    expect(h.row(d.episodeKey)).toMatchObject({ attempt: 2, lastCause: "lease_expired" });
    expect(h.state.run.failuresByCause).toEqual({ lease_expired: 1 });
    h.advance(60_000);
    expect(abortsOf(h)).toHaveLength(1);
  });

  it("a quiet consumer (no subrequest left for beats) is back on the run lease: not given up at the heartbeat lease", () => {
    // discard 5 s: run lease 8 × 5 + 60 = 100 s
    const { h, sent } = run({ discardEpisodeTimeoutSeconds: 5 });
    const d = sent[0]!;
    started(h, d);
    h.claim(d, 1, "uuid-a");
    h.advance(10_000);
    expect(h.apply({ type: "episodeHeartbeat", episodeKey: d.episodeKey, attempt: 1, dispatchId: d.dispatchId, stage: "quiet" }).ack).toEqual({ status: "applied" });
    h.advance(60_000); // 70 s after the claim: far past the 30 s heartbeat lease
    expect(abortsOf(h)).toEqual([]);
    expect(h.row(d.episodeKey)).toMatchObject({ status: "running", attempt: 1 });
    h.advance(30_000); // 100 s after the claim: the run lease
    expect(abortsOf(h).map((a) => a.reason)).toEqual(["lease_expired"]);
  });

  it("a consumer given up on cannot post its reward: its heartbeat, outcome and report of the closed attempt are stale", () => {
    const { h, sent } = run();
    const d = sent[0]!;
    started(h, d);
    h.claim(d, 1, "uuid-a");
    h.advance(30_000);
    expect(h.row(d.episodeKey)?.attempt).toBe(2);
    expect(beat(h, d).ack.status).toBe("stale");
    expect(h.outcome(d, { kind: "end", reward: 1 }).ack.status).toBe("stale");
    expect(h.report(d, "ended").ack.status).toBe("stale");
    expect(h.state.run.totals).toMatchObject({ episodesEnded: 0, rewardSum: 0 });
  });

  it("heartbeats never keep a running episode past the run lease counted from its claim", () => {
    // discard 5 s: run lease 8 × 5 + 60 = 100 s
    const { h, sent } = run({ discardEpisodeTimeoutSeconds: 5 });
    const d = sent[0]!;
    started(h, d);
    h.claim(d, 1);
    for (let t = 10; t < 100; t += 10) {
      h.advance(10_000);
      beat(h, d);
      expect(h.row(d.episodeKey)).toMatchObject({ attempt: 1, status: "running" });
    }
    h.advance(10_000); // 100 s after the claim, 10 s after the last heartbeat
    expect(h.row(d.episodeKey)).toMatchObject({ attempt: 2, lastCause: "lease_expired" });
  });

  it("a run whose consumers never report a start keeps the long leases (a claimed episode waits out the run lease)", () => {
    const { h, sent } = run();
    const d = sent[0]!;
    h.claim(d, 1);
    expect(h.row(d.episodeKey)?.deadlineAtMs).toBe(h.nowMs + (8 * 240 + 60) * 1000);
    h.advance(60_000);
    expect(h.row(d.episodeKey)).toMatchObject({ attempt: 1, status: "running" });
    expect(h.state.run.consumersHeartbeat).toBeUndefined();
  });

  it("a heartbeat after the outcome was recorded moves nothing: the report lease applies", () => {
    const { h, sent } = run();
    const d = sent[0]!;
    started(h, d);
    h.claim(d, 1);
    h.outcome(d, { kind: "end", reward: 0.5 });
    const deadline = h.row(d.episodeKey)?.deadlineAtMs;
    h.nowMs += 5_000;
    expect(beat(h, d).ack).toEqual({ status: "duplicate" });
    expect(h.row(d.episodeKey)?.deadlineAtMs).toBe(deadline);
  });

  it("a running heartbeat that overtakes its claim report (a function started early) moves nothing and stops nothing", () => {
    const { h, sent } = run();
    const d = sent[0]!;
    started(h, d);
    expect(beat(h, d).ack).toEqual({ status: "duplicate" });
    expect(h.row(d.episodeKey)?.status).toBe("dispatched");
    expect(h.claim(d, 1).ack).toEqual({ status: "applied" });
  });

  it("a heartbeat only moves a lease: it dispatches nothing and emits no command", () => {
    const { h, sent } = run();
    const d = sent[0]!;
    started(h, d);
    h.claim(d, 1);
    h.nowMs += 10_000;
    const decision = beat(h, d);
    expect(decision.commands).toEqual([]);
    expect(decision.changes.episodes.map((r) => r.episodeKey)).toEqual([d.episodeKey]);
    expect(h.row(d.episodeKey)).toMatchObject({ heartbeatAtMs: h.nowMs, deadlineAtMs: h.nowMs + 30_000 });
  });
});

describe("heartbeats: a lost queue message comes back in seconds", () => {
  /** A run whose consumers report starts, with its second repeat's dispatch redone under the short lease. */
  function withShortLease() {
    const { h, sent } = run({ maxParallel: 1 });
    const first = sent[0]!;
    started(h, first);
    h.finishEpisode(first, 1, 1);
    const [next] = h.takeDispatches();
    return { h, first, next: next! };
  }

  it("a dispatch whose invocation never starts is sent again after 15 s (not the 300 s dispatch lease), not as an attempt, and the next un-started lease doubles", () => {
    const { h, next } = withShortLease();
    expect(h.row(next.episodeKey)?.deadlineAtMs).toBe(h.nowMs + 15_000);
    expect(next.leaseDeadlineAtMs).toBe(h.nowMs + 300_000); // the message carries the started lease
    h.advance(15_000);
    expect(h.row(next.episodeKey)).toMatchObject({ status: "queued", attempt: 1, unstartedExpiries: 1 });
    expect(h.state.run.claimFailuresByKind).toMatchObject({ undelivered: 1 });
    expect(h.state.run.failuresByCause).toEqual({});
    h.advance(5_000); // the back-off (2 s + jitter) passed: dispatched again
    const [again] = h.takeDispatches();
    expect(again).toMatchObject({ episodeKey: next.episodeKey, attempt: 1, dispatchId: next.dispatchId + 1 });
    expect(h.row(next.episodeKey)?.deadlineAtMs).toBe(h.nowMs + 30_000);
  });

  it("after a dispatch was sent again, the old message's start and claim are stale: one claim per slot can count", () => {
    const { h, next } = withShortLease();
    h.advance(15_000);
    // the late invocation of the old message while the row waits for its back-off: stale before and at the claim
    expect(started(h, next).ack.status).toBe("stale");
    expect(h.claim(next, 1, "uuid-old").ack.status).toBe("stale");
    h.advance(5_000);
    const [again] = h.takeDispatches();
    expect(started(h, next).ack.status).toBe("stale");
    expect(h.claim(next, 1, "uuid-old").ack.status).toBe("stale");
    expect(started(h, again!).ack).toEqual({ status: "applied" });
    expect(h.claim(again!, 1, "uuid-new").ack).toEqual({ status: "applied" });
    expect(h.row(next.episodeKey)?.claims.map((c) => c.episodeUuid)).toEqual(["uuid-new"]);
    h.outcome(again!, { kind: "end", reward: 1 });
    h.report(again!, "ended");
    expect(h.state.run.totals.episodesEnded).toBe(2);
  });

  it("the run's first start report gives the dispatches sent before it (on the long lease) the un-started lease from their dispatch", () => {
    const { h, sent } = run(); // both repeats dispatched before any consumer reported a start: the 300 s lease
    const [a, b] = sent;
    const dispatchedAt = h.nowMs;
    expect(h.row(b!.episodeKey)?.deadlineAtMs).toBe(dispatchedAt + 300_000);
    h.nowMs += 3_000;
    expect(started(h, a!).ack).toEqual({ status: "applied" });
    expect(h.row(b!.episodeKey)?.deadlineAtMs).toBe(dispatchedAt + 15_000);
    h.advance(12_000); // 15 s after its dispatch, no start reported: sent again
    expect(h.row(b!.episodeKey)).toMatchObject({ status: "queued", attempt: 1, unstartedExpiries: 1 });
    expect(h.row(a!.episodeKey)).toMatchObject({ status: "dispatched", startedAtMs: dispatchedAt + 3_000 });
  });

  it("a started dispatch keeps the long dispatch lease, counted from its dispatch", () => {
    const { h, next } = withShortLease();
    const dispatchedAt = h.nowMs;
    h.nowMs += 3_000;
    expect(started(h, next).ack).toEqual({ status: "applied" });
    expect(h.row(next.episodeKey)).toMatchObject({ status: "dispatched", startedAtMs: h.nowMs, deadlineAtMs: dispatchedAt + 300_000 });
    h.advance(60_000);
    expect(h.row(next.episodeKey)).toMatchObject({ status: "dispatched", dispatchId: next.dispatchId });
  });

  it("while the run drains, a start report drops the dispatch and is answered stale (nothing claimed, nothing to give back)", () => {
    const { h, next } = withShortLease();
    h.apply({ type: "stopRequested", reason: "test" });
    expect(started(h, next).ack.status).toBe("stale");
    expect(h.row(next.episodeKey)).toBeUndefined(); // dropped, and its group resolved
    expect(h.state.run.phase).toBe("finished");
  });
});
