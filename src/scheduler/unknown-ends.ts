/**
 * @module scheduler/unknown-ends — an `/end_episode` whose outcome is unknown (its answer was lost and the resend
 * failed too, or the resend was refused "not rolling": the first send may be what closed the batch) is resolved from
 * the server's own record within seconds, never from the refusal of a resend alone, and never by the report lease
 * while the server no longer holds the episode (issue 25). The evidence, read from each status observation of the
 * claim's server (the pool information comes with it while such an end is open):
 *  - the pool lists the uuid among the batch's completed episodes (`completed_tasks_details`) → accepted;
 *  - the pool, at the claim's step and at least {@link POOL_LAG_MS} after the end was reported unknown, lists it
 *    neither as completed nor as running (`running_episode_details`) → the server let it go without accepting it (the
 *    janitor reverted it): a proven non-acceptance, the repeat runs again;
 *  - the pool lists it as running → the server still holds it: the end is sent again (one at a time);
 *  - the pool lists it neither way before {@link POOL_LAG_MS}, never having listed it running → no evidence (an
 *    accepted end leaves the running list before the engine's push lists it completed): the end is still sent again
 *    (a resend's "not found" means delivered, "not in claimed status" means reverted) and a later pool decides;
 *  - the engine restarted (a new engine epoch) → its batch is gone either way: the repeat runs again;
 *  - the batch closed (the engine at WEIGHT_SYNCING of the claim's step, or past it) with no pool verdict: the
 *    engine drains every claimed episode before it syncs, so the record was resolved by our end or by the janitor.
 *    When the first send reached the server (its own 5xx, a connection dropped after the request was written:
 *    port/close-claims `requestReachedServer`) it is counted accepted (`endsInferred`); otherwise it stays unknown
 *    (`endsUnknown`): not run again (it may be trained) and not counted as delivered.
 * A stopping run waits at most {@link STOP_UNKNOWN_GRACE_MS} for such evidence, then finishes and says how many ends
 * it left unknown. Pure: time is the draft's `nowMs`.
 */
import { ENGINE } from "../protocol/index.ts";
import { AbortCause, type EventAck } from "../port/index.ts";
import type { Draft } from "./draft.ts";
import type { EngineView } from "./engine-gate.ts";
import type { PoolSeen } from "./events.ts";
import type { EpisodeRow } from "./state.ts";
import { serverIndexOf } from "./batches.ts";
import { resolveGroupIfDone } from "./task-groups.ts";

export type { EndUnknown } from "./state.ts";

/** How often an unresolved end is looked at again (a resend while the server holds it), ms. */
export const UNKNOWN_RECHECK_MS = 2_000;
/** The pool information may lag an accepted end by the engine's push (spec §7.4): absence counts only after this, ms. */
export const POOL_LAG_MS = 2_000;
/** A stopping run waits this long for the evidence of its unresolved ends, then leaves them unknown, ms. */
export const STOP_UNKNOWN_GRACE_MS = 30_000;


const ROLLING_STATES: ReadonlySet<string> = new Set([ENGINE.ROLLING, ENGINE.ROLLING_POST]);

/**
 * `episodeReported` with result `unknown`: the row stays `reporting` (the attempt stays open: the reward may be on
 * the server) and is looked at again within {@link UNKNOWN_RECHECK_MS}.
 */
export function onEndUnknown(d: Draft, row: EpisodeRow, reached: boolean, reason: string | undefined): EventAck {
  if (row.status !== "reporting" || row.outcome?.kind !== "end") return { status: "stale", reason: `episode is ${row.status}: no recorded end to resolve` };
  const prev = row.endUnknown ?? null;
  if (!prev) {
    d.run.totals.endsUnresolved = (d.run.totals.endsUnresolved ?? 0) + 1;
    d.log("warn", "end_episode outcome unknown; resolving it from the server's record", { episodeKey: row.episodeKey, attempt: row.attempt, reached, reason: reason ?? null });
  }
  d.patchEpisode(row.episodeKey, {
    endUnknown: { sinceMs: prev?.sinceMs ?? d.nowMs, reached: (prev?.reached ?? false) || reached, lastSeen: prev?.lastSeen ?? null, settlingAtMs: null },
    deadlineAtMs: d.nowMs + UNKNOWN_RECHECK_MS,
  });
  return { status: "applied" };
}

/** True when some end of the run waits for the server's record (its servers' pool information is read with each poll). */
export function hasUnresolvedEnds(d: Draft): boolean {
  return d.rows().some((r) => r.status === "reporting" && r.outcome?.kind === "end" && r.endUnknown != null);
}

/** The claim of a one-claim row on server `server`, with its epoch and step; null otherwise. */
function claimOn(d: Draft, row: EpisodeRow, server: number): { uuid: string; epoch: number | null; step: number | null } | null {
  if (row.claims.length !== 1) return null;
  const c = row.claims[0]!;
  if (serverIndexOf(d, c.swarm) !== server) return null;
  const epoch = server === 0 ? (row.engineEpoch ?? null) : (row.engineEpochs?.[c.swarm] ?? null);
  return { uuid: c.episodeUuid, epoch, step: c.globalStep ?? row.globalStep };
}

/**
 * Applies one observation of server `server` to the run's recorded ends: an end the pool lists as completed is
 * settled ended (also one whose consumer went quiet: nothing waits for the report lease); an unresolved end is
 * decided by the rules of this module. Settling goes through the DO (`settleEnds`), so the ledger is written like
 * any report's.
 */
export function reconcileEnds(d: Draft, server: number, view: EngineView, pool: PoolSeen | undefined): void {
  for (const seen of d.rows()) {
    if (seen.status !== "reporting" || seen.outcome?.kind !== "end") continue;
    const row = d.episodes.get(seen.episodeKey)!;
    const unknown = row.endUnknown ?? null;
    if (unknown?.settlingAtMs != null) continue;
    const claim = claimOn(d, row, server);
    if (!claim) continue;
    const reward = row.outcome!.kind === "end" ? row.outcome!.reward : 0;
    const sameEpoch = claim.epoch === null || claim.epoch === view.restarts;
    const atStep = pool && pool.globalStep !== null && pool.globalStep === claim.step && ROLLING_STATES.has(view.engineStatus) && view.globalStep === claim.step;
    if (sameEpoch && atStep && pool.episodeUuids.includes(claim.uuid)) {
      settle(d, row, { result: "ended", reward, via: "pool" });
      continue;
    }
    if (!unknown) continue;
    if (!sameEpoch) {
      settle(d, row, { result: "lost", cause: `${AbortCause.lost}:engineRestarted`, reward, via: "restart" });
      continue;
    }
    if (atStep && pool.runningTaskIds) {
      const running = claim.uuid in pool.runningTaskIds;
      if (!running && d.nowMs - unknown.sinceMs >= POOL_LAG_MS) {
        settle(d, row, { result: "lost", cause: `${AbortCause.lost}:reverted`, reward, via: "pool" });
        continue;
      }
      // Absent at the first sighting, inside the lag, is no evidence and is not recorded: `running_episode_details`
      // is the server's live record, the completed uuids come with the engine's push (spec §3.13, §7.4), so an end
      // the server accepted leaves the running list before it joins the completed one — and an end that closed the
      // batch may never join it (the engine clears its map at the close). Such an end looks absent-and-not-completed
      // until the lag has passed; from then on absence is proof (above). Gone after a running sighting is recorded:
      // the server still held it after the end was reported unknown, so what let it go (a resend or the janitor) is
      // not known, and a closed batch does not count it accepted (left unknown).
      if (running !== (unknown.lastSeen === "running")) d.patchEpisode(row.episodeKey, { endUnknown: { ...unknown, lastSeen: running ? "running" : "absent" } });
      continue;
    }
    const closed = claim.step !== null && view.globalStep !== null && (view.globalStep > claim.step || (view.globalStep === claim.step && view.engineStatus === ENGINE.WEIGHT_SYNCING));
    if (!closed) continue;
    if (unknown.reached && unknown.lastSeen !== "absent") {
      d.run.totals.endsInferred = (d.run.totals.endsInferred ?? 0) + 1;
      settle(d, row, { result: "ended", reward, via: "closedBatch" });
    } else {
      leaveUnknown(d, row, "its batch closed without a record of it");
    }
  }
}

/** Asks the DO to report the end's outcome (`settleEnds`); the row waits for that report. */
function settle(d: Draft, row: EpisodeRow, s: { result: "ended" | "lost"; cause?: string; reward: number; via: "pool" | "restart" | "closedBatch" }): void {
  d.settle({ episodeKey: row.episodeKey, attempt: row.attempt, result: s.result, ...(s.cause ? { cause: s.cause } : {}), reward: s.reward });
  const unknown = row.endUnknown ?? { sinceMs: d.nowMs, reached: false };
  d.patchEpisode(row.episodeKey, { endUnknown: { ...unknown, settlingAtMs: d.nowMs }, deadlineAtMs: d.nowMs + UNKNOWN_RECHECK_MS });
  d.log(s.result === "ended" ? "info" : "warn", `recorded end resolved from the server's record: ${s.result}`, { episodeKey: row.episodeKey, attempt: row.attempt, via: s.via });
}

/**
 * Gives up on an end whose outcome the server's record cannot tell: the repeat is neither counted nor run again (it
 * may be trained); the run's totals and summary say how many (`endsUnknown`).
 */
export function leaveUnknown(d: Draft, row: EpisodeRow, why: string): void {
  d.run.totals.endsUnknown = (d.run.totals.endsUnknown ?? 0) + 1;
  d.log("warn", "end_episode outcome left unknown: neither counted nor run again", { episodeKey: row.episodeKey, attempt: row.attempt, why });
  d.closedAttempt(row, AbortCause.endUnknown);
  d.patchEpisode(row.episodeKey, { status: "aborted", deadlineAtMs: null, lastCause: AbortCause.endUnknown, resolveRequestedAtMs: null });
  resolveGroupIfDone(d, row.groupKey);
}

/**
 * The recheck of an unresolved end at its deadline (scheduler/leases): a stopping run past
 * {@link STOP_UNKNOWN_GRACE_MS} leaves it unknown; else the end is sent again unless the pool showed the server let it
 * go (then the proof is awaited), and it is looked at again in {@link UNKNOWN_RECHECK_MS}.
 */
export function recheckUnknownEnd(d: Draft, row: EpisodeRow): void {
  const unknown = row.endUnknown!;
  const stopAt = d.run.stopRequestedAtMs;
  if (d.run.phase === "draining" && stopAt !== null && d.nowMs - Math.max(stopAt, unknown.sinceMs) >= STOP_UNKNOWN_GRACE_MS) {
    leaveUnknown(d, row, "the run stopped before the server's record told");
    return;
  }
  if (unknown.lastSeen !== "absent" && row.outcome?.kind === "end") {
    d.resolve({ episodeKey: row.episodeKey, attempt: row.attempt, claims: row.claims.map((c) => ({ swarm: c.swarm, episodeUuid: c.episodeUuid })), reward: row.outcome.reward });
  }
  d.patchEpisode(row.episodeKey, { endUnknown: { ...unknown, settlingAtMs: null }, resolveRequestedAtMs: d.nowMs, deadlineAtMs: d.nowMs + UNKNOWN_RECHECK_MS });
}
