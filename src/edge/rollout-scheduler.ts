/**
 * @module edge/rollout-scheduler — `RolloutScheduler`, the Durable Object that owns one run (issue 3 §2). It hosts
 * the pure core: every RPC and every alarm does the same thing — `decide` synchronously (slots reserved before any
 * await, BC-47), persist the changed rows (one per episode, BC-53), carry out the commands, re-arm the alarm
 * (always, in `finally`, BC-45). State is rebuilt from SQLite on every wake, so a run survives eviction and
 * deploys (BC-51). Events are idempotent by `(episodeKey, attempt)`: alarms, queue deliveries and RPCs are at
 * least once.
 */
import { DurableObject } from "cloudflare:workers";
import { isCannotConnect, SwarmClient } from "../client/index.ts";
import type { Task } from "../protocol/index.ts";
import {
  decide,
  evalReport,
  initialState,
  nextWakeAtMs,
  runStatus,
  runSummary,
  throttlePolicyFor,
  type ClaimRef,
  type EventAck,
  type EvalReport,
  type RunSpec,
  type SchedulerCommand,
  type SchedulerEvent,
  type SchedulerState,
} from "../scheduler/index.ts";
import { AbortCause, abortAll, endAll, MAX_INLINE_TASK_BYTES, type ClaimAck, type ClaimHandle, type EndedEpisode, type EpisodeMessage, type OutcomeReport, type SchedulerPort } from "../port/index.ts";
import { QueueDispatcher, type Dispatcher } from "./dispatcher.ts";
import type { Env } from "./env.ts";
import { jsonLogger } from "./log.ts";
import { SchedulerStorage, type RunMeta } from "./storage.ts";

/** When the core has nothing scheduled but the run is active, the alarm still fires this often (BC-45). */
const IDLE_ALARM_MS = 5_000;
/** The episode port's answer for a run this object does not hold: the consumer gives its claim back and acks. */
const NO_RUN: EventAck = { status: "unknown", reason: "no such run (deleted, or never created here)" };
/** Commands that call a swarm server and may take long: not run inside an episode-port RPC (see `#apply`). */
const SWARM_COMMANDS: ReadonlySet<SchedulerCommand["type"]> = new Set(["pollEngineStatus", "abortEpisodes", "resolveOutbox"]);
/** How often the run log repeats that a swarm cannot be reached. */
const UNREACHABLE_LOG_INTERVAL_MS = 60_000;
/** Alarm back-off after a failing tick (the handler itself never throws). */
const FAILED_TICK_ALARM_MS = 2_000;

/** What `create` needs: a validated spec and every dataset's tasks, in order. */
export interface CreateRunInput {
  runId: string;
  spec: RunSpec;
  tasks: Record<string, Task[]>;
  loadReports: RunMeta["loadReports"];
}

/** `GET /runs/:id`: the core's status view plus the run's identity and recent log lines. */
export type RunView = ReturnType<typeof runStatus> & {
  runId: string;
  createdAtMs: number;
  function: string;
  swarms: { name: string; url: string }[];
  datasets: RunMeta["loadReports"];
  log: ReturnType<SchedulerStorage["logTail"]>;
};

/** The Durable Object of one run. RPC methods: control (`create`, `status`, `stop`, `report`) and the episode port. */
export class RolloutScheduler extends DurableObject<Env> implements SchedulerPort {
  #storage!: SchedulerStorage;
  #state: SchedulerState | null = null;
  #meta: RunMeta | null = null;
  readonly #unreachableLoggedAtMs = new Map<string, number>();
  /** outbox resends in flight, by `episodeKey@attempt` (in memory: a reset DO has none in flight) */
  readonly #resending = new Set<string>();
  /** the run's client of each swarm, made on first use (the spec never changes after `create`) */
  readonly #clients = new Map<string, SwarmClient>();
  readonly #dispatcher: Dispatcher;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#dispatcher = new QueueDispatcher(env.EPISODES);
    void ctx.blockConcurrencyWhile(async () => {
      this.#storage = new SchedulerStorage(ctx.storage.sql);
      this.#meta = this.#storage.meta();
      this.#state = this.#storage.loadState();
    });
  }

  // ---- control -------------------------------------------------------------------------------------------------

  /** Creates the run (idempotent for the same runId) and starts it. @throws Error when the run already exists with another id */
  async create(input: CreateRunInput): Promise<RunView> {
    if (this.#meta) {
      if (this.#meta.runId !== input.runId) throw new Error(`this object already holds run ${this.#meta.runId}`);
      return this.status()!;
    }
    const counts = Object.fromEntries(Object.entries(input.tasks).map(([name, tasks]) => [name, tasks.length]));
    const state = initialState(input.spec, counts);
    const meta: RunMeta = { runId: input.runId, clientUuid: crypto.randomUUID(), spec: input.spec, createdAtMs: Date.now(), loadReports: input.loadReports };
    this.ctx.storage.transactionSync(() => {
      for (const [name, tasks] of Object.entries(input.tasks)) this.#storage.putTasks(name, tasks);
      this.#storage.setMeta(meta);
      this.#storage.persist({ run: state.run, episodes: [], deletedEpisodeKeys: [], steps: [], evalTasks: [] });
    });
    this.#meta = meta;
    this.#state = state;
    await this.#apply({ type: "runStarted" }, true);
    return this.status()!;
  }

  /** The run's status view, or null when no run was created in this object (the API answers 404). */
  status(): RunView | null {
    if (!this.#state || !this.#meta) return null;
    const { state, meta } = this.#require();
    return {
      ...runStatus(state),
      runId: meta.runId,
      createdAtMs: meta.createdAtMs,
      function: meta.spec.function,
      swarms: meta.spec.swarms.map((s) => ({ name: s.name, url: s.url })),
      datasets: meta.loadReports,
      log: this.#storage.logTail(20),
    };
  }

  /** Drains the run: no new dispatch; in-flight episodes finish or are aborted; nothing is left claimed. Null: no run. */
  async stop(reason = "stop requested"): Promise<RunView | null> {
    if (!this.#state) return null;
    await this.#apply({ type: "stopRequested", reason }, true);
    return this.status();
  }

  /**
   * The run summary and, for eval runs, the eval report (per task: the group's rewards, pass@k, mean), each task
   * with its `taskId`. Null: no run.
   */
  report(): { summary: ReturnType<typeof runSummary>; eval: (EvalReport & { tasks: Array<EvalReport["tasks"][number] & { taskId: string }> }) | null } | null {
    if (!this.#state) return null;
    const { state } = this.#require();
    const report = state.run.config.episodeType === "eval" ? evalReport(state) : null;
    const withIds = report && { ...report, tasks: report.tasks.map((t) => ({ ...t, taskId: this.#storage.taskId(t.source, t.taskIndex) })) };
    return { summary: this.#storage.summary() ?? runSummary(state), eval: withIds };
  }

  // ---- episode port (called by queue consumers) ------------------------------------------------------------------

  async episodeClaimed(report: Parameters<SchedulerPort["episodeClaimed"]>[0]): Promise<ClaimAck> {
    if (!this.#state) return NO_RUN;
    const ack = await this.#apply({ type: "episodeClaimed", ...report });
    // `duplicate` = these very claims were applied before (a resent RPC whose first answer was lost): the consumer
    // carries on with the episode, so it needs the secrets too
    return ack.status === "applied" || ack.status === "duplicate" ? { ...ack, secrets: this.#meta?.spec.secrets ?? {} } : ack;
  }

  async claimFailed(report: Parameters<SchedulerPort["claimFailed"]>[0]): Promise<EventAck> {
    if (!this.#state) return NO_RUN;
    return this.#apply({ type: "claimFailed", ...report });
  }

  async episodeOutcomeRecorded(report: OutcomeReport): Promise<EventAck> {
    if (!this.#state) return NO_RUN;
    const { outputs, ...event } = report;
    const row = this.#state?.episodes[report.episodeKey];
    if (outputs && row && row.attempt === report.attempt) {
      const taskId = this.#storage.taskId(row.source, row.taskIndex);
      this.#storage.putOutbox(report.episodeKey, report.attempt, taskId, outputs);
    }
    const ack = await this.#apply({ type: "episodeOutcomeRecorded", ...event });
    if (ack.status === "stale" || ack.status === "unknown") this.#storage.deleteOutbox(report.episodeKey, report.attempt);
    return ack;
  }

  async episodeReported(report: Parameters<SchedulerPort["episodeReported"]>[0]): Promise<EventAck> {
    if (!this.#state) return NO_RUN;
    const row = this.#state.episodes[report.episodeKey];
    const box = this.#storage.outbox(report.episodeKey, report.attempt);
    const ack = await this.#apply({ type: "episodeReported", ...report });
    if (ack.status === "applied" && report.result === "ended" && row && row.attempt === report.attempt) {
      const reward = row.outcome?.kind === "end" ? row.outcome.reward : (report.reward ?? 0);
      const taskId = box?.taskId ?? this.#storage.taskId(row.source, row.taskIndex);
      this.#storage.recordEnded(
        row.claims.map((c) => ({ episodeKey: row.episodeKey, attempt: row.attempt, swarm: c.swarm, episodeUuid: c.episodeUuid, taskId, globalStep: c.globalStep, reward: box?.outputs[c.swarm]?.reward ?? reward, atMs: Date.now() })),
      );
    }
    if (ack.status !== "stale") this.#storage.deleteOutbox(report.episodeKey, report.attempt);
    return ack;
  }

  /** The ledger of episodes whose reward the server accepted, optionally of one global step (paged). */
  endedEpisodes(query: { globalStep?: number; limit?: number; offset?: number } = {}): EndedEpisode[] | null {
    if (!this.#state) return null;
    return this.#storage.endedEpisodes({ globalStep: query.globalStep, limit: Math.min(query.limit ?? 1000, 10_000), offset: query.offset ?? 0 });
  }

  getTask(ref: { source: string; taskIndex: number }): Task {
    return this.#storage.task(ref.source, ref.taskIndex);
  }

  // ---- alarm ---------------------------------------------------------------------------------------------------

  /** One tick: leases, back-offs, polls (BC-45: catches everything and always re-arms). */
  override async alarm(info?: AlarmInvocationInfo): Promise<void> {
    try {
      if (this.#state) {
        await this.#drainPendingCommands();
        await this.#apply({ type: "tick" }, true);
      }
    } catch (err) {
      this.#log("error", "tick failed; retrying", { error: String(err), retryCount: info?.retryCount ?? 0 });
      await this.ctx.storage.setAlarm(Date.now() + FAILED_TICK_ALARM_MS);
    }
  }

  // ---- the loop --------------------------------------------------------------------------------------------------

  #require(): { state: SchedulerState; meta: RunMeta } {
    if (!this.#state || !this.#meta) throw new Error("no run in this object; create it with POST /runs");
    return { state: this.#state, meta: this.#meta };
  }

  /** decide → persist → re-arm → execute. The synchronous part runs without awaiting, so no update is lost. */
  /**
   * decide → persist → arm → execute. Commands that talk to a swarm server (status polls, aborts, outbox resends:
   * up to minutes) run inline in the alarm and in the control calls (create, stop) — `inline`; from an episode-port
   * RPC they are queued in the same transaction as the decision and the alarm is set to now, so a consumer's
   * `episodeClaimed` never waits behind them (its claim would sit idle, BC-23). Logs, dispatches and the finish
   * always run at once.
   */
  async #apply(event: SchedulerEvent, inline = false): Promise<EventAck> {
    const { state: current } = this.#require();
    const { state, commands, changes, ack } = decide(current, event, Date.now());
    const now = inline ? commands : commands.filter((c) => !SWARM_COMMANDS.has(c.type));
    const later = inline ? [] : commands.filter((c) => SWARM_COMMANDS.has(c.type));
    // all rows of one decision or none: a failed write must not leave half a decision for the next reload (BC-51)
    this.ctx.storage.transactionSync(() => {
      this.#storage.persist(changes);
      this.#storage.queueCommands(later);
    });
    this.#state = state;
    await this.#arm(later.length > 0);
    await this.#execute(now, inline);
    return ack;
  }

  /** Carries out the commands RPCs queued for the alarm; each is deleted once done (at least once across resets). */
  async #drainPendingCommands(): Promise<void> {
    for (const { id, command } of this.#storage.pendingCommands()) {
      await this.#execute([command], true);
      this.#storage.deletePendingCommand(id);
    }
  }

  async #arm(now = false): Promise<void> {
    const state = this.#state;
    if (!state) return;
    const wake = now ? Date.now() : nextWakeAtMs(state);
    const finished = state.run.phase === "finished";
    if (wake !== null) await this.ctx.storage.setAlarm(Math.max(wake, Date.now()));
    else if (finished) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Date.now() + IDLE_ALARM_MS);
  }

  async #execute(commands: readonly SchedulerCommand[], inline: boolean): Promise<void> {
    for (const c of commands) {
      try {
        await this.#run(c, inline);
      } catch (err) {
        this.#log("error", `command ${c.type} failed`, { error: String(err) });
      }
    }
  }

  async #run(c: SchedulerCommand, inline: boolean): Promise<void> {
    const { meta } = this.#require();
    switch (c.type) {
      case "log":
        return this.#log(c.level, c.message, c.fields);
      case "pollEngineStatus":
        await Promise.all(
          c.swarms.map(async (swarm) => {
            const snap = await this.#client(swarm).getEngineStatusOrCannotConnect();
            if (isCannotConnect(snap)) this.#warnUnreachable(swarm, snap.error.message);
            await this.#apply({ type: "engineStatusSeen", swarm, engineStatus: snap.status, globalStep: snap.globalStep }, inline);
          }),
        );
        return;
      case "dispatchEpisodes": {
        const messages = c.episodes.map((d): EpisodeMessage => {
          const { taskId, task } = this.#storage.dispatchTask(d.source, d.taskIndex, MAX_INLINE_TASK_BYTES);
          return {
            v: 1,
            runId: meta.runId,
            episodeKey: d.episodeKey,
            attempt: d.attempt,
            dispatchId: d.dispatchId,
            clientUuid: meta.clientUuid,
            functionName: meta.spec.function,
            episodeType: d.episodeType,
            swarms: meta.spec.swarms.map((s) => ({ name: s.name, url: s.url })),
            discardEpisodeTimeoutSeconds: d.discardEpisodeTimeoutSeconds,
            throttlePolicy: throttlePolicyFor(d, taskId),
            taskId,
            ...(task ? { task } : {}),
            taskRef: { source: d.source, taskIndex: d.taskIndex },
            leaseDeadlineAtMs: d.leaseDeadlineAtMs,
            model: "agentjet-policy",
          };
        });
        try {
          await this.#dispatcher.dispatch(messages);
        } catch (err) {
          await this.#apply({ type: "dispatchFailed", episodes: c.episodes.map((d) => ({ episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId })), reason: String(err) }, inline);
        }
        return;
      }
      case "abortEpisodes":
        await Promise.all(c.episodes.map((e) => abortAll(this.#handles(e.claims))));
        return;
      case "resolveOutbox":
        await Promise.all(c.episodes.map((e) => this.#resolve(e)));
        return;
      case "finishRun":
        this.#storage.setSummary(c.summary); // the core logs "run finished" itself
        return;
    }
  }

  /** Resends a recorded end whose outcome is unknown; "not found" then means delivered (BC-26). Never a second end. */
  async #resolve(e: Extract<SchedulerCommand, { type: "resolveOutbox" }>["episodes"][number]): Promise<void> {
    // Another live episode of this run holding one of these server episodes means the end never landed (a finished
    // record is never handed out again): the janitor reverted it and a consumer of this run (same client uuid) took
    // it. A resend would end THAT episode with this one's output, so the repeat runs again instead.
    const uuids = new Set(e.claims.map((c) => c.episodeUuid));
    const holder = Object.values(this.#state?.episodes ?? {}).find(
      (o) => o.episodeKey !== e.episodeKey && (o.status === "running" || o.status === "reporting") && o.claims.some((c) => uuids.has(c.episodeUuid)),
    );
    if (holder) {
      this.#log("warn", "outbox end not resent: its server episode was re-claimed by another episode of this run", { episodeKey: e.episodeKey, heldBy: holder.episodeKey });
      await this.episodeReported({ episodeKey: e.episodeKey, attempt: e.attempt, result: "expired", cause: `${AbortCause.expired}:reclaimed` });
      return;
    }
    // one resend at a time per attempt: a resend can take 2 × 330 s, and two ends in flight on one server episode
    // could both be accepted (the server's checks run before its engine wait)
    const key = `${e.episodeKey}@${e.attempt}`;
    if (this.#resending.has(key)) return;
    this.#resending.add(key);
    let sent;
    try {
      const box = this.#storage.outbox(e.episodeKey, e.attempt);
      sent = box ? await endAll(this.#handles(e.claims), box.taskId, box.outputs, true) : ({ kind: "sent", result: "lost", cause: AbortCause.outboxMissing } as const);
    } finally {
      this.#resending.delete(key);
    }
    if (sent.kind === "unresolved") return this.#log("warn", "outbox resend still unresolved; will retry", { episodeKey: e.episodeKey, reason: sent.reason });
    await this.episodeReported({ episodeKey: e.episodeKey, attempt: e.attempt, result: sent.result, cause: sent.cause, reward: e.reward });
  }

  /** The run's client (its client uuid) of a swarm; a claim on `default` is on the run's first swarm. */
  #client(swarm: string): SwarmClient {
    const made = this.#clients.get(swarm);
    if (made) return made;
    const { meta } = this.#require();
    const s = meta.spec.swarms.find((x) => x.name === swarm) ?? meta.spec.swarms[0]!;
    const logger = { info: () => {}, warn: (m: string, f?: Record<string, unknown>) => this.#log("warn", m, f ?? {}), error: (m: string, f?: Record<string, unknown>) => this.#log("error", m, f ?? {}) };
    const client = new SwarmClient({ baseURL: s.url, clientUuid: meta.clientUuid, logger });
    this.#clients.set(swarm, client);
    return client;
  }

  /** The claims with the client that ends or aborts each. */
  #handles(claims: readonly ClaimRef[]): ClaimHandle[] {
    return claims.map((c) => ({ ...c, client: this.#client(c.swarm) }));
  }

  /** Says in the run log that a swarm cannot be reached: at most once a minute per swarm (the poll keeps trying). */
  #warnUnreachable(swarm: string, error: string): void {
    const now = Date.now();
    if (now - (this.#unreachableLoggedAtMs.get(swarm) ?? 0) < UNREACHABLE_LOG_INTERVAL_MS) return;
    this.#unreachableLoggedAtMs.set(swarm, now);
    const url = this.#meta?.spec.swarms.find((s) => s.name === swarm)?.url;
    this.#log("warn", `swarm ${swarm} (${url}) cannot be reached; no episode is dispatched until its engine is ROLLING`, { swarm, error });
  }

  /** A line of the run log (SQLite, shown by `GET /runs/:id`); warnings and errors go to the console too. */
  #log(level: string, message: string, fields: Record<string, unknown>): void {
    this.#storage.log({ atMs: Date.now(), level, message, fields });
    if (level === "warn" || level === "error") jsonLogger({ run: this.#meta?.runId })[level](message, fields);
  }
}
