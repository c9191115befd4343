/**
 * @module edge/rollout-scheduler — `RolloutScheduler`, the Durable Object that owns one run (issue 3 §2). It hosts
 * the pure core: every RPC and every alarm does the same thing — `decide` synchronously (slots reserved before any
 * await, BC-47), persist the changed rows (one per episode, BC-53), carry out the commands, re-arm the alarm
 * (always, in `finally`, BC-45). State is rebuilt from SQLite on every wake, so a run survives eviction and
 * deploys (BC-51). Events are idempotent by `(episodeKey, attempt)`: alarms, queue deliveries and RPCs are at
 * least once.
 */
import { DurableObject } from "cloudflare:workers";
import type { ClaimAck, ClaimFailureReport, ClaimReport, EndedEpisode, EventAck, OutcomeReport, ResultReport, SchedulerPort, StopWatchAnswer } from "../port/index.ts";
import type { Task } from "../protocol/index.ts";
import { currentStep, decide, nextWakeAtMs, type SchedulerCommand, type SchedulerEvent, type SchedulerState } from "../scheduler/index.ts";
import { runScopedTaskId } from "../tasks/index.ts";
import { planAlarm } from "./alarm-plan.ts";
import { ApplyStats } from "./apply-stats.ts";
import type { CommandRunner } from "./command-runner.ts";
import type { AttemptRow } from "./dashboard/attempts.ts";
import { type LiveFeed, noRunResponse } from "./dashboard/live.ts";
import type { RunMetrics } from "./dashboard/metrics.ts";
import type { RunDashboard } from "./dashboard/run-dashboard.ts";
import type { DashboardSnapshot } from "./dashboard/snapshot.ts";
import type { RunDatasets } from "./datasets.ts";
import { EngineLink } from "./engine-link.ts";
import type { EngineObservation } from "./engine-note.ts";
import type { Env } from "./env.ts";
import { jsonLogger } from "./log.ts";
import { settleOutcome, settleReport, stashOutputs } from "./report-ledger.ts";
import { prepareRun } from "./run-create.ts";
import { runJob } from "./run-job.ts";
import { runListing, runReport, runView, type CreateRunInput, type CreateRunResult, type RunListing, type RunReport, type RunView } from "./run-views.ts";
import { runGatewayHeaders } from "./secrets.ts";
import { runIsStopping, StopWaiters } from "./stop-waiters.ts";
import type { RunMeta, SchedulerStorage } from "./storage.ts";
import { runObjectParts } from "./run-object-parts.ts";

export { MAX_STOP_WATCH_MS } from "./stop-waiters.ts";

/** The episode port's answer for a run this object does not hold: the consumer gives its claim back and acks. */
const NO_RUN: EventAck = { status: "unknown", reason: "no such run (deleted, or never created here)" };
/** Commands that call a swarm server and may take long: not run inside an episode-port RPC (see `#apply`). */
const SWARM_COMMANDS: ReadonlySet<SchedulerCommand["type"]> = new Set(["pollEngineStatus", "abortEpisodes", "resolveOutbox"]);
/** Alarm back-off after a failing tick (the handler itself never throws). */
const FAILED_TICK_ALARM_MS = 2_000;
/** How often an active run looks for its claims that nobody holds (edge/claim-sweep). */
const CLAIM_SWEEP_INTERVAL_MS = 5_000;

/**
 * The Durable Object of one run. RPC methods: control (`create`, `status`, `listing`, `stop`, `report`), the episode
 * port (with `watchStop`), and `engineObserved` (pushed by the run's swarm servers' objects).
 */
export class RolloutScheduler extends DurableObject<Env> implements SchedulerPort {
  #storage!: SchedulerStorage;
  #state: SchedulerState | null = null;
  #meta: RunMeta | null = null;
  #commands!: CommandRunner;
  /** the run's side of its swarm servers' objects (null before `create`) */
  #link: EngineLink | null = null;
  /** running episodes' stop watches, released when the run stops */
  readonly #stopWaiters = new StopWaiters();
  #datasets!: RunDatasets;
  #dashboard!: RunDashboard;
  #live!: LiveFeed;
  /** the alarm time last set by `#arm` (null: unknown, e.g. after a reset or once the alarm fired) */
  #armedAtMs: number | null = null;
  /** decide + persist time per event (in memory), shown as `scheduler` in the status view */
  readonly #applyStats = new ApplyStats();
  #claimSweptAtMs = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      ({ storage: this.#storage, datasets: this.#datasets, commands: this.#commands, dashboard: this.#dashboard, live: this.#live } = runObjectParts(ctx, env, {
        meta: () => this.#require().meta,
        state: () => this.#require().state,
        current: () => ({ state: this.#state, meta: this.#meta }),
        view: () => this.status(),
        feed: (event, inline) => this.#apply(event, inline),
        report: (report) => this.episodeReported(report),
        observeEngine: async (swarm, inline, withPool) => {
          const obs = await this.#link!.observe(swarm, withPool);
          await this.#onObservation(obs, inline);
          return obs.note.kind === "unreachable" ? obs.note.error : null;
        },
        log: (level, message, fields) => this.#log(level, message, fields),
        gatewayHeaders: (swarm) => this.#gatewayHeaders()[swarm] ?? {},
        finished: () => this.#finished(),
      }));
      this.#meta = this.#storage.meta();
      this.#state = this.#storage.loadState();
      // a run that finished before its secrets were deleted (a reset in between): delete them now
      if (this.#state?.run.phase === "finished" && this.#storage.scrubSecrets()) this.#meta = this.#storage.meta();
      if (this.#meta) this.#link = this.#linkFor(this.#meta);
    });
  }

  #linkFor(meta: RunMeta): EngineLink {
    return new EngineLink(this.env, this.ctx.storage.kv, { runId: meta.runId, spec: meta.spec, jobYaml: meta.jobYaml ?? runJob(meta.spec).toYaml() }, (swarm) => this.#gatewayHeaders()[swarm] ?? {});
  }

  // ---- control -------------------------------------------------------------------------------------------------

  /**
   * Stores one chunk of a new run's inline rows (`POST /runs` sends them in bounded chunks before `create`, never
   * all in one call: an RPC carries at most 32 MiB), with run-scoped task ids unless `scope` is "dataset".
   * Idempotent by position.
   * @throws Error once the run exists
   */
  stageTasks(input: { runId: string; source: string; start: number; tasks: Task[]; scope: "run" | "dataset" }): void {
    if (this.#meta) throw new Error(`run ${this.#meta.runId} already exists; its tasks cannot change`);
    const scoped = input.tasks.map((t) => ({ ...t, task_id: runScopedTaskId(t.task_id, input.runId, input.scope) }));
    this.#storage.putTasks(input.source, scoped, input.start);
  }

  /**
   * Creates the run (idempotent for the same runId) and starts it: prepares and checks its datasets
   * (`edge/run-create.ts`), then stores the spec (without rows) and the first state.
   * @throws Error when the object already holds another run
   */
  async create(input: CreateRunInput): Promise<CreateRunResult> {
    if (this.#meta) {
      if (this.#meta.runId !== input.runId) throw new Error(`this object already holds run ${this.#meta.runId}`);
      return { view: this.status()!, issues: [] };
    }
    const prepared = await prepareRun(input, { datasets: this.#datasets, storage: this.#storage, env: this.env, nowMs: Date.now() });
    if (!("state" in prepared)) return { view: null, issues: prepared.issues };
    const { state, meta } = prepared;
    this.ctx.storage.transactionSync(() => {
      this.#storage.setMeta(meta);
      this.#storage.persist({ run: state.run, episodes: [], deletedEpisodeKeys: [], steps: [], evalTasks: [], batches: [] });
    });
    this.#meta = meta;
    this.#state = state;
    this.#link = this.#linkFor(meta);
    await this.#apply({ type: "runStarted" }, true);
    return { view: this.status()!, issues: [] };
  }

  /** The run's status view, or null when no run was created in this object (the API answers 404). */
  status(): RunView | null {
    if (!this.#state || !this.#meta) return null;
    return { ...runView(this.#state, this.#meta, this.#storage.logTail(20), { notes: this.#link?.notes() ?? {}, failure: this.#failure(), nowMs: Date.now() }), scheduler: this.#applyStats.view() };
  }

  /** The run's row of `GET /runs`, or null when this object holds no run. */
  listing(): RunListing | null {
    const view = this.status();
    return view && runListing(view);
  }

  /**
   * An observation pushed by one of the run's swarm servers' objects (the one status watcher of that server): fed
   * to the core as `engineStatusSeen` (a restart first, see EngineLink); a `failed` note fails the run.
   */
  async engineObserved(obs: EngineObservation): Promise<void> {
    if (!this.#state || !this.#link || this.#state.run.phase === "finished") return;
    await this.#onObservation(obs, false);
  }

  /**
   * A running episode's stop watch (called by the consumer while its function runs): answers at once when the run
   * is stopping, else when it starts to, or after `maxWaitMs` (≤ {@link MAX_STOP_WATCH_MS}) with `stopped: false`.
   */
  async watchStop(maxWaitMs: number): Promise<StopWatchAnswer> {
    const graceMs = (this.#state?.run.config.timing.stopGraceSeconds ?? 30) * 1000;
    if (!this.#state || this.#isStopping()) return { stopped: true, graceMs };
    await this.#stopWaiters.wait(maxWaitMs);
    return { stopped: this.#isStopping(), graceMs };
  }

  /** Drains the run: no new dispatch; in-flight episodes finish or are aborted; nothing is left claimed. Null: no run. */
  async stop(reason = "stop requested"): Promise<RunView | null> {
    if (!this.#state) return null;
    await this.#apply({ type: "stopRequested", reason }, true);
    return this.status();
  }

  /** The run summary and, for eval runs, the eval report (edge/run-views `runReport`). Null: no run. */
  report(): RunReport | null {
    if (!this.#state) return null;
    return runReport(this.#state, this.#storage.summary(), (source, taskIndex) => this.#storage.taskId(source, taskIndex));
  }

  // ---- episode port (called by queue consumers) ------------------------------------------------------------------

  async episodeClaimed(report: ClaimReport): Promise<ClaimAck> {
    if (!this.#state) return NO_RUN;
    const ack = await this.#apply({ type: "episodeClaimed", ...report });
    // `duplicate` = these very claims were applied before (a resent RPC whose first answer was lost): the consumer
    // carries on with the episode, so it needs the secrets too
    return ack.status === "applied" || ack.status === "duplicate" ? { ...ack, secrets: this.#meta?.spec.secrets ?? {} } : ack;
  }

  /**
   * The resolved gateway headers of the run's swarms, for a consumer about to claim: only for the current dispatch
   * of the attempt (else null: the message is stale). Secrets come from the run and the operator (operator wins).
   */
  swarmHeaders(ref: { episodeKey: string; attempt: number; dispatchId: number }): Record<string, Record<string, string>> | null {
    const row = this.#state?.episodes[ref.episodeKey];
    if (!row || !this.#meta || row.attempt !== ref.attempt || row.dispatchId !== ref.dispatchId || row.status !== "dispatched") return null;
    return this.#gatewayHeaders();
  }

  /** Headers per swarm name (swarms without templates are left out; unresolvable ones are logged and left out). */
  #gatewayHeaders(): Record<string, Record<string, string>> {
    const meta = this.#meta;
    if (!meta) return {};
    return runGatewayHeaders(meta.spec, this.env.AJET_SECRETS, (swarm, missing) => this.#log("warn", `swarm ${swarm}: gateway headers need secrets nobody sets: ${missing.join(", ")}`, { swarm }));
  }

  /** The run has finished: its secrets are deleted, its quota slot released, its swarm servers' objects left. */
  async #finished(): Promise<void> {
    await this.#link?.leave();
    if (this.#storage.scrubSecrets()) this.#meta = this.#storage.meta();
    const principal = this.#meta?.principal;
    if (principal && this.#meta) await this.env.RUN_QUOTA.get(this.env.RUN_QUOTA.idFromName(principal)).release(this.#meta.runId);
  }

  async claimFailed(report: ClaimFailureReport): Promise<EventAck> {
    if (!this.#state) return NO_RUN;
    return this.#apply({ type: "claimFailed", ...report });
  }

  async episodeOutcomeRecorded(report: OutcomeReport): Promise<EventAck> {
    if (!this.#state) return NO_RUN;
    stashOutputs(this.#storage, this.#state.episodes[report.episodeKey], report);
    const { outputs: _outputs, ...event } = report;
    const ack = await this.#apply({ type: "episodeOutcomeRecorded", ...event });
    settleOutcome(this.#storage, report, ack);
    return ack;
  }

  async episodeReported(report: ResultReport): Promise<EventAck> {
    if (!this.#state) return NO_RUN;
    const row = this.#state.episodes[report.episodeKey];
    const box = this.#storage.outbox(report.episodeKey, report.attempt);
    const ack = await this.#apply({ type: "episodeReported", ...report });
    const log = (level: "info" | "warn" | "error", message: string, fields: Record<string, unknown>) => this.#log(level, message, fields);
    if (settleReport(this.#storage, log, { row, box, report, ack, nowMs: Date.now() })) await this.#arm(true);
    return ack;
  }

  /** The ledger of episodes whose reward the server accepted, optionally of one global step (paged). */
  endedEpisodes(query: { globalStep?: number; limit?: number; offset?: number } = {}): EndedEpisode[] | null {
    if (!this.#state) return null;
    return this.#storage.endedEpisodes({ globalStep: query.globalStep, limit: Math.min(query.limit ?? 1000, 10_000), offset: query.offset ?? 0 });
  }

  // ---- dashboard (edge/dashboard) ---------------------------------------------------------------------------------

  /** `GET /runs/:id/metrics`: per step, source and swarm. Null: no run. */
  metrics(): RunMetrics | null {
    return this.#dashboard.metrics();
  }

  /** The metrics export as CSV. Null: no run. */
  metricsCsv(): string | null {
    return this.#dashboard.metricsCsv();
  }

  /** The run page's data (`GET /runs/:id/dashboard`). Null: no run. */
  dashboard(): Promise<DashboardSnapshot | null> {
    return this.#dashboard.snapshot();
  }

  /** Reported attempts of one 0-based step (window), oldest first, at most `limit`. Null: no run. */
  attempts(query: { windowIndex?: number; limit?: number }): AttemptRow[] | null {
    return this.#dashboard.attempts(query);
  }

  /** The run page's live feed: a WebSocket upgrade (`GET /runs/:id/live`), hibernatable. */
  override async fetch(request: Request): Promise<Response> {
    if (!this.#state) return noRunResponse();
    return this.#live.accept(request);
  }

  override async webSocketMessage(ws: WebSocket): Promise<void> {
    await this.#live.resend(ws);
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    this.#live.close(ws, code);
  }

  /** One task of the run (a consumer asks for a task too large for its queue message). @throws naming the task */
  getTask(ref: { source: string; taskIndex: number }): Promise<Task> {
    return this.#datasets.task(ref.source, ref.taskIndex);
  }

  // ---- alarm ---------------------------------------------------------------------------------------------------

  /** One tick: leases, back-offs, polls (BC-45: catches everything and always re-arms). */
  override async alarm(info?: AlarmInvocationInfo): Promise<void> {
    this.#armedAtMs = null; // the alarm that fired is spent
    try {
      if (this.#state) {
        await this.#drainPendingCommands();
        await this.#apply({ type: "tick" }, true);
        if (this.#state.run.phase !== "finished" && Date.now() - this.#claimSweptAtMs >= CLAIM_SWEEP_INTERVAL_MS) {
          this.#claimSweptAtMs = Date.now();
          await this.#commands.sweepClaims();
        }
      }
    } catch (err) {
      this.#log("error", "tick failed; retrying", { error: String(err), retryCount: info?.retryCount ?? 0 });
      this.#armedAtMs = Date.now() + FAILED_TICK_ALARM_MS;
      await this.ctx.storage.setAlarm(this.#armedAtMs);
    }
  }

  // ---- the loop --------------------------------------------------------------------------------------------------

  /** The run stops before its end (stop requested, or failed): running functions are told (ctx.signal). */
  #isStopping(): boolean {
    return runIsStopping(this.#state?.run);
  }

  #failure(): string | null {
    return this.ctx.storage.kv.get<string>("failure") ?? null;
  }

  /** Applies one observation of a swarm server's object; a `failed` note fails the run (once). */
  async #onObservation(obs: EngineObservation, inline: boolean): Promise<void> {
    const link = this.#link;
    if (!link || !this.#state) return;
    // a failure first: a ROLLING status that comes with it must not open the gate for one dispatch
    if (obs.note.kind === "failed" && this.#failure() === null && this.#state.run.phase !== "finished") {
      this.ctx.storage.kv.put("failure", obs.note.message);
      await this.#apply({ type: "stopRequested", reason: obs.note.message, failed: true }, inline);
    }
    for (const event of link.eventsFor(obs)) await this.#apply(event, inline);
  }

  #require(): { state: SchedulerState; meta: RunMeta } {
    if (!this.#state || !this.#meta) throw new Error("no run in this object; create it with POST /runs");
    return { state: this.#state, meta: this.#meta };
  }

  /**
   * decide → persist → arm → execute. Commands that talk to a swarm server (status polls, aborts, outbox resends:
   * up to minutes) run inline in the alarm and in the control calls (create, stop) — `inline`; from an episode-port
   * RPC they are queued in the same transaction as the decision and the alarm is set to now, so a consumer's
   * `episodeClaimed` never waits behind them (its claim would sit idle, BC-23). Logs, dispatches and the finish
   * always run at once.
   */
  async #apply(event: SchedulerEvent, inline = false): Promise<EventAck> {
    const { state: current } = this.#require();
    const startedMs = performance.now();
    const { state, commands, changes, ack } = decide(current, event, Date.now());

    const now = inline ? commands : commands.filter((c) => !SWARM_COMMANDS.has(c.type));
    const later = inline ? [] : commands.filter((c) => SWARM_COMMANDS.has(c.type));
    // all rows of one decision or none: a failed write must not leave half a decision for the next reload (BC-51)
    this.ctx.storage.transactionSync(() => {
      this.#storage.persist(changes);
      this.#storage.queueCommands(later);
    });
    this.#applyStats.record(performance.now() - startedMs, Date.now());
    this.#state = state;
    if (this.#isStopping()) this.#stopWaiters.releaseAll();
    // a complete window: the engine's edge is due, so its watcher polls quickly for a while
    const step = currentStep(state);
    if (step && step.resolvedAtMs !== null && step.closedAtMs === null && state.run.phase !== "finished") this.#link?.windowComplete(step.windowIndex);
    await this.#arm(later.length > 0);
    await this.#commands.execute(now, inline);
    this.#live.changed(Date.now());
    return ack;
  }

  /** Carries out the commands RPCs queued for the alarm; each is deleted once done (at least once across resets). */
  async #drainPendingCommands(): Promise<void> {
    for (const { id, command } of this.#storage.pendingCommands()) {
      await this.#commands.execute([command], true);
      this.#storage.deletePendingCommand(id);
    }
  }

  /** Sets the alarm by `planAlarm` (an alarm time already armed is not written again: each write is a storage operation every RPC's answer would wait for). */
  async #arm(now = false): Promise<void> {
    const state = this.#state;
    if (!state) return;
    const plan = planAlarm({ finished: state.run.phase === "finished", wakeAtMs: now ? Date.now() : nextWakeAtMs(state), armedAtMs: this.#armedAtMs, nowMs: Date.now() });
    if (plan.kind === "keep") return;
    this.#armedAtMs = plan.kind === "set" ? plan.atMs : null;
    if (plan.kind === "set") await this.ctx.storage.setAlarm(plan.atMs);
    else await this.ctx.storage.deleteAlarm();
  }

  /** A line of the run log (SQLite, shown by `GET /runs/:id`); warnings and errors go to the console too. */
  #log(level: string, message: string, fields: Record<string, unknown>): void {
    this.#storage.log({ atMs: Date.now(), level, message, fields });
    if (level === "warn" || level === "error") jsonLogger({ run: this.#meta?.runId })[level](message, fields);
  }
}
