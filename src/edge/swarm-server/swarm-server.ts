/**
 * @module edge/swarm-server/swarm-server — `SwarmServer`, the Durable Object of ONE swarm server (issue 8 §1, issue 11
 * §3), keyed by the server's normalised URL (`swarmServerStub` in edge/run/engine-link.ts). It is the only place of the
 * Worker that syncs a train config and starts that engine, and the server's one status watcher. Its rules are the pure
 * core beside it (edge/swarm-server/engine-watch.ts: subscriptions, restart detection, the batch-size check, the boot
 * state machine, subscriber expiry); this class is storage (a few keys of its KV), the alarm and the I/O around it:
 * it loads the state, feeds the core one event, stores what it answers and carries out its commands.
 *  - One direction per conversation with the run objects (docs/design/rooms.md): a run pushes its membership
 *    (`subscribe`, also its heartbeat; `expectEdge`; `unsubscribe`) and pulls observations (`subscribe`'s answer);
 *    this object never sends a run an observation. When what a run would see changes (status, step, restarts, its
 *    note) it only rings the run's bell (`RolloutScheduler.engineChanged(swarm)`, carrying nothing): the run's alarm
 *    pulls at once. So an observation enters a run only through its own pull, inside its own tick.
 *  - Polling is adaptive (edge/swarm-server/swarm-watch.ts): quick around expected edges, slow otherwise, bounded per
 *    minute; a run asking for the pool information shares one read per second with the others (edge/swarm-server/pool-share.ts).
 */
import { DurableObject } from "cloudflare:workers";
import { isCannotConnect, SwarmAPIError, SwarmClient } from "../../client/index.ts";
import { outboundFetch, outboundPolicy } from "../../runtime/outbound.ts";
import type { PoolSeen } from "../../scheduler/index.ts";
import { isReadOnly, type Env } from "../ground/env.ts";
import { jsonLogger } from "../ground/log.ts";
import { parseOperatorSecrets } from "../ground/secrets.ts";
import type { EngineObservation, EngineSubscription } from "./engine-note.ts";
import { changedRuns, nextWatchAtMs, observationFor, watchTimingOf } from "./engine-notes.ts";
import { initialWatchState, watch, type BootAnswer, type Seen, type Subscriber, type WatchCommand, type WatchEvent, type WatchState } from "./engine-watch.ts";
import { PoolShare, poolSeenOf } from "./pool-share.ts";
import { emptyPlans, leavePlans, PLANS_KEY, planTopUp, type TopUpPlanInput, type TopUpPlans } from "./top-up-plan.ts";
import { DEFAULT_WATCH_TIMING, freshBucket, spendOrOverdraw, type PollBucket } from "./swarm-watch.ts";

export type { EngineNote, EngineObservation, EngineSubscription } from "./engine-note.ts";
export { POOL_SHARE_MS } from "./pool-share.ts";

/** The storage key of each part of the state (kept as before the core existed: an object's stored state stays valid). */
const KEYS = { url: "url", subs: "subs", left: "left", seen: "seen", boot: "boot", batching: "batching", stopPending: "stopPending", stoppingSinceMs: "stoppingSince" } as const satisfies Record<keyof WatchState, string>;

/** The Durable Object of one swarm server. RPC: `subscribe`, `unsubscribe`, `expectEdge`, `view`. */
export class SwarmServer extends DurableObject<Env> {
  readonly #kv: SyncKvStorage;
  #client: SwarmClient | null = null;
  #clientHeaders: Record<string, string> | null = null;
  /** the poll budget (in memory: a reset object starts with a full bucket) */
  #bucket: PollBucket | null = null;
  #polling: Promise<{ before: Seen }> | null = null;
  /** the pool reads runs ask for, shared (edge/swarm-server/pool-share.ts) */
  readonly #pools = new PoolShare();
  /** gateway headers per subscribed run (memory only: secrets never reach this object's storage) */
  readonly #headers = new Map<string, Record<string, string>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#kv = ctx.storage.kv;
  }

  // ---- RPC -------------------------------------------------------------------------------------------------------

  /**
   * Subscribes a run (idempotent; also its heartbeat: the run's status polls call it). Keeps what the object learnt
   * about the run (seen ROLLING, failed). Polls when nobody did lately; wakes the watcher at once for a new run.
   * @param options.withPool read the pool information first, then a fresh status poll (batch truth)
   * @param options.plan the run's unclaimed groups on this server and its top-up ask (edge/swarm-server/top-up-plan.ts)
   * @returns the current observation for this run (with `topUpGrant` when it asked)
   */
  async subscribe(sub: EngineSubscription, options: { withPool?: boolean; plan?: TopUpPlanInput } = {}): Promise<EngineObservation> {
    const now = Date.now();
    const { headers, ...stored } = sub;
    if (headers && Object.keys(headers).length > 0) this.#headers.set(sub.runId, headers);
    else this.#headers.delete(sub.runId);
    const isNew = this.#load().subs[sub.runId] === undefined;
    const wants = this.#apply({ type: "subscribed", sub: stored, nowMs: now });
    // batch truth asks for the pool information: read it first, then a status poll that starts after it
    const freshPoll = async () => {
      if (this.#polling) await this.#polling.catch(() => undefined); // one in flight may have started before the read
      await this.#pollAndLearn(sub.runId);
    };
    const pool = options.withPool ? await this.#pools.read(() => this.#readPool(), freshPoll, Date.now) : undefined;
    // with a pool read, the status seen now was polled after it; without one, poll when nobody did lately
    if (pool === undefined && wants.some((c) => c.type === "poll")) await this.#pollAndLearn(sub.runId);
    await this.#carryOut(this.#apply({ type: "joined", runId: sub.runId, isNew, nowMs: now }));
    const state = this.#load();
    // a run that left (a late subscribe): an observation of the engine, the run not taken back
    const subscriber = state.subs[sub.runId] ?? { ...stored, url: state.url ?? stored.url, subscribedAtMs: now, sawRolling: false, failed: null, expectEdgeUntilMs: null, heardAtMs: now };
    const obs = observationFor(state, subscriber, Date.now());
    const grant = options.plan ? this.#plan(sub.runId, options.plan, state) : undefined; // synchronous: asks never interleave
    return { ...obs, ...(pool !== undefined ? { pool } : {}), ...(grant ? { topUpGrant: grant } : {}) };
  }

  /** The run is finished (its episodes resolved): it leaves; the last one that asked for `stopWhenDone` stops the engine. */
  async unsubscribe(runId: string): Promise<void> {
    this.#headers.delete(runId);
    const plans = this.#kv.get<TopUpPlans>(PLANS_KEY);
    if (plans) this.#kv.put(PLANS_KEY, leavePlans(plans, runId));
    await this.#carryOut(this.#apply({ type: "unsubscribed", runId, nowMs: Date.now() }));
  }

  /** A run's window is complete: the engine's edge to ROLLING_POST is due, so the watcher polls quickly for a while. */
  async expectEdge(runId: string): Promise<void> {
    await this.#carryOut(this.#apply({ type: "edgeExpected", runId, nowMs: Date.now() }));
  }

  /** Everything the object holds (for debugging and tests). */
  view(): Pick<WatchState, "url" | "seen" | "boot" | "batching"> & { runs: Array<Pick<Subscriber, "runId" | "start" | "stopWhenDone" | "sawRolling" | "failed">> } {
    const { url, seen, boot, batching, subs } = this.#load();
    return { url, seen, boot, batching, runs: Object.values(subs).map((s) => ({ runId: s.runId, start: s.start, stopWhenDone: s.stopWhenDone, sawRolling: s.sawRolling, failed: s.failed })) };
  }

  // ---- the watcher -----------------------------------------------------------------------------------------------

  /** One watch step: poll, learn, bootstrap or check, ring the runs whose view changed, schedule the next poll. Never throws (BC-45). */
  override async alarm(): Promise<void> {
    if (isReadOnly(this.env)) return; // a read-only Worker polls no server and starts no engine
    let next: number | null = Date.now() + DEFAULT_WATCH_TIMING.slowMs;
    try {
      next = await this.#step();
    } catch (err) {
      this.#log("error", "swarm server watch step failed; retrying", { error: String(err) });
    } finally {
      if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, Date.now()));
    }
  }

  /** @returns when to poll next, or null: nobody to watch for (the watcher sleeps until the next subscribe) */
  async #step(): Promise<number | null> {
    const began = this.#apply({ type: "stepBegan", nowMs: Date.now() });
    if (!began.some((c) => c.type === "poll")) {
      await this.#carryOut(began); // the engine stopped for the last run that asked for it, or nothing at all
      return null;
    }
    const { before } = await this.#pollAndLearn(null);
    await this.#carryOut(this.#apply({ type: "bootDue", nowMs: Date.now() }));
    await this.#ring(before, null);
    return nextWatchAtMs(this.#load(), this.#bucket, Date.now());
  }

  /**
   * One poll (single flight: a subscribe and the alarm never poll at once) and what it teaches (the core's `polled`,
   * then the pool's batch settings when it asks). A poll made for a subscribe rings the other runs whose view changed.
   */
  async #pollAndLearn(forRunId: string | null): Promise<{ before: Seen }> {
    if (this.#polling) return this.#polling;
    this.#polling = (async () => {
      const now = Date.now();
      const state = this.#load();
      const timing = watchTimingOf(Object.values(state.subs));
      this.#bucket = spendOrOverdraw(this.#bucket ?? freshBucket(timing, now), timing, now);
      const snap = await this.#clientFor(state.url!).getEngineStatusOrCannotConnect();
      const snapshot = isCannotConnect(snap)
        ? { kind: "unreachable" as const, engineStatus: snap.status, error: snap.error.message }
        : { kind: "status" as const, engineStatus: snap.status, globalStep: snap.globalStep };
      await this.#carryOut(this.#apply({ type: "polled", snapshot, nowMs: now }));
      if (forRunId !== null) void this.#ring(state.seen, forRunId).catch(() => {});
      return { before: state.seen };
    })();
    try {
      return await this.#polling;
    } finally {
      this.#polling = null;
    }
  }

  /** Carries out the core's commands in order; each I/O's answer goes back to the core as its event. */
  async #carryOut(commands: readonly WatchCommand[]): Promise<void> {
    for (const c of commands) {
      switch (c.type) {
        case "log":
          this.#log(c.level, c.message, c.fields);
          break;
        case "alarm":
          await this.#arm(c);
          break;
        case "poll":
          await this.#pollAndLearn(null);
          break;
        case "readPool":
          await this.#carryOut(this.#apply(await this.#readBatching()));
          break;
        case "startEngine":
          await this.#carryOut(this.#apply({ type: "bootAnswered", answer: await this.#start(c), nowMs: Date.now() }));
          break;
        case "stopEngine":
          await this.#carryOut(this.#apply({ type: "engineStopped", nowMs: Date.now(), error: await this.#stop() }));
          break;
      }
    }
  }

  /** `/sync_train_config` with the starter's job, then `/start_engine`; a 400 means another client did it first. */
  async #start(c: Extract<WatchCommand, { type: "startEngine" }>): Promise<BootAnswer> {
    const client = this.#clientFor(this.#load().url!);
    try {
      await client.syncTrainConfig(c.yaml);
      await client.requestEngineStart();
      return { kind: "started", byRunId: c.byRunId, batchSize: c.batchSize, numRepeat: c.numRepeat };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      return err instanceof SwarmAPIError && err.status === 400 ? { kind: "raced", message } : { kind: "failed", message };
    }
  }

  /** `/stop_engine` (`stopWhenDone`). @returns the error text, null when it answered */
  async #stop(): Promise<string | null> {
    try {
      await this.#clientFor(this.#load().url!).stopEngine();
      return null;
    } catch (err) {
      return String(err);
    }
  }

  /** The pool's batch settings (the `poolRead` event). */
  async #readBatching(): Promise<WatchEvent> {
    try {
      const pool = await this.#clientFor(this.#load().url!).getRolloutStat();
      return { type: "poolRead", pool: { batchSize: pool.completed_task_target, numRepeat: pool.task_expected_num_repeat } };
    } catch (err) {
      return { type: "poolRead", pool: null, error: String(err) };
    }
  }

  /** Sets the alarm as the core asked. */
  async #arm(c: Extract<WatchCommand, { type: "alarm" }>): Promise<void> {
    const armed = c.mode === "set" ? null : await this.ctx.storage.getAlarm();
    if (c.mode === "set" || armed === null || (c.mode === "ifLater" && armed > c.atMs)) await this.ctx.storage.setAlarm(c.atMs);
  }

  /** The pool information (undefined when it cannot be read: the next ask reads it again). */
  async #readPool(): Promise<PoolSeen | undefined> {
    try {
      return poolSeenOf(await this.#clientFor(this.#load().url!).getRolloutStat());
    } catch {
      return undefined;
    }
  }

  /**
   * Rings every run (but `except`) whose view changed (status, step, restarts or its note): `engineChanged(swarm)`,
   * a wake-up without data; the run pulls. A run that cannot be reached learns it at its next status poll.
   */
  async #ring(before: Seen, except: string | null): Promise<void> {
    const state = this.#load();
    const { runIds, notes } = changedRuns(before, state, this.#kv.get<Record<string, string>>("pushedNotes") ?? {}, except, Date.now());
    this.#kv.put("pushedNotes", notes);
    await Promise.all(
      runIds.map((runId) =>
        this.env.SCHEDULER.get(this.env.SCHEDULER.idFromName(runId))
          .engineChanged(state.subs[runId]!.swarm)
          .catch((err: unknown) => this.#log("warn", "could not tell a run that the engine changed; its next status poll will see it", { runId, error: String(err) })),
      ),
    );
  }

  // ---- storage ---------------------------------------------------------------------------------------------------

  /** Applies a run's top-up plan input (stored: a reset object keeps its reservations). @returns the grant when it asked */
  #plan(runId: string, input: TopUpPlanInput, state: WatchState): EngineObservation["topUpGrant"] {
    const before = this.#kv.get<TopUpPlans>(PLANS_KEY) ?? emptyPlans();
    const { plans, grant } = planTopUp(before, runId, input, state.seen, Date.now(), state.subs);
    if (JSON.stringify(plans) !== JSON.stringify(before)) this.#kv.put(PLANS_KEY, plans);
    return grant;
  }

  /** The state as stored (each part under its own key). */
  #load(): WatchState {
    const initial = initialWatchState();
    const get = <K extends keyof WatchState>(key: K): WatchState[K] => this.#kv.get<WatchState[K]>(KEYS[key]) ?? initial[key];
    return { url: get("url"), subs: get("subs"), left: get("left"), seen: get("seen"), boot: get("boot"), batching: get("batching"), stopPending: get("stopPending"), stoppingSinceMs: get("stoppingSinceMs") };
  }

  /** Feeds the core one event over the stored state and stores the parts that changed. @returns its commands */
  #apply(event: WatchEvent): WatchCommand[] {
    const before = this.#load();
    const { state, commands } = watch(before, event);
    for (const key of Object.keys(KEYS) as (keyof WatchState)[]) {
      if (JSON.stringify(state[key]) === JSON.stringify(before[key])) continue;
      if (state[key] === null) this.#kv.delete(KEYS[key]);
      else this.#kv.put(KEYS[key], state[key]);
    }
    return commands;
  }

  // ---- I/O helpers -----------------------------------------------------------------------------------------------

  /**
   * The client of the server, under the Worker's outbound rules (allowed hosts, operator credentials only to their
   * endpoint) and with the gateway headers of a subscribed run (any: they all reach the same server).
   */
  #clientFor(url: string): SwarmClient {
    const headers = [...this.#headers.values()][0] ?? {};
    if (this.#client && this.#client.baseURL === url && this.#clientHeaders === headers) return this.#client;
    const logger = { info: () => {}, warn: (m: string, f?: Record<string, unknown>) => this.#log("warn", m, f ?? {}), error: (m: string, f?: Record<string, unknown>) => this.#log("error", m, f ?? {}) };
    const fetch = outboundFetch((input, init) => globalThis.fetch(input, init), outboundPolicy(this.env.AJET_ALLOWED_HOSTS, parseOperatorSecrets(this.env.AJET_SECRETS).secrets));
    this.#client = new SwarmClient({ baseURL: url, logger, fetch, headers });
    this.#clientHeaders = headers;
    return this.#client;
  }

  #log(level: "info" | "warn" | "error", message: string, fields: Record<string, unknown>): void {
    if (level === "info") return; // info lines reach the runs through their notes and logs
    jsonLogger({ swarmServer: this.#kv.get<string>("url") ?? null })[level](message, fields);
  }
}
