/**
 * @module edge/run/run-object-rpc — what the run's Durable Object (`RolloutScheduler`, edge/run/rollout-scheduler.ts) answers
 * over JS RPC: the runs API's control calls, the episode port the queue consumers call ({@link SchedulerPort}), the
 * swarm servers' objects' push, and the dashboard's reads. Every call that needs a run answers null (the API: 404) or,
 * on the episode port, `unknown` when the object holds none. Types only: the class implements it.
 */
import type { ClaimAck, ClaimFailureReport, ClaimReport, EndedEpisode, EventAck, HeartbeatAck, HeartbeatReport, OutcomeReport, ResultReport, SandboxIntent, SandboxIntentAnswer, SandboxRelease, SchedulerPort } from "../../port/index.ts";
import type { Task } from "../../protocol/index.ts";
import type { AttemptRow } from "./attempts.ts";
import type { RunMetrics } from "./board/metrics.ts";
import type { DashboardSnapshot } from "./board/snapshot.ts";
import type { StagedTasks } from "./run-create.ts";
import type { CreateRunInput, CreateRunResult, RunListing, RunReport, RunView } from "./run-views.ts";

/** The RPC surface of one run's Durable Object. */
export interface RunObjectRpc extends SchedulerPort {
  // ---- control (the runs API, edge/api/runs-routes.ts) ----------------------------------------------------------------

  /**
   * Stores one chunk of a new run's inline rows (`POST /runs` sends them in bounded chunks before `create`, never all
   * in one call: an RPC carries at most 32 MiB), with run-scoped task ids unless `scope` is "dataset". Idempotent by
   * position.
   * @throws Error once the run exists
   */
  stageTasks(input: StagedTasks): void;

  /**
   * Creates the run (idempotent for the same runId) and starts it: prepares and checks its datasets
   * (`edge/run/run-create.ts`), then stores the spec (without rows) and the first state. Issues: nothing is kept.
   * @throws Error when the object already holds another run
   */
  create(input: CreateRunInput): Promise<CreateRunResult>;

  /** The run's status view, or null when no run was created in this object (the API answers 404). */
  status(): RunView | null;

  /** The run's row of `GET /runs`, or null when this object holds no run. */
  listing(): RunListing | null;

  /** Drains the run: no new dispatch; in-flight episodes finish or are aborted; nothing is left claimed. Null: no run. */
  stop(reason?: string): Promise<RunView | null>;

  /** The run summary and, for eval runs, the eval report (edge/run/run-views `runReport`). Null: no run. */
  report(): RunReport | null;

  /** The ledger of episodes whose reward the server accepted, optionally of one global step (paged). Null: no run. */
  endedEpisodes(query?: { globalStep?: number; limit?: number; offset?: number }): EndedEpisode[] | null;

  // ---- from the run's swarm servers' objects (edge/swarm-server/swarm-server.ts) -----------------------------------

  /**
   * The engine of `swarm` changed (the one status watcher of that server saw it): a wake-up that carries nothing. The
   * run's alarm fires at once and pulls the observation (`SwarmServer.subscribe`'s answer), fed to the core as
   * `engineStatusSeen` (a restart first, see EngineLink); a `failed` note fails the run. Ignored by a finished run.
   */
  engineChanged(swarm: string): Promise<void>;

  // ---- the episode port (called by queue consumers, edge/consumer/episode-consumer.ts) ------------------------------------

  /** The consumer holds its claims: the core's ack, with the run's secrets when the episode may go on (`applied`, `duplicate`). */
  episodeClaimed(report: ClaimReport): Promise<ClaimAck>;

  /**
   * The invocation started, or its function still runs (scheduler/heartbeats): moves the episode's lease. A running
   * beat is held up to `holdMs` (≤ `MAX_HOLD_MS`, edge/run/stop-waiters) and answered at once with `runStopping` when
   * the run starts to stop: the running function's one stop channel.
   */
  episodeHeartbeat(report: HeartbeatReport, options?: { holdMs?: number }): Promise<HeartbeatAck>;

  /** The consumer could not claim (not an attempt). */
  claimFailed(report: ClaimFailureReport): Promise<EventAck>;

  /** The commit point before any end or abort: the outcome, its outputs kept in the outbox for resends (BC-26). */
  episodeOutcomeRecorded(report: OutcomeReport): Promise<EventAck>;

  /** The end or abort result; an applied one writes the attempt row and, when ended, the ledger (edge/run/report-ledger). */
  episodeReported(report: ResultReport): Promise<EventAck>;

  /**
   * The resolved gateway headers of the run's swarms, for a consumer about to claim or a later holder of a handed-over
   * attempt: only for the current dispatch of the attempt while it waits for its claim or runs (else null: the
   * message is stale). Secrets come from the run and the operator (operator wins).
   */
  swarmHeaders(ref: { episodeKey: string; attempt: number; dispatchId: number }): Record<string, Record<string, string>> | null;

  /**
   * The consumer is about to create its attempt's sandbox (edge/run/sandboxes): `go` once the row is written (backend,
   * id, created-at) and the pacing allows, `wait` at the run's live cap or create rate, `stale` for an attempt that is
   * not current. Idempotent by sandbox id.
   */
  sandboxIntent(intent: SandboxIntent): SandboxIntentAnswer;

  /** The attempt is done with its sandbox: destroyed (confirmed), or left to the run's sweep. Idempotent by sandbox id. */
  sandboxReleased(release: SandboxRelease): Promise<{ status: "applied" | "duplicate" | "unknown" }>;

  /** One task of the run (a consumer asks for a task too large for its queue message). @throws naming the task */
  getTask(ref: { source: string; taskIndex: number }): Promise<Task>;

  // ---- the dashboard (edge/dashboard) ----------------------------------------------------------------------------

  /** `GET /runs/:id/metrics`: per step, source and swarm. Null: no run. */
  metrics(): RunMetrics | null;

  /** The metrics export as CSV. Null: no run. */
  metricsCsv(): string | null;

  /** The metrics export as JSON Lines (one flat object per group, the CSV's columns as keys). Null: no run. */
  metricsJsonl(): string | null;

  /** The run page's data (`GET /runs/:id/dashboard`). Null: no run. */
  dashboard(): Promise<DashboardSnapshot | null>;

  /** Reported attempts of one 0-based step (window), oldest first, at most `limit`. Null: no run. */
  attempts(query: { windowIndex?: number; limit?: number }): AttemptRow[] | null;
}
