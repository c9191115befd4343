/**
 * @module test/unit/scheduler/acks — the core's answer to every episode report, by the row's state: `applied` moves
 * it, `duplicate` means "already done, nothing to undo" (the consumer goes on), `stale` means "not yours any more"
 * (the consumer aborts what it holds), `unknown` names a report about something never dispatched. The consumer acts
 * on these words (src/runtime), so each one is part of the exactly-once contract (found open by mutation testing).
 */
import { describe, expect, it } from "vitest";
import { reclaimedBy, type EpisodeDispatch } from "../../../src/scheduler/index.ts";
import { MAX_UNDELIVERED_DISPATCHES } from "../../../src/scheduler/leases.ts";
import { Harness, rollingRun, specInput } from "./harness.ts";

const started = (over = {}) => rollingRun(specInput({ batchSize: 1, numRepeat: 2, maxParallel: 2, ...over }));
const claimOf = (d: EpisodeDispatch, uuid: string) => ({ type: "episodeClaimed" as const, episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, claims: [{ swarm: "default", episodeUuid: uuid, globalStep: 1 }] });

describe("which attempt and which message a report is about", () => {
  it("a report of a closed attempt is stale, of an attempt never dispatched unknown, of an episode the run no longer has unknown", () => {
    const { h, sent } = started();
    const d = sent[0]!;
    expect(h.apply({ ...claimOf(d, "u1"), attempt: 2 }).ack).toEqual({ status: "unknown", reason: "attempt 2 was never dispatched" });
    expect(h.apply({ ...claimOf(d, "u1"), episodeKey: "nope" }).ack).toEqual({ status: "unknown", reason: "no live episode nope (resolved or never dispatched)" });
    h.claim(d, 1, "u1");
    h.outcome(d, { kind: "abort", cause: "function_error" });
    h.report(d, "aborted"); // attempt 2 is dispatched now
    expect(h.row(d.episodeKey)?.attempt).toBe(2);
    expect(h.report(d, "ended").ack).toEqual({ status: "stale", reason: "attempt 1 was closed; attempt 2 is current" });
  });

  it("a claim on an older message of the current attempt is stale (its dispatch was sent again)", () => {
    const { h, sent } = started();
    const d = sent[0]!;
    h.apply({ type: "claimFailed", episodeKey: d.episodeKey, attempt: 1, dispatchId: d.dispatchId, kind: "noEpisodes" });
    h.advance(600_000);
    const again = h.takeDispatches().find((x) => x.episodeKey === d.episodeKey)!;
    expect(again.dispatchId).not.toBe(d.dispatchId);
    expect(h.apply(claimOf(d, "old")).ack).toEqual({ status: "stale", reason: `message of dispatch ${d.dispatchId}; dispatch ${again.dispatchId} is current` });
    expect(h.apply(claimOf(again, "new")).ack).toEqual({ status: "applied" });
  });
});

describe("claims", () => {
  it("a claim report naming no server episode is stale; the same claim again is a duplicate, another claim on a running episode stale", () => {
    const { h, sent } = started();
    const d = sent[0]!;
    expect(h.apply({ ...claimOf(d, "u1"), claims: [] }).ack).toEqual({ status: "stale", reason: "a claim report must name at least one server episode" });
    expect(h.row(d.episodeKey)?.status).toBe("dispatched");
    expect(h.apply(claimOf(d, "u1")).ack).toEqual({ status: "applied" });
    expect(h.row(d.episodeKey)).toMatchObject({ status: "running", globalStep: 1, claims: [{ swarm: "default", episodeUuid: "u1", globalStep: 1 }] });
    expect(h.apply(claimOf(d, "u1")).ack).toEqual({ status: "duplicate" });
    expect(h.apply(claimOf(d, "u2")).ack).toEqual({ status: "stale", reason: "episode is running, not waiting for a claim" });
  });

  it("a failed claim puts the dispatch back (counted); the same failure again is a duplicate, a failure after a claim stale", () => {
    const { h, sent } = started();
    const [a, b] = [sent[0]!, sent[1]!];
    const fail = (d: EpisodeDispatch) => h.apply({ type: "claimFailed", episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, kind: "noEpisodes" }).ack;
    expect(fail(a)).toEqual({ status: "applied" });
    expect(h.state.run.totals.claimFailures).toBe(1);
    expect(h.row(a.episodeKey)).toMatchObject({ status: "queued", claimFailures: 1 });
    expect(fail(a)).toEqual({ status: "duplicate" });
    expect(h.state.run.totals.claimFailures).toBe(1);
    h.claim(b, 1, "ub");
    expect(fail(b)).toEqual({ status: "stale", reason: "episode is running" });
  });

  it("a failed claim that names its swarm's engine status records it; one without a swarm changes no engine", () => {
    const { h, sent } = started();
    const d = sent[0]!;
    h.apply({ type: "claimFailed", episodeKey: d.episodeKey, attempt: 1, dispatchId: d.dispatchId, kind: "syncing", swarm: "default", engineStatus: "ENGINE.WEIGHT_SYNCING" });
    expect(h.state.run.engines[0]?.engineStatus).toBe("ENGINE.WEIGHT_SYNCING");
    const { h: h2, sent: sent2 } = started();
    const before = h2.state.run.engines[0]?.engineStatus;
    h2.apply({ type: "claimFailed", episodeKey: sent2[0]!.episodeKey, attempt: 1, dispatchId: sent2[0]!.dispatchId, kind: "syncing", engineStatus: "ENGINE.WEIGHT_SYNCING" });
    expect(h2.state.run.engines[0]?.engineStatus).toBe(before);
  });
});

describe("outcomes and reports", () => {
  it("an outcome is recorded once: again it is a duplicate carrying the recorded outcome; before any claim it is stale", () => {
    const { h, sent } = started();
    const [a, b] = [sent[0]!, sent[1]!];
    expect(h.outcome(b, { kind: "end", reward: 1 }).ack).toEqual({ status: "stale", reason: "episode is dispatched, not running" });
    h.claim(a, 1, "ua");
    expect(h.outcome(a, { kind: "end", reward: 0.5 }).ack).toEqual({ status: "applied" });
    expect(h.row(a.episodeKey)).toMatchObject({ status: "reporting", deadlineAtMs: h.nowMs + h.state.run.config.timing.reportLeaseSeconds * 1000 });
    expect(h.outcome(a, { kind: "end", reward: 1 }).ack).toEqual({ status: "duplicate", outcome: { kind: "end", reward: 0.5 } });
  });

  it("a report before any claim is stale; `ended` needs a reward (recorded, or in the report); the reward recorded wins over the report's", () => {
    const { h, sent } = started();
    const [a, b] = [sent[0]!, sent[1]!];
    expect(h.report(a, "ended").ack).toEqual({ status: "stale", reason: "episode is dispatched: no claim was reported" });
    h.claim(a, 1, "ua");
    expect(h.report(a, "ended").ack).toEqual({ status: "stale", reason: "ended without a reward: send episodeOutcomeRecorded first (or the reward)" });
    expect(h.row(a.episodeKey)?.status).toBe("running");
    expect(h.apply({ type: "episodeReported", episodeKey: a.episodeKey, attempt: 1, result: "ended", reward: 0.25 }).ack).toEqual({ status: "applied" });
    expect(h.state.run.totals.rewardSum).toBe(0.25);
    h.claim(b, 1, "ub");
    h.outcome(b, { kind: "end", reward: 1 });
    h.apply({ type: "episodeReported", episodeKey: b.episodeKey, attempt: 1, result: "ended", reward: 0 });
    expect(h.state.run.totals.rewardSum).toBe(1.25);
  });

  it("a failed attempt's cause: lost → the report's cause or `lost`, aborted → the recorded abort's cause or the report's, else `aborted`", () => {
    const causeAfter = (result: "lost" | "aborted" | "expired", cause?: string, recorded?: string) => {
      const { h, sent } = started({ maxAttempts: 3 });
      const d = sent[0]!;
      h.claim(d, 1, "u");
      if (recorded) h.outcome(d, { kind: "abort", cause: recorded });
      h.report(d, result, cause);
      return h.row(d.episodeKey)?.lastCause;
    };
    expect(causeAfter("lost")).toBe("lost");
    expect(causeAfter("lost", "lost:weightSyncing")).toBe("lost:weightSyncing");
    expect(causeAfter("expired", "whatever")).toBe("expired");
    expect(causeAfter("aborted", undefined, "infra_error")).toBe("infra_error");
    expect(causeAfter("aborted", "the_reports")).toBe("the_reports");
    expect(causeAfter("aborted")).toBe("aborted");
  });

  it("a train run's `score` outcome is an abort (score_in_train_run); an eval run's `end` is a score", () => {
    const { h, sent } = started({ maxAttempts: 3 });
    h.claim(sent[0]!, 1, "u");
    h.outcome(sent[0]!, { kind: "score", reward: 1 });
    expect(h.row(sent[0]!.episodeKey)?.outcome).toEqual({ kind: "abort", cause: "score_in_train_run" });
    const e = new Harness(specInput({ episodeType: "eval", batchSize: 1, numRepeat: 1, maxParallel: 1 }), { gsm8k: 1 });
    e.start();
    e.rolling(1);
    const [x] = e.takeDispatches();
    e.claim(x!, 1, "s");
    e.outcome(x!, { kind: "end", reward: 0.5 });
    expect(e.row(x!.episodeKey)?.outcome).toEqual({ kind: "score", reward: 0.5 });
  });
});

describe("heartbeats", () => {
  it("a start beat on a claimed or reporting episode is a duplicate; a running beat on a dispatched one too; on an ended one stale", () => {
    const { h, sent } = started();
    const [a, b] = [sent[0]!, sent[1]!];
    const beat = (d: EpisodeDispatch, stage: "started" | "running" | "quiet") => h.apply({ type: "episodeHeartbeat", episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, stage }).ack;
    expect(beat(a, "running")).toEqual({ status: "duplicate" }); // the claim of a function started early is on its way
    expect(beat(a, "started")).toEqual({ status: "applied" });
    expect(h.state.run.consumersHeartbeat).toBe(true);
    h.claim(a, 1, "ua");
    expect(beat(a, "started")).toEqual({ status: "duplicate" });
    expect(beat(a, "running")).toEqual({ status: "applied" });
    h.outcome(a, { kind: "end", reward: 1 });
    expect(beat(a, "started")).toEqual({ status: "duplicate" });
    expect(beat(a, "running")).toEqual({ status: "duplicate" });
    h.claim(b, 1, "ub"); // b keeps the group open, so a's row stays, ended
    h.report(a, "ended");
    expect(h.row(a.episodeKey)?.status).toBe("ended");
    expect(beat(a, "running")).toEqual({ status: "stale", reason: "episode is ended, not running" });
    expect(beat(a, "started")).toEqual({ status: "stale", reason: "episode is ended: this dispatch expired and is sent again" });
  });

  it("a running beat moves the lease to the heartbeat lease from now; the last (quiet) beat back to the run lease from the claim", () => {
    const { h, sent } = started();
    const d = sent[0]!;
    const beat = (stage: "started" | "running" | "quiet") => h.apply({ type: "episodeHeartbeat", episodeKey: d.episodeKey, attempt: 1, dispatchId: d.dispatchId, stage });
    beat("started");
    h.claim(d, 1, "u");
    const claimedAt = h.nowMs;
    const { timing } = h.state.run.config;
    h.nowMs += 5000;
    beat("running");
    expect(h.row(d.episodeKey)).toMatchObject({ heartbeatAtMs: h.nowMs, deadlineAtMs: h.nowMs + timing.heartbeatLeaseSeconds * 1000 });
    h.nowMs += 5000;
    beat("quiet");
    expect(h.row(d.episodeKey)?.deadlineAtMs).toBe(claimedAt + timing.runLeaseSeconds * 1000);
  });
});

describe("lease expiries", () => {
  it(`an undelivered dispatch is sent again exactly ${MAX_UNDELIVERED_DISPATCHES - 1} times, each counted; the ${MAX_UNDELIVERED_DISPATCHES}th expiry closes the attempt`, () => {
    const { h, sent } = rollingRun(specInput({ batchSize: 1, numRepeat: 1, maxParallel: 1, maxAttempts: 2 }));
    const key = sent[0]!.episodeKey;
    const closedAt: number[] = [];
    for (let expiry = 1; expiry <= MAX_UNDELIVERED_DISPATCHES; expiry++) {
      // wait for the row to be dispatched again, then past its lease
      for (let i = 0; i < 50 && h.row(key)?.status !== "dispatched"; i++) h.advance(10_000);
      const deadline = h.row(key)!.deadlineAtMs!;
      h.nowMs = deadline;
      h.apply({ type: "tick" });
      if (h.row(key)?.attempt === 2) closedAt.push(expiry);
    }
    expect(closedAt).toEqual([MAX_UNDELIVERED_DISPATCHES]);
    expect(h.state.run.totals.claimFailures).toBe(MAX_UNDELIVERED_DISPATCHES - 1);
    expect(h.state.run.claimFailuresByKind).toEqual({ undelivered: MAX_UNDELIVERED_DISPATCHES - 1 });
  });

  it("only a dispatch whose invocation never started counts an un-started expiry", () => {
    const { h, sent } = started();
    const [a, b] = [sent[0]!, sent[1]!];
    h.apply({ type: "episodeHeartbeat", episodeKey: b.episodeKey, attempt: 1, dispatchId: b.dispatchId, stage: "started" });
    h.advance(h.state.run.config.timing.dispatchLeaseSeconds * 1000);
    expect(h.row(a.episodeKey)?.unstartedExpiries).toBe(1);
    expect(h.row(b.episodeKey)?.unstartedExpiries ?? 0).toBe(0);
  });

  it("reclaimedBy finds the holder of any of the claims, not only the first", () => {
    const { h, sent } = started();
    h.claim(sent[1]!, 1, "second-uuid");
    const rows = [...h.state.episodes.values()];
    expect(reclaimedBy(rows, sent[0]!.episodeKey, [{ episodeUuid: "not-held" }, { episodeUuid: "second-uuid" }])?.episodeKey).toBe(sent[1]!.episodeKey);
  });
});
