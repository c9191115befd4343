/**
 * @module scheduler/events — what can happen to a run, as a union discriminated on `type` (past tense). Episode
 * events are keyed by `(episodeKey, attempt)` and applied at most once: alarms, queue deliveries and RPCs are at
 * least once (BC-45, BC-47, BC-51).
 */
import type { ClaimFailureReport, ClaimReport, DispatchRef, HeartbeatReport, OutcomeRecord, ResultReport } from "../port/index.ts";

/** The DO created the run and wants it going: the core schedules the first engine status poll. */
export interface RunStarted {
  type: "runStarted";
}

/**
 * What the pool information (`GET /get_current_batch_rollout_pool_information`, spec §3.13, §7.4) says of the batch
 * the engine is collecting. Never authoritative across phases (spec §11.20): the core reads it only for the batch
 * the status names.
 */
export interface PoolSeen {
  /** the pool's `global_step` (the server's live value) */
  globalStep: number | null;
  /** `completed_tasks`: task ids with ≥ num_repeat episodes in the batch */
  completedTasks: number;
  /** `completed_task_target` (= batch size; 0 when the engine has not pushed) */
  completedTaskTarget: number;
  /** `sample_collection_method`, the engine's stop condition (spec §7.3); absent: not pushed yet ("") or not read */
  method?: string;
  /** every episode uuid of `completed_tasks_details` (all tasks of the batch, complete or not) */
  episodeUuids: string[];
  /** `completed_tasks_details` itself: task id → the ended episode uuids of that task in the batch (absent: not read) */
  taskEpisodes?: Record<string, string[]>;
  /** `running_episode_details`: claimed episode uuid → its `optional_task_id` ("" when none); absent: not read */
  runningTaskIds?: Record<string, string>;
  /** `completed_tasks_rewards`: task id → the rewards of its ended episodes (non-dummy counting); absent: not read */
  taskRewards?: Record<string, number[]>;
}

/** The DO polled `GET /get_engine_status` of one swarm (spec §3.6). Use `ENGINE.CANNOT_CONNECT` when the poll failed. */
export interface EngineStatusSeen {
  type: "engineStatusSeen";
  swarm: string;
  engineStatus: string;
  globalStep: number | null;
  /** the pool information read right after the status (optional: when asked with `withPool`, and it answered) */
  pool?: PoolSeen;
  /** the server's answer to the run's top-up ask (`PollEngineStatus.plan`): groups it may open for the batch at `step` */
  topUpGrant?: { step: number | null; groups: number };
}

/** `sendBatch` threw: these dispatched episodes never reached the queue; they are queued again (not an attempt). */
export interface DispatchFailed {
  type: "dispatchFailed";
  episodes: DispatchRef[];
  reason?: string;
}

/** The episode port's `episodeClaimed` report (port/reports). */
export interface EpisodeClaimed extends ClaimReport {
  type: "episodeClaimed";
}

/** The port's `episodeHeartbeat` report: the invocation started, or its function is still running. Moves a lease only. */
export interface EpisodeHeartbeat extends HeartbeatReport {
  type: "episodeHeartbeat";
}

/** The port's `claimFailed` report: not an attempt, re-dispatched with back-off + jitter. */
export interface ClaimFailed extends ClaimFailureReport {
  type: "claimFailed";
}

/** The port's `episodeOutcomeRecorded` report: the commit point before any end or abort (BC-26). */
export interface EpisodeOutcomeRecorded extends OutcomeRecord {
  type: "episodeOutcomeRecorded";
}

/** The port's `episodeReported` report: the end/abort result (from the consumer, or the DO's outbox). */
export interface EpisodeReported extends ResultReport {
  type: "episodeReported";
}

/** The alarm fired (or any wake-up): leases, back-offs and polls are checked against `nowMs`. */
export interface Tick {
  type: "tick";
}

/** `POST /runs/:id/stop`: drain (no new dispatch; in-flight episodes finish or fail; done when none is in flight). */
export interface StopRequested {
  type: "stopRequested";
  reason?: string;
  /** the run cannot go on (the reason says why): the same drain, with stop reason `failed` */
  failed?: boolean;
}

/**
 * The answer of the run's `POST /agree_sync_weight` (spec §3.14) for the batch at `step` of `swarm`: `agreed`, or
 * `refused` with the server's `failure_reason` (not in the active list …), or `failed` (transport error, HTTP 500 in
 * a non-agree mode) with the error text.
 */
export interface SyncVoteAnswered {
  type: "syncVoteAnswered";
  swarm: string;
  step: number | null;
  result: "agreed" | "refused" | "failed";
  reason: string;
}

/** Every event the core accepts. */
export type SchedulerEvent =
  | RunStarted
  | SyncVoteAnswered
  | EngineStatusSeen
  | DispatchFailed
  | EpisodeClaimed
  | EpisodeHeartbeat
  | ClaimFailed
  | EpisodeOutcomeRecorded
  | EpisodeReported
  | Tick
  | StopRequested;
