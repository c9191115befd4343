/**
 * @module scheduler/commands — what the core asks the Durable Object to do (imperative names), and the shape of one
 * `decide` result: new state, commands, the rows to upsert/delete, and the event's ack.
 */
import type { EpisodeType, SwarmThrottlePolicy } from "../protocol/index.ts";
import type { DispatchRef, EventAck, EpisodeRef, WeightSyncMetrics } from "../port/index.ts";
import type { BatchRow, EpisodeRow, EvalTaskRow, LandedChange, RunRow, SchedulerState, WindowRow } from "./state.ts";
import type { RunSummary } from "./summary.ts";

/** The throttle policy without `current_task_id` (wire field names, spec §2.3); the DO adds the resolved task id. */
export interface ThrottleTemplate {
  ratio: number;
  expected_batch_size: number;
  expected_num_repeat: number;
}

/** One queue message to send: everything the consumer needs except the Task, which the DO resolves by index. */
export interface EpisodeDispatch
  extends DispatchRef,
    Pick<EpisodeRow, "groupKey" | "source" | "taskIndex" | "epoch" | "repeat" | "windowIndex"> {
  /** `taskIndex` is the row in the source dataset: the DO loads the Task by it (BC-53: never inlined when large) */
  episodeType: EpisodeType;
  /** swarm names to claim on, first = step source */
  swarms: string[];
  discardEpisodeTimeoutSeconds: number;
  /** train: the claim's throttle policy minus `current_task_id` (see {@link throttlePolicyFor}); eval: null (spec §5.8) */
  throttle: ThrottleTemplate | null;
  /** the lease of a started invocation: the claim must be reported before this epoch-ms instant */
  leaseDeadlineAtMs: number;
  /** seconds between the running episode's heartbeats (tuning.heartbeatSeconds) */
  heartbeatSeconds: number;
}

/**
 * The SwarmThrottlePolicy to send with this episode's claim (spec §7): the dispatch's template plus the task id, so
 * the server's pool information records which task each episode serves.
 * @param taskId the resolved Task's `task_id` (non-empty, BC-30)
 * @returns the policy, or null for eval claims (throttle checks are skipped for eval, spec §5.8)
 */
export function throttlePolicyFor(dispatch: EpisodeDispatch, taskId: string): SwarmThrottlePolicy | null {
  return dispatch.throttle ? { ...dispatch.throttle, current_task_id: taskId } : null;
}

/** A server episode to abort with the run's client uuid. */
export interface ClaimRef {
  swarm: string;
  episodeUuid: string;
}

/** Abort these claims on the server (lease expiry, BC-51). The attempt is already closed in the state. */
export interface EpisodeAbort extends EpisodeRef {
  claims: ClaimRef[];
  reason: string;
}

/** A recorded `end` past its report lease: the DO resolves it from its outbox and reports `episodeReported`. */
export interface EpisodeResolve extends EpisodeRef {
  claims: ClaimRef[];
  reward: number;
}

/**
 * Poll `GET /get_engine_status` of these swarms and feed back one `engineStatusSeen` each. For the swarms in
 * `withPool` also read `GET /get_current_batch_rollout_pool_information` and add it to the event as `pool`.
 */
export interface PollEngineStatus {
  type: "pollEngineStatus";
  swarms: string[];
  /** swarms whose pool information the core wants with the status (train runs: the first swarm); absent = none */
  withPool?: string[];
  /**
   * the run's part of the server's top-up plan (edge/swarm-server/top-up-plan.ts), sent with the pull of `swarm`: its
   * groups there with no claimed episode yet, and its ask to top up the batch at `ask.step` by `ask.groups` groups (the
   * answer comes back on the event as `topUpGrant`); absent = nothing to tell
   */
  plan?: TopUpPlanRequest;
}

/** A run's part of its first server's top-up plan (see {@link PollEngineStatus.plan}). */
export interface TopUpPlanRequest {
  swarm: string;
  pendingGroups: number;
  /** `midRun`: the run still has windows to open (absent: its last window is resolved) */
  ask?: { step: number | null; groups: number; midRun?: boolean };
}
/** Send these messages to the queue (slots are already reserved, BC-47); on failure send `dispatchFailed`. */
export interface DispatchEpisodes {
  type: "dispatchEpisodes";
  episodes: EpisodeDispatch[];
}
/** Abort these claims on the server; fire and forget (abort never ends anything). Never retried by the core. */
export interface AbortEpisodes {
  type: "abortEpisodes";
  episodes: EpisodeAbort[];
}
/** Resolve these `end` outcomes from the outbox (never end twice: BC-26, BC-51), then report each. */
export interface ResolveOutbox {
  type: "resolveOutbox";
  episodes: EpisodeResolve[];
}
/** An end the core resolved from the server's record: report it to the run as the outbox would (ledger, attempt row). */
export interface EpisodeSettle extends EpisodeRef {
  result: "ended" | "lost";
  cause?: string;
  reward: number;
}
/** Report these ends' outcomes, resolved from the server's record (scheduler/unknown-ends), through the run's loop. */
export interface SettleEnds {
  type: "settleEnds";
  episodes: EpisodeSettle[];
}
/** Write a structured log line (dropped groups BC-32, reconciles BC-51 …). */
export interface LogMessage {
  type: "log";
  level: "info" | "warn" | "error";
  message: string;
  fields: Record<string, string | number | boolean | null>;
}
/** The run is over: persist and publish the summary, stop the alarm. */
export interface FinishRun {
  type: "finishRun";
  summary: RunSummary;
}

/** Every command the core emits. Carry them out in the order given. */
export type SchedulerCommand = LogMessage | AbortEpisodes | ResolveOutbox | SettleEnds | DispatchEpisodes | PollEngineStatus | AgreeSyncWeight | WeightSyncHook | FinishRun;

/**
 * The first server entered WEIGHT_SYNCING at `step` (once per step): call the function module's `onWeightSync(step,
 * metrics)` and the run's `weightSyncWebhook`, if any. Fire and forget: a failing or slow hook is logged, never awaited.
 */
export interface WeightSyncHook {
  type: "weightSyncHook";
  step: number;
  metrics: WeightSyncMetrics;
}

/**
 * Vote for the weight sync of the batch at `step` on `swarm` (agree modes, spec §3.14): one `POST /agree_sync_weight`
 * with the run's client uuid (10 s timeout), answered with a `syncVoteAnswered` event. The core retries.
 */
export interface AgreeSyncWeight {
  type: "agreeSyncWeight";
  swarm: string;
  step: number | null;
}

/** Rows to persist after one `decide`: upsert these, delete those. `run` is null when the run row did not change. */
export interface RowChanges {
  run: RunRow | null;
  episodes: EpisodeRow[];
  deletedEpisodeKeys: string[];
  steps: WindowRow[];
  evalTasks: EvalTaskRow[];
  /** server batch rows to upsert (keyed by `batchKey`; never deleted); store them without `episodes` (`storedBatchRow`) */
  batches: BatchRow[];
  /** the batches' landed episodes that changed: upsert, or delete when `episode` is null */
  landed: LandedChange[];
  /** attempts the core closed itself (a lease expired with no report of their consumer): the dashboard's attempt rows */
  closedAttempts?: ClosedAttempt[];
}

/** An attempt the core closed on a lease expiry: the episode's row as it was before, the cause, the instant (epoch ms). */
export interface ClosedAttempt {
  row: EpisodeRow;
  cause: string;
  atMs: number;
}

/** The result of one `decide`. */
export interface Decision {
  state: SchedulerState;
  commands: SchedulerCommand[];
  changes: RowChanges;
  ack: EventAck;
}
