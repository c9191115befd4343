/**
 * @module edge/run/run-loop — the loop of one run's Durable Object (`RolloutScheduler`), one per instance: the run's
 * state and meta in memory, rebuilt from SQLite on every wake (so a run survives eviction and deploys, BC-51), and
 * the one way anything changes them: `decide` synchronously (slots reserved before any await, BC-47), persist the
 * changed rows in one transaction (one per episode, BC-53), re-arm the alarm (edge/run/alarm-plan.ts), carry out the
 * commands (edge/run/command-runner.ts). The object's RPC methods (edge/run/rollout-scheduler.ts) feed it events; its parts
 * (edge/run/run-object-parts.ts) feed it what their commands learn.
 */
import type { EventAck, ResultReport } from "../../port/index.ts";
import { decide, type SchedulerEvent, type SchedulerState } from "../../scheduler/index.ts";
import { RunAlarm } from "./alarm-plan.ts";
import { ApplyStats } from "./apply-stats.ts";
import { CommandRunner } from "./command-runner.ts";
import { EngineLink } from "./engine-link.ts";
import type { EngineObservation } from "../swarm-server/engine-note.ts";
import type { Env } from "../ground/env.ts";
import { runLog, type RunLog } from "../ground/log.ts";
import { storeRun } from "./run-create.ts";
import { recordClosedAttempts, recordResult } from "./report-ledger.ts";
import { runObjectParts, type RunObjectParts } from "./run-object-parts.ts";
import { runView, type RunView } from "./run-views.ts";
import { runGatewayHeaders } from "../ground/secrets.ts";
import { unsealSecrets } from "../ground/secrets-at-rest.ts";
import { StopWaiters } from "./stop-waiters.ts";
import type { RunMeta } from "./storage.ts";
import { callObject } from "../ground/do-call.ts";
import { dropStagedLater, STAGING_BUCKET, stagedPrefix } from "./dataset-staging.ts";
import { stagingBucket } from "./datasets.ts";
import { meteredStorage, UsageCounter } from "./usage.ts";

/** The run of one Durable Object instance and its loop. */
export class RunLoop {
  #state: SchedulerState | null = null;
  #meta: RunMeta | null = null;
  /** storage, datasets, command runner, dashboard and live feed, built once per wake */
  readonly parts: RunObjectParts;
  /** running episodes' held heartbeats, answered when the run stops (the stop channel) */
  readonly stopWaiters = new StopWaiters();
  /** a line of the run log (stored; warnings and errors to the console too) */
  readonly log: RunLog;
  /** the run's side of its swarm servers' objects (null before the run exists) */
  #link: EngineLink | null = null;
  readonly #alarm: RunAlarm;
  /** decide + persist time per event (in memory), shown as `scheduler` in the status view */
  readonly #applyStats = new ApplyStats();

  /** swarms whose server's object said their engine changed since the last tick: the next tick pulls them */
  readonly #changed = new Set<string>();
  /** the run's count of its platform use (edge/run/usage), written once per tick */
  readonly usage: UsageCounter;
  /** why the run's sealed secrets could not be decrypted (the operator key changed or is gone); the run then fails */
  #secretsProblem: string | null = null;
  /** the object's storage as the usage counter sees it (its writes counted) */
  readonly #storage: DurableObjectStorage;

  /** Loads the run this object holds, if any (call inside `blockConcurrencyWhile`). */
  constructor(
    ctx: DurableObjectState,
    private readonly env: Env,
  ) {
    this.usage = new UsageCounter(ctx.storage.sql);
    this.#storage = meteredStorage(ctx.storage, this.usage);
    this.#alarm = new RunAlarm(this.#storage);
    this.log = runLog((line) => this.parts.storage.log(line), () => this.#meta?.runId);
    this.parts = runObjectParts(ctx, env, {
      meta: () => this.require().meta,
      state: () => this.require().state,
      current: () => ({ state: this.#state, meta: this.#meta }),
      view: () => this.view(),
      feed: (event, inline) => this.apply(event, inline),
      // an outbox resend reports like a consumer does, through the loop (never through the object's own RPC)
      report: (report) => this.reported(report),
      observeEngine: async (swarm, inline, withPool, plan) => {
        // a finished run has left its servers' objects: a poll decided before it finished subscribes nothing
        if (this.#state?.run.phase !== "finished") this.usage.add("otherDoRequests");
        const obs = this.#state?.run.phase === "finished" ? null : await this.#link!.observe(swarm, withPool, plan);
        if (obs === null) return null;
        await this.observed(obs, inline);
        return obs.note.kind === "unreachable" ? obs.note.error : null;
      },
      log: this.log,
      gatewayHeaders: (swarm) => this.gatewayHeaders()[swarm] ?? {},
      finished: () => this.#finished(),
      fail: async (reason, inline) => {
        const event = this.#state?.run.phase === "finished" ? null : (this.#link?.fail(reason) ?? null);
        if (event) await this.apply(event, inline);
      },
    }, this.#storage, this.usage);
    const { storage } = this.parts;
    this.#meta = storage.meta();
    this.#state = storage.loadState();
    // a run that finished before its secrets were deleted (a reset in between): delete them now
    if (this.#state?.run.phase === "finished" && storage.scrubSecrets()) this.#meta = storage.meta();
    if (this.#meta) this.#link = this.#linkFor(this.#meta);
  }

  /**
   * Decrypts the run's sealed secrets into the in-memory meta (storage keeps only the ciphertext, edge/ground/
   * secrets-at-rest); call once after the constructor, inside `blockConcurrencyWhile`. A key that no longer decrypts
   * them is kept as {@link secretsProblem} (the next tick fails the run with it). Never throws.
   */
  async open(): Promise<void> {
    if (this.#meta && this.#state?.run.phase !== "finished") this.#meta = await this.#withSecrets(this.#meta);
  }

  async #withSecrets(meta: RunMeta): Promise<RunMeta> {
    if (!meta.sealedSecrets) return meta;
    try {
      return { ...meta, spec: { ...meta.spec, secrets: await unsealSecrets(meta.sealedSecrets, meta.runId, this.env.AJET_SECRETS_KEY) } };
    } catch (err) {
      this.#secretsProblem = err instanceof Error ? err.message : String(err);
      return meta;
    }
  }

  /** Why the run's secrets cannot be used, or null (none, or decrypted). */
  get secretsProblem(): string | null {
    return this.#secretsProblem;
  }

  /** Fails the run because its secrets cannot be decrypted (once; inline). */
  async failForSecrets(): Promise<void> {
    const problem = this.#secretsProblem;
    if (!problem || !this.#state || this.#state.run.phase === "finished") return;
    this.log("error", problem, {});
    const event = this.#link?.fail(problem) ?? null;
    if (event) await this.apply(event, true);
  }

  /** The core's state, null when this object holds no run. */
  get state(): SchedulerState | null {
    return this.#state;
  }

  /** The run's stored meta, null when this object holds no run. */
  get meta(): RunMeta | null {
    return this.#meta;
  }

  /** The state and meta. @throws Error when this object holds no run */
  require(): { state: SchedulerState; meta: RunMeta } {
    if (!this.#state || !this.#meta) throw new Error("no run in this object; create it with POST /runs");
    return { state: this.#state, meta: this.#meta };
  }

  /** Stores a prepared run (edge/run/run-create `prepareRun`) and starts it (`runStarted`, inline). */
  async start(run: { state: SchedulerState; meta: RunMeta }): Promise<void> {
    this.#storage.transactionSync(() => storeRun(this.parts.storage, run));
    this.#state = run.state;
    this.#meta = await this.#withSecrets(run.meta);
    this.#link = this.#linkFor(run.meta);
    await this.apply({ type: "runStarted" }, true);
    await this.failForSecrets();
  }

  /** The run's status view (edge/run/run-views `runView` with the engine notes, the failure and `scheduler`), null without a run. */
  view(): RunView | null {
    if (!this.#state || !this.#meta) return null;
    const engine = { notes: this.#link?.notes() ?? {}, failure: this.#link?.failure() ?? null, nowMs: Date.now() };
    const sandboxes = this.parts.sandboxes.any ? { sandboxes: this.parts.sandboxes.counts(Date.now()) } : {};
    return { ...runView(this.#state, this.#meta, this.parts.storage.logTail(20), engine), scheduler: this.#applyStats.view(), ...sandboxes };
  }

  /**
   * decide → persist → arm → execute. Commands that talk to a swarm server (status polls, aborts, outbox resends: up
   * to minutes) run `inline` in the alarm and the control calls (create, stop); from an episode-port RPC they are
   * queued in the same transaction as the decision and the alarm is set to now (`CommandRunner.split`).
   * @throws Error when this object holds no run
   */
  async apply(event: SchedulerEvent, inline = false): Promise<EventAck> {
    const { state: current } = this.require();
    const startedMs = performance.now();
    const { state, commands, changes, ack } = decide(current, event, Date.now());
    const { now, later } = CommandRunner.split(commands, inline);
    // all rows of one decision or none: a failed write must not leave half a decision for the next reload (BC-51)
    this.#storage.transactionSync(() => {
      this.parts.storage.persist(changes);
      recordClosedAttempts(this.parts.storage, changes.closedAttempts);
      this.parts.storage.queueCommands(later);
    });
    this.#applyStats.record(performance.now() - startedMs, Date.now());
    this.#state = state;
    this.stopWaiters.stateChanged(state.run);
    this.#link?.decided(state);
    await this.arm(later.length > 0);
    await this.parts.commands.execute(now, inline);
    this.parts.live.changed(Date.now());
    return ack;
  }

  /**
   * An episode's end or abort result (a consumer's `episodeReported`, or the outbox resend's): the core decides, then
   * the ledger and attempt rows are written around its answer (edge/run/report-ledger `recordResult`); an abort the
   * server did not confirm wakes the alarm at once to send it again.
   * @throws Error when this object holds no run
   */
  async reported(report: ResultReport): Promise<EventAck> {
    const { state } = this.require();
    const { signals, ...event } = report;
    const { ack, wakeNow } = await recordResult(this.parts.storage, this.log, state.episodes.get(report.episodeKey), report, () => this.apply({ type: "episodeReported", ...event }));
    // what the attempt measured counts once, with the report the core applied (a resent report is a duplicate)
    if (ack.status === "applied") this.usage.reported(signals);
    if (wakeNow) await this.arm(true);
    return ack;
  }

  /**
   * A swarm server's object says the engine of `swarm` changed: a wake-up that carries nothing. The alarm fires at
   * once and its tick pulls that swarm's observation (the object's answer to the run's own subscribe).
   */
  async engineChanged(swarm: string): Promise<void> {
    if (!this.#state || this.#state.run.phase === "finished" || !this.#meta?.spec.swarms.some((s) => s.name === swarm)) return;
    this.#changed.add(swarm);
    await this.arm(true);
  }

  /** Sets the alarm for the core's next wake-up, or for now with `wakeNow` (edge/run/alarm-plan `RunAlarm`). */
  async arm(wakeNow = false): Promise<void> {
    if (!this.#state) return;
    const now = Date.now();
    await this.#alarm.arm(this.#state, wakeNow, now, this.parts.sandboxes.nextWakeAt(this.#state, now));
  }

  /** One alarm tick: the commands RPCs queued, leases, back-offs, polls, the claim sweep. Never throws (BC-45): a failing tick is logged and re-armed. */
  async tick(retryCount: number): Promise<void> {
    this.#alarm.fired();
    try {
      if (!this.#state) return;
      await this.failForSecrets();
      await this.parts.commands.drainQueued();
      // a finished run has left its servers' objects: a pull would subscribe it again
      const changed = this.#state.run.phase === "finished" ? [] : [...this.#changed];
      this.#changed.clear();
      await this.parts.commands.pull(changed);
      await this.apply({ type: "tick" }, true);
      await this.parts.commands.sweepClaimsWhenDue(Date.now());
      // sandboxes whose attempt is over are destroyed until the backend confirms (edge/run/sandboxes)
      await this.parts.sandboxes.sweep(this.#state, Date.now(), Math.random);
      await this.arm();
    } catch (err) {
      this.log("error", "tick failed; retrying", { error: String(err), retryCount });
      await this.#alarm.retrySoon(Date.now());
    } finally {
      this.usage.flush();
    }
  }

  /** Applies one observation of a swarm server's object (edge/run/engine-link `observed`: a `failed` note fails the run once). */
  async observed(obs: EngineObservation, inline: boolean): Promise<void> {
    if (!this.#link || !this.#state) return;
    this.parts.timeline.seen(obs.swarm, obs.engineStatus, obs.seenAtMs);
    for (const event of this.#link.observed(obs, this.#state.run.phase === "finished")) await this.apply(event, inline);
  }

  /** The run's resolved gateway headers per swarm name (swarms without templates are left out; unresolvable ones are logged and left out). */
  gatewayHeaders(): Record<string, Record<string, string>> {
    if (!this.#meta) return {};
    return runGatewayHeaders(this.#meta.spec, this.env.AJET_SECRETS, (swarm, missing) => this.log("warn", `swarm ${swarm}: gateway headers need secrets nobody sets: ${missing.join(", ")}`, { swarm }));
  }

  #linkFor(meta: RunMeta): EngineLink {
    return EngineLink.of(this.env, this.#storage.kv, meta, (swarm) => this.gatewayHeaders()[swarm] ?? {});
  }

  /**
   * The run has finished: its secrets are deleted, its quota slot released, its swarm servers' objects left, and its
   * datasets' copies in R2 (edge/run/dataset-staging) deleted in the background (never awaited, a failure logged).
   */
  async #finished(): Promise<void> {
    this.usage.add("otherDoRequests", this.#meta?.spec.swarms.length ?? 0);
    await this.#link?.leave();
    if (this.parts.storage.scrubSecrets()) this.#meta = this.parts.storage.meta();
    const principal = this.#meta?.principal;
    const runId = this.#meta?.runId;
    if (principal && runId) {
      this.usage.add("otherDoRequests");
      await callObject(() => this.env.RUN_QUOTA.get(this.env.RUN_QUOTA.idFromName(principal)).release(runId));
    }
    if (this.#meta && this.#hasStagedCopies(this.#meta)) void dropStagedLater(stagingBucket(this.env), this.#meta.runId, (level, message) => this.log(level, message, {}));
    this.usage.flush();
  }

  /** Whether a dataset of the run is read from a copy it made in R2 (so its end has something to delete). */
  #hasStagedCopies(meta: RunMeta): boolean {
    const prefix = `r2://${STAGING_BUCKET}/${stagedPrefix(meta.runId)}`;
    return meta.spec.datasets.some((d) => {
      const source = this.parts.storage.source(d.name);
      return source?.type === "file" && source.url.startsWith(prefix);
    });
  }
}
