/**
 * @module test/edge/support — helpers for the Workers-pool tests: fresh emulators from the Node-side factory
 * (global-setup.node.ts), a SwarmClient inside workerd to boot them, run creation through the real API, and direct
 * access to a run's Durable Object (its SQLite rows, a fresh instance over the same storage with a capturing queue).
 */
import { createExecutionContext, createMessageBatch, env, getQueueResult, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import worker from "./worker-under-test.ts";
import { inject } from "vitest";
import { normalizeServerUrl, SwarmClient, type SwarmClientOptions } from "../../src/client/index.ts";
import type { EpisodeMessage } from "../../src/port/index.ts";
import type { Env } from "../../src/edge/ground/env.ts";
import { RolloutScheduler } from "../../src/edge/run/rollout-scheduler.ts";
import type { RunView } from "../../src/edge/run/run-views.ts";
import type { SourcePlan } from "../../src/edge/run/datasets.ts";
import { parseRunSpec, type EpisodeRow } from "../../src/scheduler/index.ts";
import { loadDataset, type DatasetSpec } from "../../src/tasks/index.ts";
import { AgentJetJob } from "../../src/job/index.ts";

/** An unroutable swarm: connections are refused at once (nothing listens on port 9 of 127.0.0.1). */
export const DEAD_SWARM = "http://127.0.0.1:9";

/** A fault the emulator applies to one call (see src/emulator/hooks.ts `FaultAction`). */
export interface Fault {
  delayMs?: number;
  status?: number;
  body?: unknown;
  afterHandling?: boolean;
}

/** What the wrapped emulator reports at `/__test/state`. */
export interface EmulatorState {
  status: string;
  globalStep: number | null;
  queue: string[];
  records: Array<{ episode_uuid: string; episode_status: string; client_uuid: string; llm_call_count: number }>;
  finished: string[];
  stepLog: Array<{ globalStep: number; episodes: Array<{ episodeUuid: string; taskId: string; reward: number | null; clientUuid: string; dropped: boolean }> }>;
}

/** A fresh emulator (fast profile, system clock) in the Node process, reachable from the Worker. */
export class TestEmulator {
  private constructor(readonly url: string) {}

  /** @param options createEmulator options (JSON): seed, policy, answerKey, timings … */
  static async start(options: Record<string, unknown> = {}): Promise<TestEmulator> {
    const res = await fetch(`${inject("emulatorFactoryUrl")}/emulators`, { method: "POST", body: JSON.stringify({ seed: 11, ...options }) });
    const body = (await res.json()) as { url?: string; error?: string };
    if (!body.url) throw new Error(`emulator factory: ${body.error}`);
    return new TestEmulator(body.url);
  }

  client(options: Partial<SwarmClientOptions> = {}): SwarmClient {
    return new SwarmClient({ baseURL: this.url, logger: { info: () => undefined, warn: () => undefined, error: () => undefined }, ...options });
  }

  /** Syncs a job (the project's builder) and starts the engine; resolves when ROLLING. `headers`: a gateway's. */
  async boot(c: { batchSize: number; numRepeat: number; maxEnvWorker: number } = { batchSize: 2, numRepeat: 2, maxEnvWorker: 4 }, headers: Record<string, string> = {}): Promise<void> {
    const client = this.client({ backoff: { statusPollIntervalMs: 20 }, headers });
    await client.syncTrainConfig(new AgentJetJob({ experimentName: "edge_tests", ...c }));
    await client.startEngine({ timeoutMs: 10_000 });
  }

  async requests(): Promise<Array<{ path: string; body: any; status?: number }>> {
    return (await fetch(`${this.url}/__test/requests`)).json();
  }

  async state(): Promise<EmulatorState> {
    return (await fetch(`${this.url}/__test/state`)).json();
  }

  /** Queues faults per route (`"/end_episode"`, `"/claim_episode"`, …), one per call, in order. */
  async faults(byRoute: Record<string, Fault[]>): Promise<void> {
    await fetch(`${this.url}/__test/faults`, { method: "POST", body: JSON.stringify(byRoute) });
  }
}

/** One request a {@link CaptureServer} received. */
export interface Captured {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** A server on 127.0.0.1 that records every request (global-setup.node.ts): "did anything reach it?" */
export class CaptureServer {
  private constructor(readonly url: string) {}

  /** @param redirectTo answer every request with a 302 to this URL */
  static async start(redirectTo?: string): Promise<CaptureServer> {
    const res = await fetch(`${inject("emulatorFactoryUrl")}/captures`, { method: "POST", body: JSON.stringify(redirectTo ? { redirectTo } : {}) });
    return new CaptureServer(((await res.json()) as { url: string }).url);
  }

  /** A host that answers every request 200 with `body`, ignoring Range (python's `http.server`, as a dataset host). */
  static async serving(body: string): Promise<CaptureServer> {
    const res = await fetch(`${inject("emulatorFactoryUrl")}/captures`, { method: "POST", body: JSON.stringify({ body }) });
    return new CaptureServer(((await res.json()) as { url: string }).url);
  }

  /** host:port, as an `AJET_ALLOWED_HOSTS` entry */
  get host(): string {
    return new URL(this.url).host;
  }

  async received(): Promise<Captured[]> {
    return (await fetch(`${this.url}/__captured`)).json();
  }
}

export { countdownSpec } from "../support/specs.ts";

/** The `Authorization` header of the edge pool's API token (vitest.config.ts binds `AJET_API_TOKEN`). */
export function authHeaders(token: string = env.AJET_API_TOKEN ?? ""): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** A request to the Worker's API with the test token (`SELF.fetch` plus `Authorization`). */
export function apiFetch(path: string, init: RequestInit = {}): Promise<Response> {
  return SELF.fetch(`https://edge.test${path}`, { ...init, headers: { ...authHeaders(), ...(init.headers as Record<string, string> | undefined) } });
}

/** `POST /runs` through the Worker (with the test token). @returns the status and JSON body */
export async function postRun(body: unknown): Promise<{ status: number; body: any }> {
  const res = await apiFetch("/runs", { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

/** Creates a run and returns its id and stub. @throws when the API refuses it */
export async function createRun(spec: Record<string, unknown>): Promise<{ runId: string; view: RunView; stub: DurableObjectStub<RolloutScheduler> }> {
  const { status, body } = await postRun(spec);
  if (status !== 201) throw new Error(`POST /runs → ${status}: ${JSON.stringify(body)}`);
  const runId = (body as RunView).runId;
  return { runId, view: body as RunView, stub: stubOf(runId) };
}

export function stubOf(runId: string): DurableObjectStub<RolloutScheduler> {
  return env.SCHEDULER.get(env.SCHEDULER.idFromName(runId));
}

/**
 * One step of the status watcher of the swarm server at `url` (its SwarmServer object's alarm, run now): it polls,
 * bootstraps or checks, and pushes the change to the runs on it. For tests whose faked Date keeps alarms from firing.
 * @returns false when the object had no alarm set (nothing to watch)
 */
export function watchOnce(url: string): Promise<boolean> {
  return runDurableObjectAlarm(env.SWARM_SERVERS.get(env.SWARM_SERVERS.idFromName(normalizeServerUrl(url))));
}

/** The episode rows stored in a run's SQLite, by key. */
export function episodeRows(stub: DurableObjectStub<RolloutScheduler>): Promise<Record<string, EpisodeRow>> {
  return runInDurableObject(stub, (_i, state) => {
    const rows = state.storage.sql.exec<{ row: string }>("SELECT row FROM episodes").toArray().map((r) => JSON.parse(r.row) as EpisodeRow);
    return Object.fromEntries(rows.map((r) => [r.episodeKey, r]));
  });
}

/** Cloudflare Queues limits (toolchain.md, Queues): per message, per `sendBatch` call (bytes and messages). */
export const QUEUE_LIMITS = { messageBytes: 128_000, batchBytes: 256_000, batchMessages: 100 };

/**
 * A Queue that keeps what it is sent (for a fresh scheduler instance built by {@link withFreshInstance}) and, like
 * the platform, refuses a `sendBatch` over the Queues limits (the whole call fails, nothing is sent).
 */
export class CapturingQueue {
  readonly sent: EpisodeMessage[] = [];
  /** bytes of each accepted `sendBatch` call */
  readonly batches: number[] = [];
  async send(body: EpisodeMessage): Promise<void> {
    await this.sendBatch([{ body }]);
  }
  async sendBatch(messages: Iterable<{ body: EpisodeMessage }>): Promise<void> {
    const list = [...messages];
    const sizes = list.map((m) => new TextEncoder().encode(JSON.stringify(m.body)).length);
    const total = sizes.reduce((a, b) => a + b, 0);
    if (list.length > QUEUE_LIMITS.batchMessages) throw new Error(`Queue sendBatch failed: batch message count of ${list.length} exceeds limit of 100`);
    if (Math.max(0, ...sizes) > QUEUE_LIMITS.messageBytes) throw new Error(`Queue sendBatch failed: a message of ${Math.max(...sizes)} bytes exceeds limit of 128000`);
    if (total > QUEUE_LIMITS.batchBytes) throw new Error(`Queue sendBatch failed: batch size of ${total} bytes exceeds limit of 256000`);
    this.batches.push(total);
    for (const m of list) this.sent.push(m.body);
  }
}

/** True once a scheduler instance's constructor has opened its storage (a task lookup answers "no task"). */
async function loaded(s: RolloutScheduler): Promise<boolean> {
  try {
    // a loaded instance answers with a promise (rejected: no such task); an unloaded one throws a TypeError
    void Promise.resolve(s.getTask({ source: "(probe)", taskIndex: 0 })).catch(() => undefined);
    return true;
  } catch (err) {
    return !(err instanceof TypeError);
  }
}

/**
 * Runs `fn` with a NEW RolloutScheduler built over the object's storage (what a deploy reset or an eviction
 * leaves: persisted rows, no memory, BC-51), whose queue is a {@link CapturingQueue}.
 */
export function withFreshInstance<R>(stub: DurableObjectStub<RolloutScheduler>, fn: (fresh: RolloutScheduler, queue: CapturingQueue, state: DurableObjectState) => Promise<R>): Promise<R> {
  return runInDurableObject(stub, async (_instance, state) => {
    const queue = new CapturingQueue();
    const fresh = new RolloutScheduler(state, { ...env, EPISODES: queue as unknown as Queue<EpisodeMessage> });
    // the constructor loads storage under blockConcurrencyWhile, which runs once this callback yields
    for (let i = 0; i < 10 && !(await loaded(fresh)); i++) await new Promise((r) => setTimeout(r, 0));
    return fn(fresh, queue, state);
  });
}

/**
 * A run created and driven only through fresh instances over its storage (see {@link withFreshInstance}): every
 * call rebuilds the scheduler from SQLite, as after a deploy reset (BC-51), and every dispatched message is
 * captured instead of being delivered to the queue consumer. The object's own instance never holds the run in
 * memory, so nothing runs behind the test's back.
 */
export class ControlledRun {
  readonly sent: EpisodeMessage[] = [];
  /** bytes of each accepted `sendBatch` call */
  readonly batches: number[] = [];
  private constructor(readonly runId: string) {}

  /** A new stub each time: stubs from before `abortAllDurableObjects()` are broken. */
  get stub(): DurableObjectStub<RolloutScheduler> {
    return stubOf(this.runId);
  }

  /** Creates the run from a spec (parsed like `POST /runs`) and inline datasets (loaded with the real readers). */
  static async create(specInput: Record<string, unknown>): Promise<ControlledRun> {
    const parsed = parseRunSpec(specInput);
    if (!parsed.success) throw new Error(`bad spec: ${JSON.stringify(parsed.issues)}`);
    const sources: Record<string, SourcePlan> = {};
    const loadReports: Record<string, { accepted: number; rejected: number; namespace: string }> = {};
    const runId = `run-ctl-${crypto.randomUUID().slice(0, 8)}`;
    const run = new ControlledRun(runId);
    for (const d of specInput.datasets as Array<Record<string, unknown>>) {
      const { weight: _w, throttleRatio: _t, ...fields } = d;
      const loaded = await loadDataset(fields as DatasetSpec);
      await run.call((s) => s.stageTasks({ runId, source: String(d.name), start: 0, tasks: loaded.tasks, scope: parsed.data.taskIdScope ?? "run" }));
      sources[String(d.name)] = { type: "stored", count: loaded.tasks.length };
      loadReports[String(d.name)] = { accepted: loaded.report.accepted, rejected: loaded.report.rejected.length, namespace: String(d.name) };
    }
    const created = await run.call((s) => s.create({ runId, spec: parsed.data, sources, loadReports }));
    if (!created.view) throw new Error(`create refused: ${JSON.stringify(created.issues)}`);
    return run;
  }

  /** Calls `fn` on a fresh instance; what it dispatches is appended to {@link sent}. */
  call<R>(fn: (scheduler: RolloutScheduler, state: DurableObjectState) => R | Promise<R>): Promise<R> {
    return withFreshInstance(this.stub, async (fresh, queue, state) => {
      try {
        return await fn(fresh, state);
      } finally {
        this.sent.push(...queue.sent);
        this.batches.push(...queue.batches);
      }
    });
  }

  /** One alarm tick on a fresh instance. */
  tick(): Promise<void> {
    return this.call((s) => s.alarm());
  }

  /** Moves the lease deadlines of `episodeKeys` into the past (instead of waiting for them). */
  expireLeases(episodeKeys: readonly string[]): Promise<void> {
    return this.call((_s, state) => {
      const rows = state.storage.sql.exec<{ episode_key: string; row: string }>("SELECT episode_key, row FROM episodes").toArray();
      for (const { episode_key, row } of rows) {
        const r = JSON.parse(row) as EpisodeRow;
        if (episodeKeys.includes(episode_key) && r.deadlineAtMs !== null) {
          state.storage.sql.exec("UPDATE episodes SET row = ? WHERE episode_key = ?", JSON.stringify({ ...r, deadlineAtMs: 1 }), episode_key);
        }
      }
    });
  }

  /** The stored episode rows by key. */
  rows(): Promise<Record<string, EpisodeRow>> {
    return episodeRows(this.stub);
  }
}

/**
 * Makes the object's SQLite refuse statements starting with `prefix` (as a full or failing database would) while
 * `fn` runs: the `exec` of the object's one SqlStorage is shadowed, then restored.
 */
export async function withFailingWrites<R>(state: DurableObjectState, prefix: string, fn: () => Promise<R>): Promise<R> {
  const sql = state.storage.sql;
  const exec = sql.exec.bind(sql);
  Object.defineProperty(sql, "exec", {
    configurable: true,
    value: (query: string, ...args: unknown[]) => {
      if (query.startsWith(prefix)) throw new Error(`SQLITE_FULL: database or disk is full (${prefix})`);
      return exec(query, ...(args as []));
    },
  });
  try {
    return await fn();
  } finally {
    delete (sql as { exec?: unknown }).exec;
  }
}

/** Delivers `messages` to this Worker's queue handler as one batch; @returns the explicit acks and retries. */
export async function deliver(messages: readonly EpisodeMessage[], attempts = 1, vars: Partial<Env> = {}): Promise<{ acked: string[]; retried: string[] }> {
  const batch = createMessageBatch("ajet-episodes", messages.map((body, i) => ({ id: `m${i}-${attempts}`, timestamp: new Date(), attempts, body })));
  const ctx = createExecutionContext();
  await worker.queue(batch as MessageBatch<unknown>, { ...env, ...vars });
  const result = await getQueueResult(batch, ctx);
  return { acked: result.explicitAcks as string[], retried: result.retryMessages.map((m: { msgId: string }) => m.msgId) };
}

/** Runs a run object's alarm until its run finishes (at most 400 ticks; the alarm also fires by itself, this only makes a test quicker). */
export async function untilFinished(stub: ReturnType<typeof stubOf>): Promise<RunView> {
  let view = (await stub.status()) as unknown as RunView;
  for (let i = 0; i < 400 && view.phase !== "finished"; i++) {
    await runDurableObjectAlarm(stub);
    await new Promise((r) => setTimeout(r, 10));
    view = (await stub.status()) as unknown as RunView;
  }
  return view;
}
