/**
 * @module emulator/emulator — `createEmulator`: wires the server state, the simulated engine, the simulated
 * policy, the janitor, the hooks and the hono app into one in-process emulator (issue 2 §5).
 */
import { setMaxListeners } from "node:events";
import type { Hono } from "hono";
import {
  ENGINE,
  type ActiveSwarmClient,
  type CurrentBatchRolloutPoolInformation,
} from "../protocol/index.ts";
import { createSystemClock, type Clock, type TimerHandle } from "./clock.ts";
import { EngineSim, type EngineSimView } from "./engine/engine-sim.ts";
import { faultHooks, type FaultSpec } from "./faults.ts";
import type { EmulatorHooks } from "./hooks.ts";
import { Journal } from "./journal.ts";
import { createApp } from "./http/app.ts";
import type { RequestLogEntry } from "./http/deps.ts";
import { resolveEmulatorConfig, type EmulatorProfile, type EmulatorTimings, type PolicyOptions, type ResolvedEmulatorConfig, type ServerManners, type UpstreamOptions } from "./options.ts";
import { AnswerKeyStore, type AnswerKeyInput } from "./policy/answer-key.ts";
import { SimulatedPolicy, type PolicyView } from "./policy/policy.ts";
import { deriveRng } from "./rng.ts";
import { janitorSweep } from "./server/episodes.ts";
import { readPoolInformation } from "./server/pool.ts";
import { ServerState, type EpisodeRecord, type StatusChange } from "./server/state.ts";
import type { StepLogEntry } from "./step-log.ts";
import type { TrainConfig } from "./train-config.ts";

/** Options of {@link createEmulator}. Durations are milliseconds. */
export interface EmulatorOptions {
  /** Timing profile: `real` (default), `dev` or `fast` (see options.ts PROFILES). */
  profile?: EmulatorProfile;
  /** Individual timing overrides on top of the profile. */
  timings?: Partial<EmulatorTimings>;
  /** Seed of every random choice (episode uuids, pids, completion ids, the policy). Default 0. */
  seed?: number;
  /** Time source; default the system clock. Tests pass `createManualClock()`. */
  clock?: Clock;
  /** false: no simulated engine; an external engine drives the server through the engine-facing routes. Default true. */
  simulateEngine?: boolean;
  /** Initial answer key rows (canonical, raw GSM8K or raw Countdown). */
  answerKey?: readonly AnswerKeyInput[];
  /** Simulated policy knobs. */
  policy?: Partial<PolicyOptions>;
  /** Server behaviours besides timings (default all on, as upstream): reset after a 500, repeated status posts. */
  manners?: Partial<ServerManners>;
  /** Forward chat calls to a real OpenAI-compatible server instead of the simulated policy. */
  upstream?: UpstreamOptions;
  /** `openai_base_url` the engine registers. Default `http://127.0.0.1:10086/v1`; `startEmulator` sets the real port. */
  publicBaseUrl?: string;
  /** Base of the experiment dir strings the server reports. Default the current directory. */
  workDir?: string;
  /** Headers every request must carry with exactly these values, else 401 (a simulated access gateway). */
  requireHeaders?: Record<string, string>;
  /** Initial fault hooks (also settable later on `emulator.hooks`). */
  hooks?: EmulatorHooks;
  /** Faults injected by kind (faults.ts), on top of `hooks`. */
  faults?: FaultSpec[];
  /** Called with each journal event as one JSON line (the CLI's `--journal FILE` appends them). */
  journalSink?: (line: string) => void;
}

/** Read-only view of the server + engine state. */
export interface EmulatorEngineView {
  readonly status: string;
  readonly statusDetail: string | null;
  readonly globalStep: number | null;
  /** Unix seconds, or null. */
  readonly bootingStartTime: number | null;
  /** FIFO of claimable episode uuids. */
  readonly queue: readonly string[];
  /** Active records (registered and claimed), by uuid. */
  readonly records: ReadonlyMap<string, Readonly<EpisodeRecord>>;
  /** Finished train records of the current step. */
  readonly finishedRecords: ReadonlyMap<string, Readonly<EpisodeRecord>>;
  readonly activeClients: readonly Readonly<ActiveSwarmClient>[];
  /** Config parsed at the last `/start_engine`. */
  readonly trainConfig: TrainConfig | null;
  /** Every status change (with the global step at that moment and the time in epoch ms). */
  readonly statusHistory: readonly StatusChange[];
  /** The simulated engine, or null with `simulateEngine: false`. */
  readonly sim: EngineSimView | null;
  /** What `GET /get_current_batch_rollout_pool_information` returns now. */
  poolInformation(): CurrentBatchRolloutPoolInformation;
}

/** The answer key of the simulated policy. */
export interface AnswerKeyApi {
  /** Adds rows; @returns the new size. @throws Error naming the bad row. */
  add(rows: readonly AnswerKeyInput[]): number;
  /** Replaces all rows; @returns the new size. */
  replace(rows: readonly AnswerKeyInput[]): number;
  readonly size: number;
}

/** An in-process emulator. */
export interface Emulator {
  /** The hono app; `app.fetch(request)` serves every route without a socket. */
  readonly app: Hono;
  readonly engine: EmulatorEngineView;
  /** Per global step: train episodes accepted by `/end_episode` and completed task ids. */
  readonly stepLog: readonly StepLogEntry[];
  /** Fault injection points; assign fields at any time. */
  readonly hooks: EmulatorHooks;
  /** Every request received, in order: `{method, path, atMs}` (e.g. how many `/start_engine` calls were made). */
  readonly requestLog: readonly RequestLogEntry[];
  /** What the server did (claims, accepted ends, aborts, reverts, status changes, injected faults). */
  readonly journal: Journal;
  readonly answerKey: AnswerKeyApi;
  /** The simulated policy's accuracy and learning history. */
  readonly policy: PolicyView;
  readonly clock: Clock;
  /** Resolved configuration (profile timings with overrides). */
  readonly config: ResolvedEmulatorConfig;
  /** The `openai_base_url` the engine registers (`http://127.0.0.1:<port>/v1`). */
  readonly publicBaseUrl: string;
  /** Sets the `openai_base_url` the engine registers from now on. */
  setPublicBaseUrl(url: string): void;
  /** Stops every timer (janitor, engine) and every pending LLM generation; the app still answers but nothing moves by itself. */
  close(): void;
}

/** Creates an in-process emulator. @throws Error naming a bad option. */
export function createEmulator(options: EmulatorOptions = {}): Emulator {
  const { clock: clockOption, answerKey: answerKeyRows, hooks: hooksOption, journalSink, ...plain } = options;
  const config = resolveEmulatorConfig(plain);
  const clock = clockOption ?? createSystemClock();
  const journal = new Journal(journalSink);
  journal.add({ ev: "boot", atMs: clock.nowMs(), pid: typeof process === "undefined" ? null : process.pid });
  // the named faults wrap the given hooks; records read lazily (the state is built below)
  let discardMsOf = (_uuid: string) => 0;
  const hooks: EmulatorHooks = config.faults.length
    ? faultHooks(config.faults, deriveRng(config.seed, "faults"), { ...hooksOption }, (kind, path, episodeUuid) => journal.add({ ev: "fault", atMs: clock.nowMs(), kind, path, ...(episodeUuid ? { episodeUuid } : {}) }), (uuid) => discardMsOf(uuid), () => clock.nowMs(), () => state.engineStatus)
    : { ...hooksOption };
  const answerKey = new AnswerKeyStore();
  if (answerKeyRows) answerKey.add(answerKeyRows);
  const policy = new SimulatedPolicy(config.policy, config.seed, answerKey, config.timings.llmLatency);
  let publicBaseUrl = config.publicBaseUrl;
  const state = new ServerState(clock, { deliverResult: async () => {}, resetEpisode: async () => {} });
  const engine = config.simulateEngine
    ? new EngineSim(state, clock, config.timings, deriveRng(config.seed, "episode-ids"), () => publicBaseUrl, config.manners.repeatStatusPosts)
    : null;
  if (engine) state.engineLink = engine;
  const serverIds = deriveRng(config.seed, "server-ids");
  discardMsOf = (uuid) => Math.max(0, (state.records.get(uuid)?.discard_episode_timeout ?? 0) * 1000);
  state.statusListeners.push((change) =>
    journal.add({ ev: "status", atMs: change.atMs, run: state.runNumber, from: change.from, to: change.to, globalStep: change.globalStep }),
  );

  // The policy learns at each weight sync from the mean reward of the step it just trained on.
  let lastRollingStep: number | null = null;
  state.statusListeners.push((change) => {
    if (change.to !== ENGINE.ROLLING || change.globalStep === null) return;
    const step = change.globalStep;
    if (step <= 1) policy.reset();
    else if (lastRollingStep !== null && step === lastRollingStep + 1) {
      policy.learn(state.stepLog.find(state.runNumber, lastRollingStep)?.meanReward ?? 0);
    }
    lastRollingStep = step;
  });

  let janitor: TimerHandle | null = null;
  let closed = false;
  const scheduleJanitor = () => {
    if (closed) return;
    janitor = clock.setTimer(() => {
      const claimants = new Map([...state.records.values()].filter((r) => r.episode_status === "claimed").map((r) => [r.episode_uuid, r.client_uuid]));
      void janitorSweep(state, config.timings.activeClientTimeoutMs)
        .then((reverted) => reverted.forEach((uuid) => journal.add({ ev: "revert", atMs: clock.nowMs(), episodeUuid: uuid, clientUuid: claimants.get(uuid) ?? "" })))
        .finally(scheduleJanitor);
    }, config.timings.janitorIntervalMs, { background: true });
  };
  scheduleJanitor();

  const requestLog: RequestLogEntry[] = [];
  const shutdown = new AbortController();
  // every pending generation listens on it (hundreds at once under load): no MaxListenersExceededWarning
  setMaxListeners(0, shutdown.signal);
  const app = createApp({ state, engine, policy, hooks, clock, timings: config.timings, workDir: config.workDir, ids: serverIds, upstream: config.upstream, journal, requireHeaders: config.requireHeaders, requestLog, manners: config.manners, shutdown: shutdown.signal });
  const engineView: EmulatorEngineView = {
    get status() { return state.engineStatus; },
    get statusDetail() { return state.engineStatusDetail; },
    get globalStep() { return state.globalStep; },
    get bootingStartTime() { return state.bootingStartTime; },
    get queue() { return state.queue; },
    get records() { return state.records; },
    get finishedRecords() { return state.finished; },
    get activeClients() { return state.activeClients; },
    get trainConfig() { return state.trainConfig; },
    get statusHistory() { return state.statusHistory; },
    sim: engine,
    poolInformation: () => readPoolInformation(state),
  };
  return {
    app,
    engine: engineView,
    stepLog: state.stepLog.entries,
    hooks,
    requestLog,
    journal,
    answerKey: {
      add: (rows) => answerKey.add(rows),
      replace: (rows) => answerKey.replace(rows),
      get size() { return answerKey.size; },
    },
    policy,
    clock,
    config,
    get publicBaseUrl() {
      return publicBaseUrl;
    },
    setPublicBaseUrl(url) {
      publicBaseUrl = url;
    },
    close() {
      closed = true;
      shutdown.abort(new Error("emulator closed"));
      if (janitor) clock.clearTimer(janitor);
      janitor = null;
      engine?.kill();
    },
  };
}
