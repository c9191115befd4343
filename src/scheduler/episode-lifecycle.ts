/**
 * @module scheduler/episode-lifecycle — one episode's transitions (design note, "Episode states"): claimed, claim
 * failed, outcome recorded, reported; a failed attempt is retried under the same task id up to `maxAttempts`, then
 * its group is dropped (BC-32). Every handler is idempotent per (episodeKey, attempt) (BC-45, BC-47).
 */
import type { Draft } from "./draft.ts";
import { AbortCause, NON_RETRYABLE_CAUSES, type DispatchRef, type EpisodeOutcome, type EpisodeRef, type EventAck } from "../port/index.ts";
import type { ClaimFailed, EpisodeClaimed, EpisodeOutcomeRecorded, EpisodeReported } from "./events.ts";
import { claimBackoffMs } from "./dispatch.ts";
import { observeEngine } from "./engine-gate.ts";
import { noteFailedAttempt } from "./failure-streak.ts";
import { dropGroup, groupRows, recordEnded, rerunWipedRepeat, resolveGroupIfDone } from "./task-groups.ts";
import { claimEpochs, currentEngineEpoch, landEpisode, landPartialEnd } from "./batches.ts";
import { isTerminal, type EpisodeRow, type SchedulerState } from "./state.ts";
import { runningDeadlineAtMs } from "./lease-deadlines.ts";
import { onEndUnknown } from "./unknown-ends.ts";
import { closeCutRow } from "./over-provision.ts";

const APPLIED: EventAck = { status: "applied" };

/** Finds the row an episode event is about, or the ack that explains why it does not apply. */
function lookupAttempt(d: Draft, ref: EpisodeRef): EpisodeRow | EventAck {
  const row = d.episodes.get(ref.episodeKey);
  if (!row) return { status: "unknown", reason: `no live episode ${ref.episodeKey} (resolved or never dispatched)` };
  if (ref.attempt < row.attempt) return { status: "stale", reason: `attempt ${ref.attempt} was closed; attempt ${row.attempt} is current` };
  if (ref.attempt > row.attempt) return { status: "unknown", reason: `attempt ${ref.attempt} was never dispatched` };
  return row;
}

/** {@link lookupAttempt}, and the message must be the episode's latest dispatch (an older one is stale). */
export function lookupDispatch(d: Draft, ref: DispatchRef): EpisodeRow | EventAck {
  const row = lookupAttempt(d, ref);
  if (!isRow(row) || ref.dispatchId === row.dispatchId) return row;
  return { status: "stale", reason: `message of dispatch ${ref.dispatchId}; dispatch ${row.dispatchId} is current` };
}

/**
 * True while a queue message is the episode's live dispatch (same attempt and dispatchId, still waiting for its
 * claim, run active): a consumer may ask this before claiming, so a redelivered old message costs no claim + abort.
 */
export function isDispatchCurrent(state: SchedulerState, ref: DispatchRef): boolean {
  const row = state.episodes.get(ref.episodeKey);
  return state.run.phase === "running" && row !== undefined && row.status === "dispatched" && row.attempt === ref.attempt && row.dispatchId === ref.dispatchId;
}

/** Narrows a lookup result to the row. */
export const isRow = (x: EpisodeRow | EventAck): x is EpisodeRow => "episodeKey" in x;

/**
 * `episodeClaimed`: dispatched → running (lease: runLeaseSeconds, or the heartbeat lease once the run's consumers
 * heartbeat, scheduler/heartbeats). While draining the claim is refused (stale).
 */
export function onEpisodeClaimed(d: Draft, e: EpisodeClaimed): EventAck {
  const row = lookupDispatch(d, e);
  if (!isRow(row)) return row;
  if (e.claims.length === 0) return { status: "stale", reason: "a claim report must name at least one server episode" };
  if (row.status !== "dispatched") {
    const same = row.claims.length > 0 && row.claims.every((c, i) => c.episodeUuid === e.claims[i]?.episodeUuid);
    return same ? { status: "duplicate" } : { status: "stale", reason: `episode is ${row.status}, not waiting for a claim` };
  }
  if (d.run.phase === "draining") {
    d.patchEpisode(row.episodeKey, { status: "dropped", deadlineAtMs: null, lastCause: AbortCause.stopped });
    resolveGroupIfDone(d, row.groupKey);
    return { status: "stale", reason: "the run is stopping: abort the claim" };
  }
  d.patchEpisode(row.episodeKey, {
    status: "running",
    claims: e.claims.map((c) => ({ swarm: c.swarm, episodeUuid: c.episodeUuid, globalStep: c.globalStep })),
    globalStep: e.claims[0]?.globalStep ?? null,
    engineEpoch: currentEngineEpoch(d),
    engineEpochs: claimEpochs(d, e.claims),
    claimFailures: 0,
    unstartedExpiries: 0,
    claimedAtMs: d.nowMs,
    deadlineAtMs: runningDeadlineAtMs(d, d.nowMs),
  });
  return APPLIED;
}

/** `claimFailed`: dispatched → queued with back-off + jitter; not an attempt. A named status closes the gate. */
export function onClaimFailed(d: Draft, e: ClaimFailed): EventAck {
  const row = lookupDispatch(d, e);
  if (!isRow(row)) return row;
  if (row.status !== "dispatched") return row.status === "queued" ? { status: "duplicate" } : { status: "stale", reason: `episode is ${row.status}` };
  d.run.totals.claimFailures++;
  d.count(d.run.claimFailuresByKind, e.kind);
  const swarmIndex = e.swarm === undefined ? -1 : d.run.config.swarms.indexOf(e.swarm);
  const engine = d.run.engines[swarmIndex];
  if (engine && e.engineStatus) d.run.engines[swarmIndex] = observeEngine(engine, e.engineStatus, undefined, d.nowMs).view;
  requeueAfterClaimFailure(d, row, e.kind);
  return APPLIED;
}

/** Back to queued after a claim or dispatch failure (same attempt), or dropped while draining. */
export function requeueAfterClaimFailure(d: Draft, row: EpisodeRow, kind: string): void {
  if (d.run.phase === "draining") {
    d.patchEpisode(row.episodeKey, { status: "dropped", deadlineAtMs: null, lastCause: AbortCause.stopped });
    resolveGroupIfDone(d, row.groupKey);
    return;
  }
  const failures = row.claimFailures + 1;
  const [delayMs, rngState] = claimBackoffMs(d.run.config.timing, kind, failures, d.run.rngState);
  d.run.rngState = rngState;
  d.patchEpisode(row.episodeKey, { status: "queued", claimFailures: failures, notBeforeMs: d.nowMs + delayMs, deadlineAtMs: null });
}

/** `episodeOutcomeRecorded`: running → reporting (lease: reportLeaseSeconds). The commit point before end (BC-26). */
export function onOutcomeRecorded(d: Draft, e: EpisodeOutcomeRecorded): EventAck {
  const row = lookupAttempt(d, e);
  if (!isRow(row)) return row;
  if (row.status !== "running") {
    if (row.outcome) return { status: "duplicate", outcome: row.outcome };
    return { status: "stale", reason: `episode is ${row.status}, not running` };
  }
  const outcome = outcomeForRun(d, e.outcome);
  // over-provisioning: the repeat's batch closed on other groups while it ran; an end now could land after its batch
  // trained (or in the next one), so the claim is given back instead (scheduler/over-provision)
  if (outcome.kind === "end" && row.cut === true) {
    closeCutRow(d, row);
    resolveGroupIfDone(d, row.groupKey);
    return { status: "stale", reason: "the batch closed on other task groups: abort the claim, do not end it" };
  }
  // a run stopped on a plain bug in its function trains nothing more: a reward sent now would sit in a batch the
  // server never closes for this run, so the consumer is told to abort instead of ending
  if (outcome.kind === "end" && d.run.phase === "draining" && d.run.stopReason === "functionError") {
    failAttempt(d, row, AbortCause.runStopped);
    return { status: "stale", reason: "the run stopped on a function error: abort the claim, do not end it" };
  }
  d.patchEpisode(row.episodeKey, { status: "reporting", outcome, deadlineAtMs: d.nowMs + d.run.config.timing.reportLeaseSeconds * 1000 });
  return APPLIED;
}

/**
 * Reads an outcome in the run's terms: in an eval run an `end` is a `score` (eval results are always aborted, spec
 * §5.8); in a train run a `score` delivers nothing, so it is an `abort` with cause `score_in_train_run`.
 */
function outcomeForRun(d: Draft, outcome: EpisodeOutcome): EpisodeOutcome {
  const evalRun = d.run.config.episodeType === "eval";
  if (evalRun && outcome.kind === "end") return { kind: "score", reward: outcome.reward };
  if (!evalRun && outcome.kind === "score") {
    d.log("error", "a train episode recorded a score outcome; treated as an abort", {});
    return { kind: "abort", cause: AbortCause.scoreInTrainRun };
  }
  return outcome;
}

/**
 * The reward an ended (or scored) episode counts with: the recorded outcome's, else the one the report carries.
 * The one rule for the core's totals and the DO's ledger of ended episodes.
 * @returns undefined when neither has one
 */
export function reportedReward(outcome: EpisodeOutcome | null, report: Pick<EpisodeReported, "reward">): number | undefined {
  return outcome && outcome.kind !== "abort" ? outcome.reward : report.reward;
}

/** `episodeReported`: reporting (or running) → ended, or a failed attempt (expired BC-23, lost, aborted). */
export function onReported(d: Draft, e: EpisodeReported): EventAck {
  const row = lookupAttempt(d, e);
  if (!isRow(row)) return row;
  if (isTerminal(row.status)) return { status: "duplicate" };
  if (row.status === "queued" || row.status === "dispatched") return { status: "stale", reason: `episode is ${row.status}: no claim was reported` };
  if (e.result === "unknown") return onEndUnknown(d, row, e.reached === true, e.cause);
  const outcome = row.outcome;
  if (e.result === "ended" || (e.result === "aborted" && outcome?.kind === "score")) {
    const reward = reportedReward(outcome, e);
    if (reward === undefined || !Number.isFinite(reward)) {
      d.log("error", "episode reported ended without a recorded reward; record the outcome first", { episodeKey: row.episodeKey });
      return { status: "stale", reason: "ended without a reward: send episodeOutcomeRecorded first (or the reward)" };
    }
    endEpisode(d, row, reward);
    return APPLIED;
  }
  // a multi-swarm end refused on one server but accepted on others: those rewards sit in their servers' batches
  if (e.endedSwarms?.length && outcome?.kind === "end" && d.run.config.episodeType === "train" && row.windowIndex !== null) {
    landPartialEnd(d, row, outcome.reward, e.endedSwarms);
  }
  const cause =
    e.result === "expired" ? AbortCause.expired
    : e.result === "lost" ? (e.cause ?? AbortCause.lost)
    : outcome?.kind === "abort" ? outcome.cause
    : (e.cause ?? AbortCause.aborted);
  return failAttempt(d, row, cause);
}

/** Marks a row ended with its reward and resolves the group if it was the last open repeat. */
export function endEpisode(d: Draft, row: EpisodeRow, reward: number): void {
  // batch truth: a train reward lands in its claim's server batch; one already wiped means the repeat runs again
  if (d.run.config.episodeType === "train" && row.windowIndex !== null && landEpisode(d, row, reward) === "wiped") {
    rerunWipedRepeat(d, row, reward);
    return;
  }
  const ended = d.patchEpisode(row.episodeKey, { status: "ended", reward, deadlineAtMs: null, resolveRequestedAtMs: null, endUnknown: null });
  recordEnded(d, ended, reward);
  resolveGroupIfDone(d, row.groupKey);
}

/**
 * A group some of whose repeats the server already accepted gets this many times `maxAttempts` per repeat before
 * it is dropped: a dropped group leaves its ended repeats on the server as a group that never counts (and rewards
 * in a batch it may never close), so completing it is worth more tries.
 */
export const STARTED_GROUP_ATTEMPT_FACTOR = 3;

/** The attempts a repeat may use: `maxAttempts`, or {@link STARTED_GROUP_ATTEMPT_FACTOR} × that once a repeat of its group ended. */
function attemptLimit(d: Draft, row: EpisodeRow): number {
  const started = d.run.config.episodeType === "train" && groupRows(d, row.groupKey).some((r) => r.status === "ended");
  return d.run.config.maxAttempts * (started ? STARTED_GROUP_ATTEMPT_FACTOR : 1);
}

/**
 * Closes the current attempt with a cause. Retried (queued, attempt + 1, same task id, same window) while attempts
 * remain; after `maxAttempts` (at once for a cause in port/abort's `NON_RETRYABLE_CAUSES`) the repeat is `failed` and its group
 * dropped and replaced (BC-32). A repeat cut by over-provisioning is `dropped` without counting as a failure. While draining it is `aborted`; in a dropped group it is `dropped`. Nothing is ever
 * sent to the server from here.
 */
export function failAttempt(d: Draft, row: EpisodeRow, cause: string): EventAck {
  // a cut repeat (over-provisioning) is over, not failed: never retried, not counted as a failure
  if (row.cut === true) {
    closeCutRow(d, row);
    resolveGroupIfDone(d, row.groupKey);
    return APPLIED;
  }
  d.run.totals.attemptsFailed++;
  d.count(d.run.failuresByCause, cause);
  noteFailedAttempt(d.run, cause, row.outcome?.kind === "abort" ? row.outcome.detail : undefined, d.nowMs, row.attempt);
  const closed = { deadlineAtMs: null, lastCause: cause, resolveRequestedAtMs: null, endUnknown: null };
  if (d.run.phase === "draining") {
    d.patchEpisode(row.episodeKey, { ...closed, status: "aborted" });
  } else if (row.groupDropped) {
    d.patchEpisode(row.episodeKey, { ...closed, status: "dropped" });
  } else if (row.attempt - (row.wipes ?? 0) >= attemptLimit(d, row) || NON_RETRYABLE_CAUSES.has(cause)) {
    dropGroup(d, d.patchEpisode(row.episodeKey, { ...closed, status: "failed" }));
  } else {
    d.patchEpisode(row.episodeKey, {
      ...closed, status: "queued", attempt: row.attempt + 1, claims: [], globalStep: null, outcome: null,
      claimFailures: 0, unstartedExpiries: 0, notBeforeMs: null, dispatchedAtMs: null,
    });
  }
  resolveGroupIfDone(d, row.groupKey);
  return APPLIED;
}
