/**
 * @module scheduler/leases — reconciliation of episodes whose consumer went quiet (a dead invocation, a deploy
 * reset, BC-51): each in-flight state has a lease; past it the core closes the attempt once and asks the DO to abort
 * the server episodes it held, or, for a recorded `end`, to resolve it from the outbox (never end twice).
 */
import { AbortCause } from "../port/index.ts";
import type { ClaimRef } from "./commands.ts";
import type { Draft } from "./draft.ts";
import { endEpisode, failAttempt, requeueAfterClaimFailure } from "./episode-lifecycle.ts";
import type { EpisodeRow } from "./state.ts";
import { expiredUnstarted } from "./lease-deadlines.ts";
import { recheckUnknownEnd } from "./unknown-ends.ts";

/** Cause recorded for attempts closed by a lease. */
export const LEASE_EXPIRED = AbortCause.leaseExpired;

/**
 * A dispatched message that was never claimed (a queue backlog, a consumer that died before claiming) is sent again
 * without costing an attempt — nothing ran. After this many undelivered dispatches in a row the attempt is closed,
 * so a message that can never be processed cannot loop for ever.
 */
export const MAX_UNDELIVERED_DISPATCHES = 5;

/**
 * Abort causes whose server episode the consumer deliberately leaves alone (runtime/outcome action `none`):
 * `expired` means the server's idle janitor already reverted it and it may be another client's by now (BC-23,
 * spec §5.7; abort checks no ownership, spec §3.10), so a lease never aborts it either.
 */
const LEFT_TO_THE_SERVER: ReadonlySet<string> = new Set([AbortCause.expired]);

/**
 * The server episodes (uuids) that live episodes of the run other than `episodeKey` hold. A server episode reverted
 * by the idle janitor keeps its uuid and may already be re-claimed by another consumer of this run (same client
 * uuid, spec §5.6): such a claim is that episode's now, never to be aborted or ended on behalf of `episodeKey`.
 */
function heldElsewhere(rows: Iterable<EpisodeRow>, episodeKey: string): Map<string, EpisodeRow> {
  const held = new Map<string, EpisodeRow>();
  for (const other of rows) {
    if (other.episodeKey === episodeKey) continue;
    if (other.status === "running" || other.status === "reporting") for (const c of other.claims) held.set(c.episodeUuid, other);
  }
  return held;
}

/**
 * The live episode of the run, other than `episodeKey`, that holds one of `claims` now (re-claimed after an idle
 * revert), or undefined. The DO asks before it resends a recorded end from its outbox: a resend would end THAT
 * episode with this one's output (BC-26), so this repeat must run again instead.
 * @param rows every episode row of the run (`Object.values(state.episodes)`)
 */
export function reclaimedBy(rows: Iterable<EpisodeRow>, episodeKey: string, claims: readonly Pick<ClaimRef, "episodeUuid">[]): EpisodeRow | undefined {
  const held = heldElsewhere(rows, episodeKey);
  for (const c of claims) {
    const holder = held.get(c.episodeUuid);
    if (holder) return holder;
  }
  return undefined;
}

/** Claims of `row` safe to abort: those no other live episode of the run holds now (see {@link reclaimedBy}). */
function abortableClaims(d: Draft, row: EpisodeRow): ClaimRef[] {
  const held = heldElsewhere(d.rows(), row.episodeKey);
  return row.claims.filter((c) => !held.has(c.episodeUuid)).map((c) => ({ swarm: c.swarm, episodeUuid: c.episodeUuid }));
}

function abortOnServer(d: Draft, row: EpisodeRow, reason: string): void {
  const claims = abortableClaims(d, row);
  if (claims.length > 0) d.abort({ episodeKey: row.episodeKey, attempt: row.attempt, claims, reason });
}

/**
 * Handles every in-flight episode whose lease deadline has passed (checked on every decision, so a reset DO
 * reconciles on its next wake):
 *  - dispatched (no start reported within the un-started lease, or no claim within `dispatchLeaseSeconds` of a
 *    started one, scheduler/heartbeats): dispatched again, not an attempt (nothing ran; a late invocation of the old
 *    message is stale); after {@link MAX_UNDELIVERED_DISPATCHES} such expiries in a row the attempt fails with
 *    `lease_expired`;
 *  - running (no heartbeat within `heartbeatLeaseSeconds`, or no outcome within `runLeaseSeconds`): abort its
 *    claims once, the attempt fails with `lease_expired` (a late report of its consumer is stale: never a second end);
 *  - reporting an `abort`: abort its claims once (not for `expired`: the server reverted it already), the attempt
 *    fails with the recorded cause;
 *  - reporting a `score` (eval): abort its claims once, the episode counts as scored;
 *  - reporting an `end`: `resolveOutbox` (the DO knows whether end was sent), asked again each `reportLeaseSeconds`
 *    until `episodeReported` arrives. The attempt stays open: the reward may already be on the server.
 */
export function expireLeases(d: Draft): void {
  const { timing } = d.run.config;
  for (const seen of d.rows()) {
    if (seen.deadlineAtMs === null || seen.deadlineAtMs > d.nowMs) continue;
    const row = d.episodes.get(seen.episodeKey); // re-read: handling one row may patch or delete its siblings
    if (!row || row.deadlineAtMs === null || row.deadlineAtMs > d.nowMs) continue;
    const fields = { episodeKey: row.episodeKey, attempt: row.attempt, status: row.status };
    if (row.status === "dispatched") {
      const unstarted = expiredUnstarted(d, row);
      if (row.claimFailures + 1 >= MAX_UNDELIVERED_DISPATCHES) {
        d.log("warn", "dispatched episode was never claimed within its lease, again; attempt closed", fields);
        d.closedAttempt(row, LEASE_EXPIRED);
        failAttempt(d, row, LEASE_EXPIRED);
      } else {
        const why = unstarted ? "dispatched episode's invocation did not start within its lease" : "dispatched episode was never claimed within its lease";
        d.log("warn", `${why}; dispatching it again (not an attempt)`, fields);
        d.run.totals.claimFailures++;
        d.count(d.run.claimFailuresByKind, "undelivered");
        if (unstarted) d.patchEpisode(row.episodeKey, { unstartedExpiries: (row.unstartedExpiries ?? 0) + 1 });
        requeueAfterClaimFailure(d, d.episodes.get(row.episodeKey)!, "undelivered");
      }
    } else if (row.status === "running") {
      d.run.totals.reconciles++;
      const quiet = row.heartbeatAtMs != null && d.run.consumersHeartbeat === true ? "sent no heartbeat within its lease" : "went quiet past its lease";
      d.log("warn", `claimed episode ${quiet}; aborting it once and re-queuing`, fields);
      abortOnServer(d, row, LEASE_EXPIRED);
      d.closedAttempt(row, LEASE_EXPIRED);
      failAttempt(d, row, LEASE_EXPIRED);
    } else if (row.status === "reporting" && row.outcome?.kind === "end" && row.endUnknown) {
      recheckUnknownEnd(d, row);
    } else if (row.status === "reporting" && row.outcome?.kind === "end") {
      d.run.totals.reconciles++;
      d.log("warn", "recorded end was not reported within its lease; resolving from the outbox", fields);
      d.resolve({ episodeKey: row.episodeKey, attempt: row.attempt, claims: row.claims.map((c) => ({ swarm: c.swarm, episodeUuid: c.episodeUuid })), reward: row.outcome.reward });
      d.patchEpisode(row.episodeKey, { resolveRequestedAtMs: d.nowMs, deadlineAtMs: d.nowMs + timing.reportLeaseSeconds * 1000 });
    } else if (row.status === "reporting") {
      d.run.totals.reconciles++;
      d.log("warn", "recorded outcome was not reported within its lease; aborting it once", fields);
      const cause = row.outcome?.kind === "abort" ? row.outcome.cause : LEASE_EXPIRED;
      if (!LEFT_TO_THE_SERVER.has(cause)) abortOnServer(d, row, cause);
      if (row.outcome?.kind === "score") endEpisode(d, row, row.outcome.reward);
      else {
        d.closedAttempt(row, cause);
        failAttempt(d, row, cause);
      }
    }
  }
}
