/**
 * @module edge/swarm-server/swarm-server — `SwarmServer`, the Durable Object of ONE swarm server (issue 8 §1, issue 11 §3), keyed
 * by the server's normalised URL (`swarmServerStub` in engine-link.ts). It is the only place of the Worker that syncs a train config
 * and starts that engine, and the server's one status watcher:
 *  - Runs subscribe (`subscribe`, also their heartbeat) with their job and engine policy, and get every status /
 *    global-step change pushed into their run object (`RolloutScheduler.engineObserved`), which feeds the core the
 *    same `engineStatusSeen` event it always consumed. A restart the watcher sees (status down, or `global_step`
 *    back) is counted, so every run learns of it even between polls.
 *  - OFFLINE with a subscriber whose policy is `start: "if-offline"` and that has not seen the engine run yet:
 *    ONE `/sync_train_config` + ONE `/start_engine` (BC-28: two runs, or two Workers of one account, racing on one
 *    OFFLINE server reach this same object; alarms run one at a time, and the bootstrap is marked in storage before
 *    the first request). `ENGINE.CANNOT_CONNECT` never bootstraps. Then it waits through BOOTING (the runs'
 *    `bootTimeoutSeconds`).
 *  - A server that runs with another batch size / num_repeat than a run's (pool information
 *    `completed_task_target` / `task_expected_num_repeat`, or the config this object synced) fails that run at once
 *    with one message naming both values and the fix.
 *  - `stopWhenDone`: when the last run leaves and it asked for it, `/stop_engine`.
 * Polling is adaptive (`swarm-watch.ts`): quick around expected edges, slow otherwise, bounded per minute.
 */
import { DurableObject } from "cloudflare:workers";
export type { EngineNote, EngineObservation, EngineSubscription } from "./engine-note.ts";
import { isCannotConnect, normalizeServerUrl, SwarmAPIError, SwarmClient } from "../../client/index.ts";
import { outboundFetch, outboundPolicy } from "../../runtime/outbound.ts";
import type { PoolSeen } from "../../scheduler/index.ts";
import { parseOperatorSecrets } from "../ground/secrets.ts";
import { ENGINE } from "../../protocol/index.ts";
import type { EngineNote, EngineObservation, EngineSubscription } from "./engine-note.ts";
import type { Env } from "../ground/env.ts";
import { jsonLogger } from "../ground/log.ts";
import { DEFAULT_WATCH_TIMING, freshBucket, nextPollAtMs, refill, spend, type PollBucket, type WatchTiming } from "./swarm-watch.ts";

/** Spends a token; a poll a subscribe needed at once may overdraw by one (the schedule then waits longer). */
function spendOrOverdraw(b: PollBucket, t: WatchTiming, nowMs: number): PollBucket {
  const r = refill(b, t, nowMs);
  return r.tokens >= 1 ? spend(r, t, nowMs) : { tokens: r.tokens - 1, atMs: r.atMs };
}

/** Per run, what the object remembers. */
interface Subscriber extends EngineSubscription {
  subscribedAtMs: number;
  /** the engine was seen ROLLING while this run was subscribed (then an OFFLINE is not ours to restart) */
  sawRolling: boolean;
  /** set once: the run cannot train here */
  failed: string | null;
  /** `expectEdge` was called: quick polls until this instant */
  expectEdgeUntilMs: number | null;
  /** the run's last subscribe (its heartbeat), epoch ms */
  heardAtMs: number;
}

/** The engine as last seen. */
interface Seen {
  engineStatus: string;
  globalStep: number | null;
  seenAtMs: number | null;
  changedAtMs: number | null;
  restarts: number;
  lastError: string | null;
  /** when OFFLINE followed a non-OFFLINE status this object did not cause */
  stoppedElsewhereAtMs: number | null;
}

/** The bootstrap this object runs (at most one at a time). */
interface Boot {
  phase: "idle" | "starting" | "booting";
  byRunId: string | null;
  sinceMs: number | null;
  failures: number;
  lastError: string | null;
}

/** Batch settings the server runs with: from pool information, or the config this object synced and started. */
interface Batching {
  batchSize: number;
  numRepeat: number;
  source: "pool" | "synced";
}

const DOWN = new Set<string>([ENGINE.OFFLINE, ENGINE.BOOTING]);
const RUNNING = new Set<string>([ENGINE.ROLLING, ENGINE.ROLLING_POST, ENGINE.WEIGHT_SYNCING, ENGINE.WEIGHT_EXPORTING]);
/** Bootstrap attempts that may fail (sync or start refused for another reason than "already started") before runs fail. */
const MAX_BOOT_FAILURES = 3;
/** Pause after a failed bootstrap attempt, ms. */
const BOOT_RETRY_MS = 5_000;
/** How long an `expectEdge` keeps the watcher quick (it is also cleared by the next change), ms. */
const EXPECT_EDGE_MS = 120_000;
/** A run not heard from (subscribe is its heartbeat) for this long is dropped, ms: a deleted run must not keep the watcher alive. */
const SUBSCRIBER_TTL_MS = 30 * 60_000;

const INITIAL_SEEN: Seen = { engineStatus: "unknown", globalStep: null, seenAtMs: null, changedAtMs: null, restarts: 0, lastError: null, stoppedElsewhereAtMs: null };
const INITIAL_BOOT: Boot = { phase: "idle", byRunId: null, sinceMs: null, failures: 0, lastError: null };

/** The mismatch message a run fails with: both values, where they come from, and the fix. */
export function batchMismatchMessage(url: string, server: Batching, run: { batchSize: number; numRepeat: number }): string {
  const where = server.source === "pool" ? "its pool information (completed_task_target, task_expected_num_repeat)" : "the config synced to it";
  return (
    `the swarm server ${url} already runs an engine with batch size ${server.batchSize} and num_repeat ${server.numRepeat} (${where}), ` +
    `but this run has batchSize ${run.batchSize} and numRepeat ${run.numRepeat}: its batch windows could never close. ` +
    `Create the run with batchSize ${server.batchSize} and numRepeat ${server.numRepeat}, or stop that engine (POST /stop_engine on the server) so this run syncs its own config`
  );
}

/** How long one pool read (with its status poll) answers the runs that ask for the pool information, ms. */
export const POOL_SHARE_MS = 1_000;

/** The Durable Object of one swarm server. RPC: `subscribe`, `unsubscribe`, `expectEdge`, `view`. */
export class SwarmServer extends DurableObject<Env> {
  readonly #kv: SyncKvStorage;
  #client: SwarmClient | null = null;
  /** the poll budget (in memory: a reset object starts with a full bucket) */
  #bucket: PollBucket | null = null;
  #polling: Promise<{ before: Seen; seen: Seen }> | null = null;
  /** the last pool read with the fresh status poll after it, shared by the runs that ask within {@link POOL_SHARE_MS} */
  #poolRead: { doneAtMs: number | null; result: Promise<PoolSeen | undefined> } | null = null;
  /** gateway headers per subscribed run (memory only: secrets never reach this object's storage) */
  readonly #headers = new Map<string, Record<string, string>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#kv = ctx.storage.kv;
  }

  // ---- stored state (small: a few keys) --------------------------------------------------------------------------

  #subs(): Record<string, Subscriber> {
    return this.#kv.get<Record<string, Subscriber>>("subs") ?? {};
  }
  #setSubs(subs: Record<string, Subscriber>): void {
    this.#kv.put("subs", subs);
  }
  #seen(): Seen {
    return this.#kv.get<Seen>("seen") ?? INITIAL_SEEN;
  }
  #boot(): Boot {
    return this.#kv.get<Boot>("boot") ?? INITIAL_BOOT;
  }
  #batching(): Batching | null {
    return this.#kv.get<Batching>("batching") ?? null;
  }

  // ---- RPC -------------------------------------------------------------------------------------------------------

  /**
   * Subscribes a run (idempotent; also its heartbeat: the run's status polls call it). Keeps what the object
   * learnt about the run (seen ROLLING, failed). Wakes the watcher at once for a new run.
   * @returns the current observation for this run
   */
  async subscribe(sub: EngineSubscription, options: { withPool?: boolean } = {}): Promise<EngineObservation> {
    const now = Date.now();
    const subs = this.#subs();
    const { headers, ...stored } = sub;
    if (headers && Object.keys(headers).length > 0) this.#headers.set(sub.runId, headers);
    else this.#headers.delete(sub.runId);
    const known = subs[sub.runId];
    subs[sub.runId] = { ...stored, url: normalizeServerUrl(sub.url), subscribedAtMs: known?.subscribedAtMs ?? now, sawRolling: known?.sawRolling ?? false, failed: known?.failed ?? null, expectEdgeUntilMs: known?.expectEdgeUntilMs ?? null, heardAtMs: now };
    this.#setSubs(subs);
    this.#kv.put("url", normalizeServerUrl(sub.url));
    // nobody polled lately (a new or sleeping watcher): one poll now, so the run starts from a real status
    const seen = this.#seen();
    const timing = this.#timing(Object.values(subs));
    // batch truth asks for the pool information: read it first, then a status poll that starts after it
    const pool = options.withPool ? await this.#sharedPoolRead(normalizeServerUrl(sub.url), sub.runId) : undefined;
    // with a pool read, the status seen now was polled after it; without one, poll when nobody did lately
    if (pool === undefined && (seen.seenAtMs === null || now - seen.seenAtMs > 2 * timing.slowMs)) await this.#pollAndLearn(normalizeServerUrl(sub.url), sub.runId);
    if (!known) {
      // a run already running on a server we know the batching of fails at once
      this.#checkBatching(subs[sub.runId]!);
      await this.ctx.storage.setAlarm(now);
    } else if ((await this.ctx.storage.getAlarm()) === null) {
      await this.ctx.storage.setAlarm(now);
    }
    const obs = this.#observationFor(this.#subs()[sub.runId]!);
    return pool !== undefined ? { ...obs, pool } : obs;
  }

  /**
   * The pool information read before a fresh status poll, shared: a run asking while one is in flight, or within
   * {@link POOL_SHARE_MS} of the last, gets that one. However many runs share the server, it answers at most one
   * pool read and one status poll for them per {@link POOL_SHARE_MS}. A run never gets a read older than one it got
   * before (the newest completed read is the one shared).
   */
  async #sharedPoolRead(url: string, runId: string): Promise<PoolSeen | undefined> {
    const last = this.#poolRead;
    if (last && (last.doneAtMs === null || Date.now() - last.doneAtMs < POOL_SHARE_MS)) return last.result;
    const read: { doneAtMs: number | null; result: Promise<PoolSeen | undefined> } = { doneAtMs: null, result: Promise.resolve(undefined) };
    read.result = (async () => {
      try {
        const pool = await this.#readPool(url);
        if (pool !== undefined) await this.#freshPoll(url, runId);
        return pool;
      } finally {
        read.doneAtMs = Date.now();
      }
    })();
    this.#poolRead = read;
    const pool = await read.result;
    if (pool === undefined && this.#poolRead === read) this.#poolRead = null; // a failed read is not shared: the next ask reads again
    return pool;
  }

  /** The pool information as the core reads it, or undefined when it cannot be read (the next ask reads it again). */
  async #readPool(url: string): Promise<PoolSeen | undefined> {
    try {
      const info = await this.#clientFor(url).getRolloutStat();
      return {
        globalStep: info.global_step,
        completedTasks: info.completed_tasks,
        completedTaskTarget: info.completed_task_target,
        episodeUuids: Object.values(info.completed_tasks_details).flat(),
        taskEpisodes: info.completed_tasks_details,
        runningTaskIds: Object.fromEntries(Object.entries(info.running_episode_details ?? {}).map(([uuid, d]) => [uuid, d["optional_task_id"] ?? ""])),
      };
    } catch {
      return undefined;
    }
  }

  /** A status poll that starts now: one in flight (it may have started before the caller's pool read) is waited out first. */
  async #freshPoll(url: string, runId: string): Promise<void> {
    if (this.#polling) await this.#polling.catch(() => undefined);
    await this.#pollAndLearn(url, runId);
  }

  /** The run is finished (its episodes resolved): it leaves; the last one that asked for `stopWhenDone` stops the engine. */
  async unsubscribe(runId: string): Promise<void> {
    this.#headers.delete(runId);
    const subs = this.#subs();
    const leaving = subs[runId];
    if (!leaving) return;
    delete subs[runId];
    this.#setSubs(subs);
    const others = Object.values(subs).filter((s) => s.failed === null);
    if (others.length === 0 && leaving.stopWhenDone && leaving.failed === null) {
      this.#kv.put("stopPending", { byRunId: runId, atMs: Date.now() });
      await this.ctx.storage.setAlarm(Date.now());
    }
  }

  /** A run's window is complete: the engine's edge to ROLLING_POST is due, so the watcher polls quickly for a while. */
  async expectEdge(runId: string): Promise<void> {
    const subs = this.#subs();
    const sub = subs[runId];
    if (!sub) return;
    sub.expectEdgeUntilMs = Date.now() + EXPECT_EDGE_MS;
    this.#setSubs(subs);
    const alarm = await this.ctx.storage.getAlarm();
    const soon = Date.now() + this.#timing(Object.values(subs)).quickMs;
    if (alarm === null || alarm > soon) await this.ctx.storage.setAlarm(soon);
  }

  /** Everything the object holds (for debugging and tests). */
  view(): { url: string | null; seen: Seen; boot: Boot; batching: Batching | null; runs: Array<Pick<Subscriber, "runId" | "start" | "stopWhenDone" | "sawRolling" | "failed">> } {
    return {
      url: this.#kv.get<string>("url") ?? null,
      seen: this.#seen(),
      boot: this.#boot(),
      batching: this.#batching(),
      runs: Object.values(this.#subs()).map((s) => ({ runId: s.runId, start: s.start, stopWhenDone: s.stopWhenDone, sawRolling: s.sawRolling, failed: s.failed })),
    };
  }

  // ---- the watcher -----------------------------------------------------------------------------------------------

  /** One watch step: poll, learn, bootstrap or check, push, schedule the next poll. Never throws (BC-45). */
  override async alarm(): Promise<void> {
    let next: number | null = Date.now() + DEFAULT_WATCH_TIMING.slowMs;
    try {
      next = await this.#step();
    } catch (err) {
      this.#log("error", "swarm server watch step failed; retrying", { error: String(err) });
    } finally {
      if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, Date.now()));
    }
  }

  async #step(): Promise<number | null> {
    const url = this.#kv.get<string>("url");
    if (!url) return null;
    const now = Date.now();
    const subs = this.#subs();
    // forget runs not heard from for long (a deleted run never unsubscribes)
    for (const s of Object.values(subs)) if (now - s.heardAtMs > SUBSCRIBER_TTL_MS) delete subs[s.runId];
    this.#setSubs(subs);
    const stopPending = this.#kv.get<{ byRunId: string }>("stopPending");
    const active = Object.values(subs).filter((s) => s.failed === null);
    if (stopPending && active.length === 0) {
      await this.#stopEngine(url, stopPending.byRunId);
      this.#kv.delete("stopPending");
    } else if (stopPending) {
      this.#kv.delete("stopPending"); // a new run arrived: it needs the engine
    }
    if (active.length === 0) return null; // nobody to watch for: the watcher sleeps until the next subscribe

    const { before, seen } = await this.#pollAndLearn(url, null);
    await this.#bootstrapOrWait(url, seen, Date.now());
    for (const s of Object.values(this.#subs())) if (s.failed === null) this.#checkBatching(s);
    await this.#push(before, this.#seen(), null);

    const live = Object.values(this.#subs()).filter((s) => s.failed === null);
    if (live.length === 0) return null;
    const boot = this.#boot();
    const expect = live.map((s) => s.expectEdgeUntilMs ?? 0).reduce((a, b) => Math.max(a, b), 0);
    return nextPollAtMs(
      { engineStatus: this.#seen().engineStatus, changedAtMs: this.#seen().changedAtMs, expectEdgeUntilMs: expect || null, booting: boot.phase !== "idle" },
      this.#bucket ?? freshBucket(this.#timing(live), Date.now()),
      this.#timing(live),
      Date.now(),
    );
  }

  /**
   * One poll (single flight: a subscribe and the alarm never poll at once) and what it teaches: runs that saw
   * ROLLING, expected edges that came, the batch settings, mismatching runs. A poll made for a subscribe pushes the
   * change to the other runs (fire and forget).
   */
  async #pollAndLearn(url: string, forRunId: string | null): Promise<{ before: Seen; seen: Seen }> {
    if (this.#polling) return this.#polling;
    this.#polling = (async () => {
      const now = Date.now();
      const timing = this.#timing(Object.values(this.#subs()));
      this.#bucket = spendOrOverdraw(this.#bucket ?? freshBucket(timing, now), timing, now);
      const before = this.#seen();
      const seen = await this.#poll(url, before, now);
      const subs = this.#subs();
      if (seen.engineStatus === ENGINE.ROLLING) for (const s of Object.values(subs)) s.sawRolling = true;
      if (seen.changedAtMs === now) for (const s of Object.values(subs)) s.expectEdgeUntilMs = null; // the edge came
      this.#setSubs(subs);
      await this.#learnBatching(url, seen, before);
      for (const s of Object.values(this.#subs())) if (s.failed === null) this.#checkBatching(s);
      if (forRunId !== null) void this.#push(before, this.#seen(), forRunId).catch(() => {});
      return { before, seen };
    })();
    try {
      return await this.#polling;
    } finally {
      this.#polling = null;
    }
  }

  /** One status poll; counts restarts; remembers when OFFLINE came from elsewhere. */
  async #poll(url: string, before: Seen, now: number): Promise<Seen> {
    const snap = await this.#clientFor(url).getEngineStatusOrCannotConnect();
    if (isCannotConnect(snap)) {
      // the client-only pseudo status, as the core always saw it (the step kept: the server did not say otherwise);
      // not an edge, so an unreachable server is polled at the slow pace
      const seen: Seen = { ...before, engineStatus: snap.status, seenAtMs: now, lastError: snap.error.message };
      this.#kv.put("seen", seen);
      return seen;
    }
    const changed = (snap.status !== before.engineStatus && before.engineStatus !== "ENGINE.CANNOT_CONNECT") || snap.globalStep !== before.globalStep;
    const wentDown = DOWN.has(snap.status) && !DOWN.has(before.engineStatus) && before.seenAtMs !== null && before.engineStatus !== "unknown";
    // global_step back (0 from the exit hook, or a fresh 1) while running, without a down status seen in between
    const stepBack = !wentDown && RUNNING.has(snap.status) && snap.globalStep !== null && before.globalStep !== null && snap.globalStep < before.globalStep;
    const ours = this.#boot().phase !== "idle" || this.#kv.get("stoppingSince") !== undefined;
    const seen: Seen = {
      engineStatus: snap.status,
      globalStep: snap.globalStep,
      seenAtMs: now,
      changedAtMs: changed ? now : before.changedAtMs,
      restarts: before.restarts + (wentDown || stepBack ? 1 : 0),
      lastError: null,
      stoppedElsewhereAtMs:
        snap.status === ENGINE.OFFLINE ? (RUNNING.has(before.engineStatus) && !ours ? now : before.stoppedElsewhereAtMs) : null,
    };
    this.#kv.put("seen", seen);
    return seen;
  }

  /** Reads the pool information once per engine run while it rolls: the batch settings the server really uses. */
  async #learnBatching(url: string, seen: Seen, before: Seen): Promise<void> {
    if (seen.restarts !== before.restarts || seen.engineStatus === ENGINE.OFFLINE) {
      if (this.#batching()?.source === "pool") this.#kv.delete("batching");
    }
    if (seen.engineStatus !== ENGINE.ROLLING || this.#batching()?.source === "pool") return;
    try {
      const pool = await this.#clientFor(url).getRolloutStat();
      if (pool.completed_task_target > 0 && pool.task_expected_num_repeat > 0) {
        this.#kv.put("batching", { batchSize: pool.completed_task_target, numRepeat: pool.task_expected_num_repeat, source: "pool" } satisfies Batching);
      }
    } catch (err) {
      this.#log("warn", "could not read the pool information; batch settings checked later", { error: String(err) });
    }
  }

  /** Fails a run whose batch settings differ from the server's (when those are known). */
  #checkBatching(sub: Subscriber): void {
    const batching = this.#batching();
    if (!batching || sub.failed !== null) return;
    const running = RUNNING.has(this.#seen().engineStatus) || this.#seen().engineStatus === ENGINE.BOOTING || this.#boot().phase !== "idle";
    if (!running) return;
    if (batching.batchSize === sub.batchSize && batching.numRepeat === sub.numRepeat) return;
    const subs = this.#subs();
    const s = subs[sub.runId];
    if (!s) return;
    s.failed = batchMismatchMessage(sub.url, batching, sub);
    this.#setSubs(subs);
    this.#log("warn", "run refused: batch settings differ from the server's", { runId: sub.runId, server: `${batching.batchSize}x${batching.numRepeat}`, run: `${sub.batchSize}x${sub.numRepeat}` });
  }

  /** OFFLINE + a run that may start it → one sync + one start; BOOTING past the timeout → the waiting runs fail. */
  async #bootstrapOrWait(url: string, seen: Seen, now: number): Promise<void> {
    const boot = this.#boot();
    if (seen.engineStatus === ENGINE.ROLLING || RUNNING.has(seen.engineStatus)) {
      if (boot.phase !== "idle") this.#kv.put("boot", { ...INITIAL_BOOT } satisfies Boot);
      return;
    }
    if (boot.phase === "booting" && seen.engineStatus === ENGINE.BOOTING) {
      const waiting = Object.values(this.#subs()).filter((s) => s.failed === null && !s.sawRolling);
      const subs = this.#subs();
      for (const s of waiting) {
        if (now - (boot.sinceMs ?? now) <= s.bootTimeoutSeconds * 1000) continue;
        subs[s.runId]!.failed = `the engine of ${url} was started ${Math.round((now - (boot.sinceMs ?? now)) / 1000)} s ago and is still BOOTING (engine.bootTimeoutSeconds ${s.bootTimeoutSeconds}); check the swarm server's logs, or raise engine.bootTimeoutSeconds`;
      }
      this.#setSubs(subs);
      return;
    }
    if (seen.engineStatus !== ENGINE.OFFLINE) return; // CANNOT_CONNECT / unknown never bootstraps (BC-28)
    if (boot.phase === "booting" && boot.sinceMs !== null && now - boot.sinceMs < BOOT_RETRY_MS) return; // the server has not flipped yet
    const starter = Object.values(this.#subs())
      .filter((s) => s.failed === null && s.start === "if-offline" && !s.sawRolling)
      .sort((a, b) => a.subscribedAtMs - b.subscribedAtMs)[0];
    if (!starter) return;
    if (boot.failures > 0 && boot.sinceMs !== null && now - boot.sinceMs < BOOT_RETRY_MS) return;
    // marked before the first request: nothing else in this object starts while it runs (BC-28)
    this.#kv.put("boot", { phase: "starting", byRunId: starter.runId, sinceMs: now, failures: boot.failures, lastError: boot.lastError } satisfies Boot);
    const client = this.#clientFor(url);
    try {
      await client.syncTrainConfig(starter.yaml);
      await client.requestEngineStart();
      this.#kv.put("batching", { batchSize: starter.batchSize, numRepeat: starter.numRepeat, source: "synced" } satisfies Batching);
      this.#kv.put("boot", { phase: "booting", byRunId: starter.runId, sinceMs: Date.now(), failures: 0, lastError: null } satisfies Boot);
      this.#log("info", "synced the train config and started the engine", { url, byRun: starter.runId, batchSize: starter.batchSize, numRepeat: starter.numRepeat });
    } catch (err) {
      const raced = err instanceof SwarmAPIError && err.status === 400; // another client synced/started in between
      const message = err instanceof Error ? err.message : String(err);
      if (raced) {
        this.#kv.put("boot", { ...INITIAL_BOOT } satisfies Boot);
        this.#log("info", "the engine was started by another client in between; waiting for it", { url, error: message });
        return;
      }
      const failures = boot.failures + 1;
      this.#kv.put("boot", { phase: "idle", byRunId: null, sinceMs: Date.now(), failures, lastError: message } satisfies Boot);
      this.#log("warn", "could not start the engine; retrying", { url, error: message, failures });
      if (failures >= MAX_BOOT_FAILURES) {
        const subs = this.#subs();
        for (const s of Object.values(subs)) {
          if (s.failed === null && s.start === "if-offline" && !s.sawRolling) s.failed = `could not start the engine of ${url} (${failures} tries): ${message}. Check the swarm server, or start its engine yourself and set engine.start "never"`;
        }
        this.#setSubs(subs);
      }
    }
  }

  /** `stopWhenDone`: the engine is stopped (and this object will not count it as stopped elsewhere). */
  async #stopEngine(url: string, byRunId: string): Promise<void> {
    this.#kv.put("stoppingSince", Date.now());
    try {
      await this.#clientFor(url).stopEngine();
      this.#log("info", "stopped the engine: the last run that asked for it (stopWhenDone) is done", { url, byRun: byRunId });
    } catch (err) {
      this.#log("warn", "could not stop the engine (stopWhenDone)", { url, error: String(err) });
    } finally {
      this.#kv.delete("stoppingSince");
      this.#kv.put("boot", { ...INITIAL_BOOT } satisfies Boot);
      this.#kv.delete("batching");
      // our own stop: the next poll's OFFLINE is not "stopped by another client"
      const seen = this.#seen();
      this.#kv.put("seen", { ...seen, engineStatus: ENGINE.OFFLINE, changedAtMs: Date.now(), restarts: seen.restarts + (DOWN.has(seen.engineStatus) ? 0 : 1), stoppedElsewhereAtMs: null } satisfies Seen);
    }
  }

  /** Pushes the new observation to every run (but `except`) whose view of it changed (status, step, restarts or its note). */
  async #push(before: Seen, seen: Seen, except: string | null): Promise<void> {
    const lastNotes = this.#kv.get<Record<string, string>>("pushedNotes") ?? {};
    const statusChanged = before.engineStatus !== seen.engineStatus || before.globalStep !== seen.globalStep || before.restarts !== seen.restarts;
    const jobs: Promise<unknown>[] = [];
    const pushed: Record<string, string> = {};
    for (const s of Object.values(this.#subs())) {
      const obs = this.#observationFor(s);
      const note = JSON.stringify(obs.note.kind === "booting" ? { kind: "booting", sinceMs: obs.note.sinceMs } : obs.note);
      pushed[s.runId] = note;
      if (s.runId === except || (!statusChanged && lastNotes[s.runId] === note)) continue;
      const run = this.env.SCHEDULER.get(this.env.SCHEDULER.idFromName(s.runId));
      jobs.push(run.engineObserved(obs).catch((err: unknown) => this.#log("warn", "could not tell a run about the engine; its next status poll will", { runId: s.runId, error: String(err) })));
    }
    this.#kv.put("pushedNotes", pushed);
    await Promise.all(jobs);
  }

  #observationFor(s: Subscriber): EngineObservation {
    const seen = this.#seen();
    return { swarm: s.swarm, engineStatus: seen.engineStatus, globalStep: seen.globalStep, seenAtMs: seen.seenAtMs, restarts: seen.restarts, note: this.#noteFor(s, seen) };
  }

  #noteFor(s: Subscriber, seen: Seen): EngineNote {
    if (s.failed !== null) return { kind: "failed", message: s.failed };
    const boot = this.#boot();
    if (seen.lastError !== null) return { kind: "unreachable", error: seen.lastError };
    if (boot.phase === "starting") return { kind: "starting", sinceMs: boot.sinceMs ?? Date.now() };
    if (seen.engineStatus === ENGINE.BOOTING || boot.phase === "booting") {
      const since = boot.sinceMs ?? seen.changedAtMs ?? Date.now();
      return { kind: "booting", sinceMs: since, timeoutAtMs: since + s.bootTimeoutSeconds * 1000 };
    }
    if (seen.engineStatus === ENGINE.OFFLINE) {
      if (s.sawRolling || (seen.stoppedElsewhereAtMs !== null && s.start === "never")) return { kind: "stoppedElsewhere", atMs: seen.stoppedElsewhereAtMs ?? seen.seenAtMs ?? Date.now() };
      if (s.start === "never") return { kind: "waitingForStart" };
    }
    return { kind: "ok" };
  }

  /** The quickest / strictest watcher settings of the runs on this server. */
  #timing(subs: readonly Subscriber[]): WatchTiming {
    const min = (values: (number | undefined)[], fallback: number) => values.reduce<number>((m, v) => (v !== undefined && v < m ? v : m), fallback);
    const quickMs = min(subs.map((s) => s.pollQuickMs), DEFAULT_WATCH_TIMING.quickMs);
    const slowMs = Math.max(quickMs, min(subs.map((s) => s.pollSlowMs), DEFAULT_WATCH_TIMING.slowMs));
    const maxPollsPerMinute = min(subs.map((s) => s.maxPollsPerMinute), DEFAULT_WATCH_TIMING.maxPollsPerMinute);
    return { ...DEFAULT_WATCH_TIMING, quickMs, slowMs, bootingMs: Math.min(DEFAULT_WATCH_TIMING.bootingMs, slowMs), maxPollsPerMinute, burst: Math.min(DEFAULT_WATCH_TIMING.burst, maxPollsPerMinute) };
  }

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
  #clientHeaders: Record<string, string> | null = null;

  #log(level: "info" | "warn" | "error", message: string, fields: Record<string, unknown>): void {
    if (level === "info") return; // info lines reach the runs through their notes and logs
    jsonLogger({ swarmServer: this.#kv.get<string>("url") ?? null })[level](message, fields);
  }
}
