import { describe, expect, it } from "vitest";
import { reclaimedBy, type AbortEpisodes, type ResolveOutbox } from "../../../src/scheduler/index.ts";
import { MAX_UNDELIVERED_DISPATCHES } from "../../../src/scheduler/leases.ts";
import { Harness, rollingRun, specInput } from "./harness.ts";

const tuning = { dispatchLeaseSeconds: 60, runLeaseSeconds: 2000, reportLeaseSeconds: 700 };
const abortsOf = (h: Harness) => h.commands.filter((c): c is AbortEpisodes => c.type === "abortEpisodes").flatMap((c) => c.episodes);
const resolvesOf = (h: Harness) => h.commands.filter((c): c is ResolveOutbox => c.type === "resolveOutbox").flatMap((c) => c.episodes);

const started = (maxParallel = 2) => rollingRun(specInput({ batchSize: 1, numRepeat: 2, maxParallel, tuning }));

describe("leases and reconciliation (BC-51)", () => {
  it("BC-51 a claimed episode past its lease gets exactly one abort of its server episode and one re-queued repeat", () => {
    const { h, sent } = started();
    const d = sent[0]!;
    h.claim(d, 1, "uuid-a");
    h.finishEpisode(sent[1]!, 1, 1);
    h.advance(1_999_000);
    expect(abortsOf(h)).toEqual([]);
    h.advance(1000); // runLeaseSeconds = 2000 s after the claim
    expect(abortsOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: 1, claims: [{ swarm: "default", episodeUuid: "uuid-a" }], reason: "lease_expired" }]);
    expect(h.row(d.episodeKey)).toMatchObject({ attempt: 2, status: "dispatched", lastCause: "lease_expired" });
    h.advance(1000);
    h.advance(1000);
    expect(abortsOf(h)).toHaveLength(1); // once
    expect(h.state.run.totals.reconciles).toBe(1);
    // no report will bring this attempt's row: the decision lists it for the dashboard's attempt rows
    expect(h.closedAttempts.map((c) => ({ key: c.row.episodeKey, attempt: c.row.attempt, status: c.row.status, cause: c.cause }))).toEqual([
      { key: d.episodeKey, attempt: 1, status: "running", cause: "lease_expired" },
    ]);
    expect(h.closedAttempts[0]!.atMs).toBe(h.nowMs - 2000);
    // the old consumer wakes up and tries to record an end: refused, so it aborts instead of ending
    expect(h.outcome({ episodeKey: d.episodeKey, attempt: 1 }, { kind: "end", reward: 1 }).ack.status).toBe("stale");
  });

  it("BC-51 a recorded end past its report lease is resolved from the outbox, never aborted or ended again by the core", () => {
    const { h, sent } = started();
    const d = sent[0]!;
    h.finishEpisode(sent[1]!, 1, 1);
    h.claim(d, 1, "uuid-e");
    h.outcome(d, { kind: "end", reward: 0.75 });
    h.advance(700_000);
    expect(resolvesOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: 1, claims: [{ swarm: "default", episodeUuid: "uuid-e" }], reward: 0.75 }]);
    expect(abortsOf(h)).toEqual([]);
    expect(h.row(d.episodeKey)).toMatchObject({ status: "reporting", attempt: 1, resolveRequestedAtMs: h.nowMs });
    h.advance(1000);
    expect(resolvesOf(h)).toHaveLength(1);
    h.report(d, "ended"); // the DO found end_sent + "not found" → delivered (BC-26)
    expect(h.state.run.totals).toMatchObject({ episodesEnded: 2, rewardSum: 1.75 });
    expect(h.state.run.failuresByCause).toEqual({});
  });

  it("BC-51 a dispatched episode never claimed within its lease is dispatched again without costing an attempt", () => {
    const { h, sent } = started(1);
    h.advance(60_000);
    // back to the queue with a back-off, same attempt; it is dispatched again once the back-off passes
    expect(h.row(sent[0]!.episodeKey)).toMatchObject({ attempt: 1, status: "queued", claimFailures: 1 });
    expect(h.state.run.claimFailuresByKind).toMatchObject({ undelivered: 1 });
    expect(h.state.run.failuresByCause).toEqual({});
    expect(abortsOf(h)).toEqual([]);
    expect(h.closedAttempts).toEqual([]); // not an attempt: nothing ran
  });

  it(`BC-51 after ${MAX_UNDELIVERED_DISPATCHES} undelivered dispatches in a row the attempt is closed (no loop for ever)`, () => {
    const { h, sent } = started(1);
    const key = sent[0]!.episodeKey;
    for (let i = 0; i < MAX_UNDELIVERED_DISPATCHES * 4 && h.row(key)?.attempt === 1; i++) h.advance(60_000);
    expect(h.row(key)).toMatchObject({ attempt: 2, lastCause: "lease_expired" });
    expect(h.closedAttempts.map((c) => [c.row.attempt, c.row.status, c.cause])).toEqual([[1, "dispatched", "lease_expired"]]);
    expect(h.state.run.claimFailuresByKind["undelivered"]).toBeGreaterThanOrEqual(MAX_UNDELIVERED_DISPATCHES - 1);
    expect(abortsOf(h)).toEqual([]);
  });

  it("BC-51 an abort outcome past its lease is aborted once; an eval score past its lease still counts as scored", () => {
    const { h, sent } = started();
    h.finishEpisode(sent[1]!, 1, 1);
    h.claim(sent[0]!, 1, "uuid-x");
    h.outcome(sent[0]!, { kind: "abort", cause: "infra_error" });
    h.advance(700_000);
    expect(abortsOf(h)).toEqual([expect.objectContaining({ episodeKey: sent[0]!.episodeKey, reason: "infra_error" })]);
    expect(h.state.run.failuresByCause).toEqual({ infra_error: 1 });
    expect(h.closedAttempts.map((c) => [c.row.attempt, c.row.status, c.cause])).toEqual([[1, "reporting", "infra_error"]]);

    const e = new Harness(specInput({ episodeType: "eval", batchSize: 1, numRepeat: 1, maxParallel: 1, tuning }), { gsm8k: 1 });
    e.start();
    e.rolling(1);
    const [x] = e.takeDispatches();
    e.claim(x!, 1, "uuid-s");
    e.outcome(x!, { kind: "score", reward: 1 });
    e.advance(700_000);
    expect(abortsOf(e)).toEqual([expect.objectContaining({ claims: [{ swarm: "default", episodeUuid: "uuid-s" }] })]);
    expect(e.state.run.phase).toBe("finished");
    expect(Object.values(e.state.evalTasks).map((t) => t.rewards)).toEqual([[1]]);
  });

  it("BC-23 an 'expired' outcome past its lease is not aborted (the server already reverted it; it may be another client's now) and is re-queued once", () => {
    const { h, sent } = started();
    h.finishEpisode(sent[1]!, 1, 1);
    h.claim(sent[0]!, 1, "uuid-reverted");
    h.outcome(sent[0]!, { kind: "abort", cause: "expired" }); // the consumer sent nothing (action none); its report is lost
    h.advance(700_000);
    expect(abortsOf(h)).toEqual([]);
    expect(h.row(sent[0]!.episodeKey)).toMatchObject({ attempt: 2, lastCause: "expired" });
    expect(h.state.run.failuresByCause).toEqual({ expired: 1 });
    expect(h.state.run.totals.reconciles).toBe(1);
  });

  it("BC-51 skips aborting a server episode another live episode of the run has re-claimed (same client uuid)", () => {
    const { h, sent } = started();
    h.claim(sent[0]!, 1, "shared-uuid");
    h.advance(1000);
    h.claim(sent[1]!, 1, "shared-uuid"); // the server reverted it and handed the same uuid to the sibling consumer
    h.advance(1_999_000);
    expect(h.row(sent[0]!.episodeKey)?.attempt).toBe(2);
    expect(abortsOf(h)).toEqual([]);
  });
});

describe("a claim another episode of the run holds is never aborted or ended by this one's lease", () => {
  // The server's idle janitor reverts a quiet episode and keeps its uuid; the next claim of this run (same client
  // uuid) may get it. From then on the claim belongs to the episode that re-claimed it — while it runs, and as much
  // while it is reporting its end (its reward is on its way to the server): a lease of the first episode must leave it alone.
  it("BC-51 a re-claimed server episode whose new holder is reporting its end is not aborted when the old holder's lease expires", () => {
    const { h, sent } = started();
    const [old, holder] = [sent[0]!, sent[1]!];
    h.claim(old, 1, "shared-uuid");
    h.advance(1000);
    h.claim(holder, 1, "shared-uuid");
    h.outcome(holder, { kind: "end", reward: 1 }); // the holder records its end: status reporting, the DO sends it
    expect(h.row(holder.episodeKey)?.status).toBe("reporting");
    h.advance(1_999_000); // the old holder's run lease (2000 s after its claim) expires
    expect(h.row(old.episodeKey)).toMatchObject({ attempt: 2, lastCause: "lease_expired" });
    expect(h.row(holder.episodeKey)?.status).toBe("reporting");
    expect(abortsOf(h).flatMap((a) => a.claims.map((c) => c.episodeUuid))).not.toContain("shared-uuid");
    // the holder's end then lands as usual
    h.report(holder, "ended");
    expect(h.state.run.totals.episodesEnded).toBe(1);
  });

  it("BC-26 reclaimedBy names a live holder, running or reporting, and nobody once it has ended", () => {
    const { h, sent } = started();
    const [old, holder] = [sent[0]!, sent[1]!];
    h.claim(old, 1, "shared-uuid");
    h.claim(holder, 1, "shared-uuid");
    const rows = () => [...h.state.episodes.values()];
    const claims = [{ episodeUuid: "shared-uuid" }];
    expect(reclaimedBy(rows(), old.episodeKey, claims)?.episodeKey).toBe(holder.episodeKey); // running
    h.outcome(holder, { kind: "end", reward: 1 });
    expect(reclaimedBy(rows(), old.episodeKey, claims)?.episodeKey).toBe(holder.episodeKey); // reporting its end
    expect(reclaimedBy(rows(), old.episodeKey, [{ episodeUuid: "other-uuid" }])).toBeUndefined();
    expect(reclaimedBy(rows(), holder.episodeKey, claims)?.episodeKey).toBe(old.episodeKey); // the sibling view: old is still running
    h.report(holder, "ended");
    expect(reclaimedBy(rows(), old.episodeKey, claims)).toBeUndefined(); // an ended episode holds nothing
  });
});
