/**
 * @module port/reports — what an episode invocation reports to the scheduler and what it is answered: the
 * {@link SchedulerPort} (the Durable Object's episode RPCs), its report bodies, the outcome recorded before any end
 * or abort (BC-26) and the acks. The scheduler core's events are these reports plus a `type` (scheduler/events).
 * Every report is keyed by `(episodeKey, attempt)` and applied at most once (BC-45, BC-47, BC-51).
 */
import type { ClaimFailureKind, Task, ValidWorkflowOutput } from "../protocol/index.ts";

/** Identifies one try of one logical episode. */
export interface EpisodeRef {
  episodeKey: string;
  /** 1-based; from the dispatch */
  attempt: number;
}

/**
 * Identifies one queue message of one try: a redelivered message of an earlier dispatch (at-least-once queues) is
 * told apart from the current one, so claim-phase reports apply at most once per message.
 */
export interface DispatchRef extends EpisodeRef {
  /** from the dispatch (counts the episode's queue messages, 1-based) */
  dispatchId: number;
}

/** One server episode held by a logical episode (one per swarm, issue 4 §4), with the step read right after the claim. */
export interface EpisodeClaim {
  swarm: string;
  /** the server's `episode_uuid` */
  episodeUuid: string;
  /** `global_step` of that swarm read right after the claim (design note), null if unknown */
  globalStep: number | null;
}

/** What the consumer decided, recorded (outbox) BEFORE it sends end/abort (BC-26). */
export type EpisodeOutcome =
  | { kind: "end"; reward: number } // train: end_episode with a finite reward (BC-22)
  | { kind: "score"; reward: number } // eval: scored, then aborted (spec §5.8)
  // an AbortCause (port/abort) or the function's own reason; `detail`: for a thrown error its name, message and
  // first stack frames (file:line), at most 600 characters (the run stops early on the same one: scheduler/failure-streak)
  | { kind: "abort"; cause: string; detail?: string };

/** Why a claim did not happen: the server's fail_cause class (spec §8.3) or the multi-swarm deadline (BC-33). */
export type ClaimFailureCause = ClaimFailureKind | "deadline";

/**
 * How the server answered the end/abort: `ended` (delivered; also "not found" after an unknown outcome, BC-26),
 * `aborted` (abort sent: eval after scoring, or an abort outcome), `expired` (end refused: not claimed / other
 * client, BC-23), `lost` (end refused because the record is gone, e.g. the weight-sync wipe, spec §5.5: the
 * client's `lost`).
 */
export type EpisodeReportResult = "ended" | "aborted" | "expired" | "lost";

/** `episodeClaimed`: the consumer holds a server episode on every swarm the function needs (all-or-nothing, BC-33). */
export interface ClaimReport extends DispatchRef {
  /** one per swarm; the first swarm's `globalStep` attributes the episode to a step */
  claims: EpisodeClaim[];
}

/**
 * `episodeHeartbeat`: the invocation of this queue message is alive. `started`: sent first, before the claim, so the
 * scheduler knows the message was delivered (an un-started dispatch is sent again after a short lease, a started one
 * keeps the long one). `running`: sent every `heartbeatSeconds` while the function runs, so a consumer that died is
 * given up after the short heartbeat lease instead of the whole run lease. Answered `applied`; `stale`/`unknown`
 * mean the scheduler gave up on this message or attempt: skip it (started) or stop the function (running).
 */
export interface HeartbeatReport extends DispatchRef {
  /**
   * `started`: the invocation is alive, before its claim; `running`: the function runs; `quiet`: the last beat —
   * the invocation has no subrequest left for more, so the run lease (not the heartbeat lease) bounds the episode
   */
  stage: "started" | "running" | "quiet";
}

/** `claimFailed`: the consumer could not claim (not ROLLING, no episodes before its deadline). Not an attempt. */
export interface ClaimFailureReport extends DispatchRef {
  kind: ClaimFailureCause;
  /** the swarm whose claim failed and the status its fail_cause names (`statusFromFailCause`), if any */
  swarm?: string;
  engineStatus?: string;
  detail?: string;
}

/**
 * `episodeOutcomeRecorded`: the consumer persisted its decision and is about to send end or abort (BC-26). This is
 * the commit point: only an `applied` (or `duplicate` with the same outcome) answer lets it send `end_episode`.
 */
export interface OutcomeRecord extends EpisodeRef {
  outcome: EpisodeOutcome;
}

/** {@link OutcomeRecord} plus the full outputs per swarm, kept in the DO's outbox for resends (BC-26, BC-51). */
export interface OutcomeReport extends OutcomeRecord {
  outputs?: Record<string, ValidWorkflowOutput>;
}

/**
 * What one attempt measured of its own work (runtime/episode-meter), sent with its end report so the run can
 * aggregate learning signals and platform use without another call. Durations are ms; token counts are sums over
 * the calls whose answer carried `usage` (null when none did).
 */
export interface EpisodeSignals {
  /** LLM calls the function made (turns), each counted once however often the runtime retried it */
  llmCalls: number;
  /** tool calls the model asked for */
  toolCalls: number;
  /** characters of the model's answers (text and tool-call arguments), summed over the calls */
  responseChars: number;
  promptTokens: number | null;
  completionTokens: number | null;
  /** calls the length limit cut (`finish_reason: length`, `max_tokens`, an incomplete response) */
  lengthCut: number;
  /** per call, at most {@link MAX_SIGNAL_CALLS}: from the request to the answer's last byte */
  callMs: number[];
  /** per call (same order): its completion tokens, null when not reported */
  callTokens: (number | null)[];
  /** the invocation's time on this attempt, from its start to the end report */
  wallMs: number;
  /** bytes of the transcript this attempt stores (its LLM traffic, capped like the record): an estimate; 0 without transcripts */
  transcriptBytes: number;
  /** seconds of sandboxes this attempt held; 0 without sandboxes (the project has no sandbox scope yet) */
  sandboxSeconds: number;
}

/** Calls whose latency an {@link EpisodeSignals} lists (the rest are counted, not listed). */
export const MAX_SIGNAL_CALLS = 32;

/**
 * `episodeReported`: the consumer (or the DO, after resolving the outbox) reports the end/abort result, or, with
 * `unknown`, that an end was sent but its outcome is not known (both sends failed, or a resend after a lost answer
 * was refused "not rolling": the first send may be what closed the batch). The scheduler then resolves it from the
 * server's own record (pool information, the next status), never from that refusal.
 */
export interface ResultReport extends EpisodeRef {
  result: EpisodeReportResult | "unknown";
  /**
   * with `unknown`: the first send reached the server (its own 5xx answer, or a connection dropped after the request
   * was written), so a batch that closed without this episode still claimed means it was accepted; false when it may
   * never have arrived (a gateway's page, a refused connection, a timeout)
   */
  reached?: boolean;
  /** failure cause when no abort outcome was recorded first (defaults: "aborted" / "expired" / "lost") */
  cause?: string;
  /** the reward, when `ended` arrives without a recorded outcome */
  reward?: number;
  /**
   * when `result` is not `ended`: the swarms whose `/end_episode` the server accepted all the same (a multi-swarm
   * episode refused on another server). The repeat runs again on every swarm; these rewards stay on their servers
   * (the ledger keeps them, their batches are tracked), so nothing the servers accepted goes uncounted.
   */
  endedSwarms?: string[];
  /** what the attempt measured (the consumer's report; an outbox resend has none) */
  signals?: EpisodeSignals;
}

/**
 * The scheduler's answer to a report:
 *  - `applied`: the state changed as asked.
 *  - `duplicate`: this (episodeKey, attempt) report was applied before; nothing changed. For an outcome, `outcome`
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

/**
 * The answer to a heartbeat: the core's ack and, once the run stops before its end (a stop request, or it failed),
 * `runStopping`: the running function's `ctx.signal` fires and it has `graceMs` (ms) before it is cut. The one way a
 * stop reaches a running function: a `running` beat is held open until the run starts to stop or its hold ends.
 * `runStopping.cause` (absent: `run_stopped`) is the abort cause the stopped function reports, e.g. `batch_closed`
 * for an episode cut by over-provisioning (its batch closed on other task groups: grace 0).
 */
export type HeartbeatAck = EventAck & { runStopping?: { graceMs: number; cause?: string } };

/**
 * The answer to `episodeClaimed`: the core's ack, plus the run's secrets when the episode may go on — `applied`, or
 * `duplicate` while the reported attempt and dispatch is the episode's running one (a resent report, or a later
 * holder of a handed-over attempt asking again); a duplicate for a closed attempt is answered `stale`.
 */
export type ClaimAck = EventAck & { secrets?: Record<string, string> };

/**
 * The scheduler as seen from an episode invocation: the Durable Object's RPC methods (idempotent by
 * `(episodeKey, attempt)`, answering with an {@link EventAck}).
 */
export interface SchedulerPort {
  episodeClaimed(report: ClaimReport): Promise<ClaimAck>;
  claimFailed(report: ClaimFailureReport): Promise<EventAck>;
  episodeOutcomeRecorded(report: OutcomeReport): Promise<EventAck>;
  episodeReported(report: ResultReport): Promise<EventAck>;
  /**
   * The invocation is alive ({@link HeartbeatReport}). A `running` beat with `holdMs` is answered when the run starts
   * to stop (then with `runStopping`) or after at most `holdMs` ms: the running function's one stop channel
   * ({@link HeartbeatAck}). Optional: a port without it gets the long leases only and never stops functions early.
   */
  episodeHeartbeat?(report: HeartbeatReport, options?: { holdMs?: number }): Promise<HeartbeatAck>;
  /**
   * The resolved gateway headers of the run's swarms (by run-spec swarm name) for this dispatch, asked for before
   * the claim (and again by each later holder of a handed-over attempt) only when a swarm has header templates; null
   * when the dispatch is no longer current, or no longer waiting for its claim or running (skip it).
   */
  swarmHeaders?(ref: { episodeKey: string; attempt: number; dispatchId: number }): Promise<Record<string, Record<string, string>> | null> | Record<string, Record<string, string>> | null;
  /** the task of a message whose task was too large to inline (BC-53) */
  getTask(ref: { source: string; taskIndex: number }): Promise<Task> | Task;
}

/**
 * One server episode whose reward the server accepted (`/end_episode` answered success, BC-26 resends included):
 * a row of the run's ledger, `GET /runs/:id/episodes`.
 */
export interface EndedEpisode {
  episodeKey: string;
  attempt: number;
  swarm: string;
  episodeUuid: string;
  taskId: string;
  /** the swarm's `global_step` read right after the claim: the training step the episode belongs to */
  globalStep: number | null;
  reward: number;
  /** epoch ms when the DO recorded it */
  atMs: number;
  /**
   * set once the server batch holding this reward was wiped before training (`batch {key}: {why}`): the reward is not
   * counted and its repeat ran again, so one episode key has at most one row without it; absent or null: live
   */
  wipedBy?: string | null;
}
