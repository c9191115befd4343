/**
 * @module scheduler/events — what can happen to a run, as a union discriminated on `type` (past tense). Episode
 * events are keyed by `(episodeKey, attempt)` and applied at most once: alarms, queue deliveries and RPCs are at
 * least once (BC-45, BC-47, BC-51).
 */
import type { ClaimFailureKind } from "../protocol/index.ts";
import type { EpisodeClaim, EpisodeOutcome } from "./state.ts";

/** Identifies one try of one logical episode. */
export interface EpisodeRef {
  episodeKey: string;
  /** 1-based; from the dispatch command */
  attempt: number;
}

/**
 * Identifies one queue message of one try: a redelivered message of an earlier dispatch (at-least-once queues) is
 * told apart from the current one, so claim-phase events apply at most once per message.
 */
export interface DispatchRef extends EpisodeRef {
  /** from the dispatch command (counts the episode's queue messages, 1-based) */
  dispatchId: number;
}

/** The DO created the run and wants it going: the core schedules the first engine status poll. */
export interface RunStarted {
  type: "runStarted";
}

/** The DO polled `GET /get_engine_status` of one swarm (spec §3.6). Use `ENGINE.CANNOT_CONNECT` when the poll failed. */
export interface EngineStatusSeen {
  type: "engineStatusSeen";
  swarm: string;
  engineStatus: string;
  globalStep: number | null;
}

/** `sendBatch` threw: these dispatched episodes never reached the queue; they are queued again (not an attempt). */
export interface DispatchFailed {
  type: "dispatchFailed";
  episodes: DispatchRef[];
  reason?: string;
}

/** The consumer holds a server episode on every swarm the function needs (all-or-nothing, BC-33). */
export interface EpisodeClaimed extends DispatchRef {
  type: "episodeClaimed";
  /** one per swarm; the first swarm's `globalStep` attributes the episode to a step */
  claims: EpisodeClaim[];
}

/** Why a claim did not happen: the server's fail_cause class (spec §8.3) or the multi-swarm deadline (BC-33). */
export type ClaimFailureCause = ClaimFailureKind | "deadline";

/** The consumer could not claim (not ROLLING, no episodes before its deadline). Not an attempt: back-off + jitter. */
export interface ClaimFailed extends DispatchRef {
  type: "claimFailed";
  kind: ClaimFailureCause;
  /** the swarm whose claim failed and the status its fail_cause names (`statusFromFailCause`), if any */
  swarm?: string;
  engineStatus?: string;
  detail?: string;
}

/**
 * The consumer persisted its decision (outbox) and is about to send end or abort (BC-26). This is the commit point:
 * only an `applied` (or `duplicate` with the same outcome) answer lets it send `end_episode`; otherwise it aborts.
 */
export interface EpisodeOutcomeRecorded extends EpisodeRef {
  type: "episodeOutcomeRecorded";
  outcome: EpisodeOutcome;
}

/**
 * How the server answered the end/abort: `ended` (delivered; also "not found" after an unknown outcome, BC-26),
 * `aborted` (abort sent: eval after scoring, or an abort outcome), `expired` (end refused: not claimed / other
 * client, BC-23), `rejected` (end refused for another reason, e.g. the weight-sync wipe, spec §5.5).
 */
export type EpisodeReportResult = "ended" | "aborted" | "expired" | "rejected";

/** The consumer (or the DO, after resolving the outbox) reports the end/abort result. */
export interface EpisodeReported extends EpisodeRef {
  type: "episodeReported";
  result: EpisodeReportResult;
  /** failure cause when no abort outcome was recorded first (defaults: "aborted" / "expired" / "end_rejected") */
  cause?: string;
  /** the reward, when `ended` arrives without a recorded outcome */
  reward?: number;
}

/** The alarm fired (or any wake-up): leases, back-offs and polls are checked against `nowMs`. */
export interface Tick {
  type: "tick";
}

/** `POST /runs/:id/stop`: drain (no new dispatch; in-flight episodes finish or fail; done when none is in flight). */
export interface StopRequested {
  type: "stopRequested";
  reason?: string;
}

/** Every event the core accepts. */
export type SchedulerEvent =
  | RunStarted
  | EngineStatusSeen
  | DispatchFailed
  | EpisodeClaimed
  | ClaimFailed
  | EpisodeOutcomeRecorded
  | EpisodeReported
  | Tick
  | StopRequested;

/**
 * The core's answer to an event (the DO returns it to the consumer):
 *  - `applied`: the state changed as asked.
 *  - `duplicate`: this (episodeKey, attempt) event was applied before; nothing changed. For an outcome, `outcome`
 *    is the one recorded: the consumer carries on with it (its earlier RPC got through).
 *  - `stale`: the attempt is closed (lease expired, re-queued, group dropped, run stopping): the consumer must abort
 *    whatever it holds, never end, and ack.
 *  - `unknown`: no such episode/attempt/swarm (already resolved and pruned, or never dispatched): same as stale.
 */
export type EventAck =
  | { status: "applied" }
  | { status: "duplicate"; outcome?: EpisodeOutcome | null }
  | { status: "stale"; reason: string }
  | { status: "unknown"; reason: string };
