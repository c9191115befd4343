/**
 * @module test/unit/runtime/_harness — drives `runEpisode` against in-process emulators (no sockets, manual clock):
 * emulators booted to ROLLING through a SwarmClient, a recording in-memory SchedulerPort with scripted acks, a
 * routing fetch that records every swarm request (per episode uuid) and every open connection, and message and
 * dependency builders. The runner's own clock (`now`) is a fake that tests move by hand.
 */
import { afterEach, expect } from "vitest";
import { SwarmClient } from "../../../src/client/index.ts";
import { createEmulator, createManualClock, type Emulator, type EmulatorOptions, type ManualClock } from "../../../src/emulator/index.ts";
import type { RolloutFunction, RolloutLogger } from "../../../src/sdk/contract.ts";
import type { Task } from "../../../src/protocol/index.ts";
import { AgentJetJob } from "../../../src/job/index.ts";
import type { EpisodeRunnerDeps } from "../../../src/runtime/episode-runner.ts";
import { ConnectionLimiter, SubrequestBudget, type FetchLike } from "../../../src/runtime/limits.ts";
import type { ClaimAck, EpisodeMessage, OutcomeReport, SchedulerPort } from "../../../src/port/index.ts";
import type { ClaimFailed, EpisodeClaimed, EpisodeReported, EventAck } from "../../../src/scheduler/index.ts";
import { advancingFetch } from "../../support/emulator-fetch.ts";

/** The URL of the first emulator; a second one listens (in name only) on the next port. */
export const SWARM_A = "http://127.0.0.1:10086";
export const SWARM_B = "http://127.0.0.1:10087";

// ---- emulators ---------------------------------------------------------------------------------------------------

const open: Emulator[] = [];
afterEach(() => {
  for (const e of open.splice(0)) e.close();
});

/** The training job: `batchSize` tasks × `numRepeat` per step, `maxEnvWorker` worker threads (the project's job builder). */
export function trainingJob(c: { batchSize: number; numRepeat: number; maxEnvWorker: number }): AgentJetJob {
  return new AgentJetJob({ experimentName: "runtime_tests", ...c });
}

/** An emulator (fast profile) on a manual clock, not started. */
export function makeEmulator(options: Omit<EmulatorOptions, "clock" | "profile"> = {}): { emu: Emulator; clock: ManualClock } {
  const clock = createManualClock();
  const emu = createEmulator({ profile: "fast", seed: 7, ...options, clock });
  open.push(emu);
  return { emu, clock };
}

/**
 * Syncs the YAML and starts the engine through a SwarmClient; the client's fetch and sleep advance the manual clock
 * (start_engine waits on it), so nothing waits on real time. Resolves once the engine is ROLLING.
 */
export async function bootToRolling(emu: Emulator, clock: ManualClock, c = { batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }): Promise<void> {
  const client = new SwarmClient({ baseURL: SWARM_A, fetch: advancingFetch(emu, clock), now: () => clock.nowMs(), sleep: (ms) => clock.advance(ms), random: () => 0.5, logger: silentLogger() });
  await client.syncTrainConfig(trainingJob(c));
  const snap = await client.startEngine();
  expect(snap.status).toBe("ENGINE.ROLLING");
  expect(emu.engine.queue.length).toBeGreaterThan(0);
}

/** An emulator booted to ROLLING (capacity `min(batchSize, ceil(maxEnvWorker/numRepeat)) × numRepeat`). */
export async function rollingEmulator(c = { batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, options: Omit<EmulatorOptions, "clock" | "profile"> = {}) {
  const made = makeEmulator(options);
  await bootToRolling(made.emu, made.clock, c);
  return made;
}

// ---- fetch -------------------------------------------------------------------------------------------------------

/** One request a swarm received through {@link SwarmNet}. */
export interface SeenRequest {
  swarm: string;
  path: string;
  body: any;
  status?: number;
}

/**
 * The network of the test: routes each request by origin to its emulator's `app.fetch`, records it, and counts
 * connections as the platform does (open from the call until the response body is read, cancelled or errors).
 * `beforeAnswer` (optional) runs between the emulator's answer and the caller seeing it — a test can throw there to
 * drop the connection after the server acted (BC-26). `yieldTurns` macrotask turns pass before each answer, so
 * concurrent episodes really overlap.
 */
export class SwarmNet {
  readonly requests: SeenRequest[] = [];
  active = 0;
  peak = 0;
  beforeAnswer?: (req: SeenRequest, res: Response) => void | Promise<void>;
  yieldTurns = 0;
  readonly #swarms = new Map<string, { name: string; emu: Emulator }>();

  add(origin: string, name: string, emu: Emulator): this {
    this.#swarms.set(origin, { name, emu });
    return this;
  }

  /** The platform fetch handed to the runner. */
  readonly fetch: FetchLike = async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const target = this.#swarms.get(url.origin);
    if (!target) throw new TypeError(`fetch failed: no swarm at ${url.origin}`);
    const text = request.method === "POST" ? await request.clone().text() : "";
    const seen: SeenRequest = { swarm: target.name, path: url.pathname, body: text ? JSON.parse(text) : undefined };
    this.requests.push(seen);
    this.active++;
    this.peak = Math.max(this.peak, this.active);
    let closed = false;
    const close = () => {
      if (!closed) this.active--;
      closed = true;
    };
    try {
      for (let i = 0; i < this.yieldTurns; i++) await new Promise((r) => setImmediate(r));
      const res = await target.emu.app.fetch(request);
      seen.status = res.status;
      await this.beforeAnswer?.(seen, res);
      if (!res.body) {
        close();
        return res;
      }
      const reader = res.body.getReader();
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { done, value } = await reader.read().catch((err) => (close(), Promise.reject(err)));
          if (done) {
            close();
            controller.close();
          } else controller.enqueue(value);
        },
        cancel(reason) {
          close();
          return reader.cancel(reason);
        },
      });
      return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
    } catch (err) {
      close();
      throw err;
    }
  };

  /** Requests to `path` (e.g. `/end_episode`) about one episode uuid. */
  to(path: string, episodeUuid?: string): SeenRequest[] {
    return this.requests.filter((r) => r.path === path && (episodeUuid === undefined || r.body?.episode_uuid === episodeUuid));
  }

  /** Chat calls made with one episode's key (the key encodes the uuid). */
  chatCalls(): SeenRequest[] {
    return this.requests.filter((r) => r.path.endsWith("/chat/completions"));
  }
}

// ---- scheduler port ----------------------------------------------------------------------------------------------

/** A port call as recorded: the method name and its argument. */
export type PortCall =
  | { method: "episodeClaimed"; report: Omit<EpisodeClaimed, "type"> }
  | { method: "claimFailed"; report: Omit<ClaimFailed, "type"> }
  | { method: "episodeOutcomeRecorded"; report: OutcomeReport }
  | { method: "episodeReported"; report: Omit<EpisodeReported, "type"> }
  | { method: "getTask"; report: { source: string; taskIndex: number } };

/** Scripted answers of the port; default `applied` for everything. */
export interface PortScript {
  episodeClaimed?: (r: Omit<EpisodeClaimed, "type">) => ClaimAck | Promise<ClaimAck>;
  claimFailed?: (r: Omit<ClaimFailed, "type">) => EventAck | Promise<EventAck>;
  episodeOutcomeRecorded?: (r: OutcomeReport) => EventAck | Promise<EventAck>;
  episodeReported?: (r: Omit<EpisodeReported, "type">) => EventAck | Promise<EventAck>;
  tasks?: Record<string, Task>;
}

const APPLIED: EventAck = { status: "applied" };

/** One recorded port method: logs the call, then answers from the script or with `applied`. */
function recorded<R, A>(calls: PortCall[], method: PortCall["method"], scripted: ((r: R) => A | Promise<A>) | undefined): (r: R) => Promise<A> {
  return async (report) => {
    calls.push({ method, report } as PortCall);
    return scripted ? scripted(report) : (APPLIED as A);
  };
}

/** An in-memory SchedulerPort that records every call in order. */
export function recordingPort(script: PortScript = {}): SchedulerPort & { calls: PortCall[] } {
  const calls: PortCall[] = [];
  return {
    calls,
    episodeClaimed: recorded(calls, "episodeClaimed", script.episodeClaimed),
    claimFailed: recorded(calls, "claimFailed", script.claimFailed),
    episodeOutcomeRecorded: recorded(calls, "episodeOutcomeRecorded", script.episodeOutcomeRecorded),
    episodeReported: recorded(calls, "episodeReported", script.episodeReported),
    getTask(ref) {
      calls.push({ method: "getTask", report: ref });
      const task = script.tasks?.[`${ref.source}#${ref.taskIndex}`];
      if (!task) throw new Error(`no task ${ref.source}#${ref.taskIndex}`);
      return task;
    },
  };
}

// ---- messages and deps -------------------------------------------------------------------------------------------

/** A Countdown task the emulator's answer key knows (`nums` combine to `target`). */
export function countdownTask(i: number, target = 24, nums = [2, 3, 4]): Task {
  return { task_id: `countdown:test:${i}`, main_query: "", init_messages: [], env_type: "countdown", metadata: { target, nums } } as Task;
}

/** A queue message for one episode of `task` (attempt 1, dispatch 1, lease one hour from `nowMs`). */
export function episodeMessage(task: Task, overrides: Partial<EpisodeMessage> = {}, nowMs = Date.UTC(2026, 0, 1)): EpisodeMessage {
  return {
    v: 1,
    runId: "run-test",
    episodeKey: `${task.task_id}#0`,
    attempt: 1,
    dispatchId: 1,
    clientUuid: "run-client-uuid",
    functionName: "countdown",
    episodeType: "train",
    swarms: [{ name: "default", url: SWARM_A }],
    discardEpisodeTimeoutSeconds: 60,
    throttlePolicy: null,
    taskId: task.task_id,
    task,
    taskRef: { source: "countdown", taskIndex: 0 },
    leaseDeadlineAtMs: nowMs + 3_600_000,
    model: "agentjet-policy",
    ...overrides,
  };
}

/** A logger that keeps every line. */
export function recordingLogger(): RolloutLogger & { lines: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> } {
  const lines: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, fields });
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** A logger that drops everything. */
export function silentLogger(): RolloutLogger {
  const none = () => undefined;
  return { debug: none, info: none, warn: none, error: none };
}

/** The runner's fake clock: `now()` moves only by `advance(ms)` or by the injected sleep. */
export function fakeTime(startMs = Date.UTC(2026, 0, 1)) {
  const time = {
    nowMs: startMs,
    sleeps: [] as number[],
    now: () => time.nowMs,
    advance: (ms: number) => void (time.nowMs += ms),
    sleep: async (ms: number) => {
      time.sleeps.push(ms);
      time.nowMs += ms;
    },
  };
  return time;
}

/** Runner dependencies over a {@link SwarmNet}; override any field. */
export function runnerDeps(
  net: SwarmNet,
  port: SchedulerPort,
  functions: Record<string, RolloutFunction>,
  overrides: Partial<EpisodeRunnerDeps> = {},
): EpisodeRunnerDeps & { time: ReturnType<typeof fakeTime> } {
  const time = fakeTime();
  return {
    port,
    functions,
    fetch: net.fetch,
    limiter: new ConnectionLimiter(),
    budget: new SubrequestBudget(1000),
    now: time.now,
    sleep: time.sleep,
    random: () => 0.5,
    log: silentLogger(),
    secrets: {},
    time,
    ...overrides,
  };
}

/** The names of the port methods called, in order. */
export const methodsOf = (calls: readonly PortCall[]) => calls.map((c) => c.method);
