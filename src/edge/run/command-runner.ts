/**
 * @module edge/run/command-runner — carries out the core's commands for the `RolloutScheduler` Durable Object: log lines,
 * dispatches, engine status polls (asked of the swarm server's object), aborts, outbox resends, the weight-sync vote and
 * hooks (edge/run/sync-hooks), with the run's `SwarmClient` of each swarm (made on first use); the commands queued for
 * the alarm, and the alarm's sweep of claims nobody holds. What a command learns goes back to the core as an event
 * through the run's loop (`feed`, edge/run/run-loop.ts); the loop decides, this file owns the I/O ({@link CommandRunner.split}).
 */
import { SwarmClient } from "../../client/index.ts";
import { AbortCause, abortAll, declaresClientActive, endAll, MAX_INLINE_TASK_BYTES, sandboxField, type ClaimHandle, type EpisodeMessage, type ResultReport } from "../../port/index.ts";
import { reclaimedBy, throttlePolicyFor, type ClaimRef, type EpisodeDispatch, type EpisodeResolve, type SchedulerCommand, type SchedulerEvent, type SchedulerState, type TopUpPlanRequest } from "../../scheduler/index.ts";
import type { CurrentBatchRolloutPoolInformation } from "../../protocol/index.ts";
import { serverOfSwarm } from "../../sdk/contract.ts";
import type { RunDatasets } from "./datasets.ts";
import { confirmDatasetChanges } from "./dataset-changes.ts";
import { orphanClaims } from "./claim-sweep.ts";
import type { Dispatcher } from "./dispatcher.ts";
import type { RunLog } from "../ground/log.ts";
import { runSyncCommand, type SyncCommandHost } from "./sync-hooks.ts";
import type { RunMeta, SchedulerStorage } from "./storage.ts";

/** Commands that call a swarm server and may take long (up to minutes): not run inside an episode-port RPC ({@link CommandRunner.split}). */
const SWARM_COMMANDS: ReadonlySet<SchedulerCommand["type"]> = new Set(["pollEngineStatus", "abortEpisodes", "resolveOutbox", "settleEnds", "agreeSyncWeight"]);
/** How often an active run looks for its claims that nobody holds (claim-sweep.ts), ms. */
const CLAIM_SWEEP_INTERVAL_MS = 5_000;
/** How often the run log repeats that a swarm cannot be reached. */
const UNREACHABLE_LOG_INTERVAL_MS = 60_000;
/** How long an unknown claim may be a consumer's unreported one, s: multi-swarm ones claim the rest first (20 s budget, runEpisode). */
const CLAIM_GRACE_SECONDS = { oneSwarm: 10, multiSwarm: 30 } as const;
/** An unknown claim this close to the server's discard timeout is left to the janitor (claim-sweep.ts), seconds. */
const JANITOR_MARGIN_SECONDS = 5;

/** What the runner needs of its Durable Object. */
export interface CommandRunnerHost extends Pick<SyncCommandHost, "waitUntil"> {
  storage: SchedulerStorage;
  /** the run's datasets: tasks of URL and generated datasets are read when first dispatched */
  datasets: RunDatasets;
  dispatcher: Dispatcher;
  /** the run's metadata (spec, client uuid); the runner is only used once the run exists */
  meta(): RunMeta;
  /** the core's current state (for the re-claimed check before an outbox resend) */
  state(): SchedulerState;
  /** feeds an event a command produced back into the run's loop (`inline` as the command ran) */
  feed(event: SchedulerEvent, inline: boolean): Promise<unknown>;
  /** reports an outbox resend's result to the run's loop, as a consumer's report is (edge/run/run-loop `reported`) */
  report(report: ResultReport): Promise<unknown>;
  /**
   * asks the swarm server's object (its one status watcher, edge/swarm-server/swarm-server) for the engine's status and feeds
   * it to the core (`inline` as the command ran); `withPool`: with the pool information read before the status.
   * @returns the object's error text when the server cannot be reached
   */
  observeEngine(swarm: string, inline: boolean, withPool: boolean, plan?: TopUpPlanRequest): Promise<string | null>;
  log: RunLog;
  /** the fetch of every swarm call (the Worker's outbound rules: allowed hosts, credential bindings) */
  fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** the resolved gateway headers of a run-spec swarm (protocol/gateway-headers.ts), `{}` when none */
  gatewayHeaders?(swarm: string): Record<string, string>;
  /**
   * called once the run finished (after its summary is stored): it leaves its servers' objects (the last with
   * stopWhenDone stops that engine), deletes its secrets and frees its quota slot
   */
  finished(): Promise<void>;
  /** fails the run (once; a stop that drains with stop reason `failed`, `reason` shown as its failure) */
  fail(reason: string, inline: boolean): Promise<void>;
}

/** Carries out commands; one per Durable Object instance (its client cache and resend set live in memory). */
export class CommandRunner {
  readonly #unreachableLoggedAtMs = new Map<string, number>();
  /** outbox resends in flight, by `episodeKey@attempt` (in memory: a reset DO has none in flight) */
  readonly #resending = new Set<string>();
  /** the run's client of each swarm, made on first use (the spec never changes after `create`) */
  readonly #clients = new Map<string, SwarmClient>();
  #claimsSweptAtMs = 0;

  constructor(private readonly host: CommandRunnerHost) {}

  /** Carries out the commands in order; a failing command is logged and does not stop the others. */
  async execute(commands: readonly SchedulerCommand[], inline: boolean): Promise<void> {
    for (const c of commands) {
      try {
        await this.#run(c, inline);
      } catch (err) {
        this.host.log("error", `command ${c.type} failed`, { error: String(err) });
      }
    }
  }

  /**
   * The commands of one decision, split: `now` runs at once, `later` is queued for the alarm. Inline (the alarm, the
   * control calls) everything runs now; from an episode-port RPC the commands that talk to a swarm server wait for
   * the alarm, so a consumer's `episodeClaimed` never waits behind them (its claim would sit idle, BC-23).
   */
  static split(commands: readonly SchedulerCommand[], inline: boolean): { now: SchedulerCommand[]; later: SchedulerCommand[] } {
    if (inline) return { now: [...commands], later: [] };
    return { now: commands.filter((c) => !SWARM_COMMANDS.has(c.type)), later: commands.filter((c) => SWARM_COMMANDS.has(c.type)) };
  }

  /** Carries out the commands RPCs queued for the alarm; each is deleted once done (at least once across resets). */
  async drainQueued(): Promise<void> {
    for (const { id, command } of this.host.storage.pendingCommands()) {
      await this.execute([command], true);
      this.host.storage.deletePendingCommand(id);
    }
  }

  /** On each alarm tick of an active run: {@link sweepClaims} at most every {@link CLAIM_SWEEP_INTERVAL_MS}. */
  async sweepClaimsWhenDue(nowMs: number): Promise<void> {
    if (this.host.state().run.phase === "finished" || nowMs - this.#claimsSweptAtMs < CLAIM_SWEEP_INTERVAL_MS) return;
    this.#claimsSweptAtMs = nowMs;
    await this.sweepClaims();
  }

  /** Pulls the engine observation of each swarm from its server's object (inline, as in the alarm); unreachable ones are logged. */
  async pull(swarms: readonly string[]): Promise<void> {
    await Promise.all(swarms.map((swarm) => this.#poll(swarm, true, false)));
  }

  /** The swarm's pool information (the dashboard's in-flight table); 5 s timeout. @throws transport errors */
  poolInfo(swarm: string): Promise<CurrentBatchRolloutPoolInformation> {
    return this.#client(swarm).getRolloutStat({ timeoutMs: 5_000 });
  }

  async #run(c: SchedulerCommand, inline: boolean): Promise<void> {
    switch (c.type) {
      case "log":
        return this.host.log(c.level, c.message, c.fields);
      case "pollEngineStatus":
        await Promise.all(c.swarms.map((swarm) => this.#poll(swarm, inline, c.withPool?.includes(swarm) ?? false, c.plan?.swarm === swarm ? c.plan : undefined)));
        return;
      case "dispatchEpisodes":
        return this.#dispatch(c.episodes, inline);
      case "abortEpisodes":
        await Promise.all(c.episodes.map((e) => abortAll(this.#handles(e.claims))));
        return;
      case "resolveOutbox":
        await Promise.all(c.episodes.map((e) => this.#resolve(e)));
        return;
      case "settleEnds":
        // resolved from the server's record: reported through the loop like an outbox resend (ledger, attempt row)
        for (const e of c.episodes) await this.host.report({ episodeKey: e.episodeKey, attempt: e.attempt, result: e.result, reward: e.reward, ...(e.cause ? { cause: e.cause } : {}) });
        return;
      case "agreeSyncWeight":
      case "weightSyncHook":
        return runSyncCommand(c, { ...this.host, client: (swarm) => this.#client(swarm) }, inline);
      case "finishRun":
        this.host.storage.setSummary(c.summary); // the core logs "run finished" itself
        await this.sweepClaims(0); // nothing is in flight any more: any claim of this run left on a server is released
        await this.host.finished();
        return;
    }
  }

  /**
   * Releases this run's claims that nobody holds (claim-sweep.ts): a lost `/claim_episode` answer or a failed
   * `/abort_episode` leaves them held until the server's janitor. Errors are logged, never thrown.
   * @param graceSeconds how long an unknown claim may be a consumer's unreported one (default by swarm count)
   */
  async sweepClaims(graceSeconds?: number): Promise<void> {
    const meta = this.host.meta();
    const known = new Set<string>();
    for (const row of this.host.state().episodes.values()) {
      if (row.status === "running" || row.status === "reporting") for (const c of row.claims) known.add(c.episodeUuid);
    }
    const grace = graceSeconds ?? (meta.spec.swarms.length > 1 ? CLAIM_GRACE_SECONDS.multiSwarm : CLAIM_GRACE_SECONDS.oneSwarm);
    await Promise.all(
      meta.spec.swarms.map(async ({ name }) => {
        try {
          const client = this.#client(name);
          const pool = await client.getRolloutStat();
          const orphans = orphanClaims(pool.running_episode_details, { clientUuid: meta.clientUuid, known, graceSeconds: grace, janitorMarginSeconds: JANITOR_MARGIN_SECONDS });
          for (const o of orphans) {
            const done = await client.abortEpisode(o.episodeUuid, { quiet: true });
            const message = done
              ? "released a claim of this run that nobody held (a lost claim answer or a failed abort)"
              : "could not release a claim of this run that nobody holds; retrying";
            this.host.log(done ? "warn" : "error", message, { swarm: name, episodeUuid: o.episodeUuid, idleSeconds: o.idleSeconds });
          }
        } catch (err) {
          this.host.log("warn", "could not read the server's claims to release the ones nobody holds; retrying", { swarm: name, error: String(err) });
        }
      }),
    );
  }

  /**
   * The swarm server's object is the one watcher of that server (it rings the run on a change): this asks it, not the
   * server. With `withPool` (a batch holds the run's rewards) it reads the pool information before a fresh status
   * poll and the observation carries it (batch truth).
   */
  async #poll(swarm: string, inline: boolean, withPool: boolean, plan?: TopUpPlanRequest): Promise<void> {
    const unreachable = await this.host.observeEngine(swarm, inline, withPool, plan);
    if (unreachable !== null) this.#warnUnreachable(swarm, unreachable);
  }

  async #dispatch(episodes: readonly EpisodeDispatch[], inline: boolean): Promise<void> {
    const refsOf = (list: readonly EpisodeDispatch[]) => list.map((d) => ({ episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId }));
    // a task not read yet (URL or generated dataset) is read now; an episode whose task cannot be read is queued
    // again with a back-off (dispatchFailed, not an attempt), the others go out
    const unread = await this.host.datasets.ensure(episodes);
    const readable = episodes.filter((d) => !unread.has(`${d.source}#${d.taskIndex}`));
    if (readable.length < episodes.length) {
      const reason = `dataset read failed: ${[...new Set([...unread.values()].map((f) => f.message))].slice(0, 3).join("; ")}`;
      await this.host.feed({ type: "dispatchFailed", episodes: refsOf(episodes.filter((d) => unread.has(`${d.source}#${d.taskIndex}`))), reason }, inline);
      await confirmDatasetChanges(this.host, episodes, unread, inline);
    }
    if (!readable.length) return;
    const messages = readable.map((d) => this.#message(d));
    try {
      await this.host.dispatcher.dispatch(messages);
    } catch (err) {
      await this.host.feed({ type: "dispatchFailed", episodes: refsOf(readable), reason: String(err) }, inline);
    }
  }

  /** The queue message of one dispatch: the core's dispatch plus the run's identity and the resolved task. */
  #message(d: EpisodeDispatch): EpisodeMessage {
    const meta = this.host.meta();
    const { taskId, task } = this.host.storage.dispatchTask(d.source, d.taskIndex, MAX_INLINE_TASK_BYTES);
    return {
      v: 1,
      runId: meta.runId,
      episodeKey: d.episodeKey,
      attempt: d.attempt,
      dispatchId: d.dispatchId,
      clientUuid: meta.clientUuid,
      functionName: meta.spec.function,
      episodeType: d.episodeType,
      // header templates only: the consumer asks swarmHeaders for the values (no secret in a queue message)
      swarms: meta.spec.swarms.map((s) => ({ name: s.name, url: s.url, ...(s.headers ? { headers: s.headers } : {}) })),
      discardEpisodeTimeoutSeconds: d.discardEpisodeTimeoutSeconds,
      throttlePolicy: throttlePolicyFor(d, taskId),
      taskId,
      ...(task ? { task } : {}),
      taskRef: { source: d.source, taskIndex: d.taskIndex },
      leaseDeadlineAtMs: d.leaseDeadlineAtMs,
      heartbeatSeconds: d.heartbeatSeconds,
      model: "agentjet-policy",
      runHasSecrets: Object.keys(meta.spec.secrets).length > 0,
      ...sandboxField(meta.spec),
    };
  }

  /** Resends a recorded end whose outcome is unknown; "not found" then means delivered (BC-26). Never a second end. */
  async #resolve(e: EpisodeResolve): Promise<void> {
    // a finished record is never handed out again: another live episode holding one of these server episodes means
    // the end never landed and the janitor's revert let a consumer of this run take it (scheduler/leases)
    const holder = reclaimedBy(this.host.state().episodes.values(), e.episodeKey, e.claims);
    if (holder) {
      this.host.log("warn", "outbox end not resent: its server episode was re-claimed by another episode of this run", { episodeKey: e.episodeKey, heldBy: holder.episodeKey });
      await this.host.report({ episodeKey: e.episodeKey, attempt: e.attempt, result: "expired", cause: `${AbortCause.expired}:reclaimed` });
      return;
    }
    // one resend at a time per attempt: a resend can take 2 × 330 s, and two ends in flight on one server episode
    // could both be accepted (the server's checks run before its engine wait)
    const key = `${e.episodeKey}@${e.attempt}`;
    if (this.#resending.has(key)) return;
    this.#resending.add(key);
    let sent;
    try {
      const box = this.host.storage.outbox(e.episodeKey, e.attempt);
      sent = box ? await endAll(this.#handles(e.claims), box.taskId, box.outputs, true) : ({ kind: "sent", result: "lost", cause: AbortCause.outboxMissing } as const);
    } finally {
      this.#resending.delete(key);
    }
    if (sent.kind === "unresolved") {
      // the core resolves it from the server's record and sends it again while the server still holds it
      await this.host.report({ episodeKey: e.episodeKey, attempt: e.attempt, result: "unknown", reached: false, cause: sent.reason.slice(0, 300) });
      return;
    }
    await this.host.report({ episodeKey: e.episodeKey, attempt: e.attempt, result: sent.result, cause: sent.cause, reward: e.reward, ...(sent.endedSwarms ? { endedSwarms: sent.endedSwarms } : {}) });
  }

  /** The run's client (its client uuid) of a swarm, on the server {@link serverOfSwarm} names. @throws Error for a swarm the run lacks */
  #client(swarm: string): SwarmClient {
    const made = this.#clients.get(swarm);
    if (made) return made;
    const meta = this.host.meta();
    const server = serverOfSwarm(swarm, meta.spec.swarms);
    if (!server) throw new Error(`the run has no swarm server '${swarm}'`);
    const log = this.host.log;
    const logger = { info: () => {}, warn: (m: string, f?: Record<string, unknown>) => log("warn", m, f ?? {}), error: (m: string, f?: Record<string, unknown>) => log("error", m, f ?? {}) };
    const client = new SwarmClient({ baseURL: server.url, clientUuid: meta.clientUuid, logger, declareClientActive: declaresClientActive(meta.spec.episodeType), ...(this.host.fetch ? { fetch: this.host.fetch } : {}), headers: this.host.gatewayHeaders?.(server.name) ?? {} });
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
    const url = serverOfSwarm(swarm, this.host.meta().spec.swarms)?.url;
    this.host.log("warn", `swarm ${swarm} (${url}) cannot be reached; no episode is dispatched until its engine is ROLLING`, { swarm, error });
  }
}
