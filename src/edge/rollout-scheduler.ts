/**
 * @module edge/rollout-scheduler — `RolloutScheduler`, the Durable Object that owns one run (issue 3 §2). It hosts
 * the pure core: every RPC and every alarm does the same thing — `decide` synchronously (slots reserved before any
 * await, BC-47), persist the changed rows (one per episode, BC-53), carry out the commands, re-arm the alarm
 * (always, in `finally`, BC-45). State is rebuilt from SQLite on every wake, so a run survives eviction and
 * deploys (BC-51). Events are idempotent by `(episodeKey, attempt)`: alarms, queue deliveries and RPCs are at
 * least once.
 */
import { DurableObject } from "cloudflare:workers";
import { AbortCause, type ClaimAck, type ClaimFailureReport, type ClaimReport, type EndedEpisode, type EventAck, type OutcomeReport, type ResultReport, type SchedulerPort } from "../port/index.ts";
import { resolveGatewayHeaders, type Task } from "../protocol/index.ts";
import { outboundFetch, outboundPolicy } from "../runtime/outbound.ts";
import { decide, initialState, nextWakeAtMs, reportedReward, type SchedulerCommand, type SchedulerEvent, type SchedulerState } from "../scheduler/index.ts";
import { CommandRunner } from "./command-runner.ts";
import { QueueDispatcher } from "./dispatcher.ts";
import { runScopedTaskId } from "../tasks/index.ts";
import type { Env } from "./env.ts";
import { jsonLogger } from "./log.ts";
import { mergeSecrets, parseOperatorSecrets } from "./secrets.ts";
import { runReport, runView, type CreateRunInput, type RunReport, type RunView } from "./run-views.ts";
import { ledgerRows, SchedulerStorage, type RunMeta } from "./storage.ts";

/** An active run's alarm fires at least this often (BC-45), even when the core has nothing scheduled sooner. */
const IDLE_ALARM_MS = 5_000;
/** The episode port's answer for a run this object does not hold: the consumer gives its claim back and acks. */
const NO_RUN: EventAck = { status: "unknown", reason: "no such run (deleted, or never created here)" };
/** Commands that call a swarm server and may take long: not run inside an episode-port RPC (see `#apply`). */
const SWARM_COMMANDS: ReadonlySet<SchedulerCommand["type"]> = new Set(["pollEngineStatus", "abortEpisodes", "resolveOutbox"]);
/** Alarm back-off after a failing tick (the handler itself never throws). */
const FAILED_TICK_ALARM_MS = 2_000;
/** How often an active run looks for its claims that nobody holds (edge/claim-sweep). */
const CLAIM_SWEEP_INTERVAL_MS = 5_000;

/** The Durable Object of one run. RPC methods: control (`create`, `status`, `stop`, `report`) and the episode port. */
export class RolloutScheduler extends DurableObject<Env> implements SchedulerPort {
  #storage!: SchedulerStorage;
  #state: SchedulerState | null = null;
  #meta: RunMeta | null = null;
  #commands!: CommandRunner;
  #claimSweptAtMs = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      this.#storage = new SchedulerStorage(ctx.storage.sql);
      this.#commands = new CommandRunner({
        storage: this.#storage,
        dispatcher: new QueueDispatcher(env.EPISODES),
        meta: () => this.#require().meta,
        state: () => this.#require().state,
        feed: (event, inline) => this.#apply(event, inline),
        report: (report) => this.episodeReported(report),
        log: (level, message, fields) => this.#log(level, message, fields),
        // the same outbound rules as the consumer: allowed hosts only, operator credentials only to their endpoint
        fetch: outboundFetch((input, init) => globalThis.fetch(input, init), outboundPolicy(env.AJET_ALLOWED_HOSTS, parseOperatorSecrets(env.AJET_SECRETS).secrets)),
        gatewayHeaders: (swarm) => this.#gatewayHeaders()[swarm] ?? {},
        finished: () => this.#finished(),
      });
      this.#meta = this.#storage.meta();
      this.#state = this.#storage.loadState();
      // a run that finished before its secrets were deleted (a reset in between): delete them now
      if (this.#state?.run.phase === "finished" && this.#storage.scrubSecrets()) this.#meta = this.#storage.meta();
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
    // run-scoped task ids by default: the server groups by task id across every client (BC-30: never empty)
    const scope = input.spec.taskIdScope ?? "run";
    const tasks = Object.fromEntries(
      Object.entries(input.tasks).map(([name, list]) => [name, list.map((t) => ({ ...t, task_id: runScopedTaskId(t.task_id, input.runId, scope) }))]),
    );
    const state = initialState(input.spec, counts);
    const meta: RunMeta = { runId: input.runId, clientUuid: crypto.randomUUID(), spec: input.spec, createdAtMs: Date.now(), loadReports: input.loadReports, ...(input.principal ? { principal: input.principal } : {}) };
    this.ctx.storage.transactionSync(() => {
      for (const [name, list] of Object.entries(tasks)) this.#storage.putTasks(name, list);
      this.#storage.setMeta(meta);
      this.#storage.persist({ run: state.run, episodes: [], deletedEpisodeKeys: [], steps: [], evalTasks: [], batches: [] });
    });
    this.#meta = meta;
    this.#state = state;
    await this.#apply({ type: "runStarted" }, true);
    return this.status()!;
  }

  /** The run's status view, or null when no run was created in this object (the API answers 404). */
  status(): RunView | null {
    if (!this.#state || !this.#meta) return null;
    return runView(this.#state, this.#meta, this.#storage.logTail(20));
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
    const secrets = mergeSecrets(meta.spec.secrets, parseOperatorSecrets(this.env.AJET_SECRETS).secrets);
    const out: Record<string, Record<string, string>> = {};
    for (const s of meta.spec.swarms) {
      if (!s.headers) continue;
      const resolved = resolveGatewayHeaders(s.headers, secrets);
      if ("headers" in resolved) out[s.name] = resolved.headers;
      else this.#log("warn", `swarm ${s.name}: gateway headers need secrets nobody sets: ${resolved.missing.join(", ")}`, { swarm: s.name });
    }
    return out;
  }

  /** The run finished: its secrets are needed no more (deleted from storage) and its token's run slot is freed. */
  async #finished(): Promise<void> {
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

  async episodeReported(report: ResultReport): Promise<EventAck> {
    if (!this.#state) return NO_RUN;
    const row = this.#state.episodes[report.episodeKey];
    const box = this.#storage.outbox(report.episodeKey, report.attempt);
    const ack = await this.#apply({ type: "episodeReported", ...report });
    if (report.cause === AbortCause.abortUnconfirmed && row && row.attempt === report.attempt && row.claims.length) {
      // the consumer's abort failed after its retries: the claims may still be held (an engine slot, the weight
      // sync); the alarm sends the abort again at once, and the claim sweep catches whatever is left
      this.#log("warn", "an episode's abort was not confirmed by the server; the run sends it again", { episodeKey: report.episodeKey, claims: row.claims.map((c) => c.episodeUuid).join(",") });
      this.#storage.queueCommands([{ type: "abortEpisodes", episodes: [{ episodeKey: row.episodeKey, attempt: row.attempt, claims: row.claims, reason: AbortCause.abortUnconfirmed }] }]);
      await this.#arm(true);
    }
    if (ack.status === "applied" && report.result === "ended" && row && row.attempt === report.attempt) {
      // applied + ended: the core found a finite reward by the same rule
      const reward = reportedReward(row.outcome, report) ?? 0;
      const taskId = box?.taskId ?? this.#storage.taskId(row.source, row.taskIndex);
      this.#storage.recordEnded(ledgerRows(row, taskId, box?.outputs, reward, Date.now()));
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
        if (this.#state.run.phase !== "finished" && Date.now() - this.#claimSweptAtMs >= CLAIM_SWEEP_INTERVAL_MS) {
          this.#claimSweptAtMs = Date.now();
          await this.#commands.sweepClaims();
        }
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
    await this.#commands.execute(now, inline);
    return ack;
  }

  /** Carries out the commands RPCs queued for the alarm; each is deleted once done (at least once across resets). */
  async #drainPendingCommands(): Promise<void> {
    for (const { id, command } of this.#storage.pendingCommands()) {
      await this.#commands.execute([command], true);
      this.#storage.deletePendingCommand(id);
    }
  }

  async #arm(now = false): Promise<void> {
    const state = this.#state;
    if (!state) return;
    const wake = now ? Date.now() : nextWakeAtMs(state);
    const finished = state.run.phase === "finished";
    // an active run wakes at least every IDLE_ALARM_MS: the claim sweep runs on the alarm
    if (finished && wake === null) await this.ctx.storage.deleteAlarm();
    else if (finished) await this.ctx.storage.setAlarm(Math.max(wake!, Date.now()));
    else await this.ctx.storage.setAlarm(Math.max(Math.min(wake ?? Infinity, Date.now() + IDLE_ALARM_MS), Date.now()));
  }

  /** A line of the run log (SQLite, shown by `GET /runs/:id`); warnings and errors go to the console too. */
  #log(level: string, message: string, fields: Record<string, unknown>): void {
    this.#storage.log({ atMs: Date.now(), level, message, fields });
    if (level === "warn" || level === "error") jsonLogger({ run: this.#meta?.runId })[level](message, fields);
  }
}
