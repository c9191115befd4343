/**
 * @module sdk/contract — the rollout-function SDK's contract v1 (issue 4 §1): what a file in `functions/` exports
 * and what the runtime hands it. A function is platform-free: it sees a task and a small context, never the
 * Worker, the Durable Object or the swarm protocol.
 */
import type OpenAI from "openai";
import type { AnthropicMessagesClient } from "./anthropic.ts";
import { AbortCause, DEFAULT_SWARM, EpisodeAbortError, serverOfSwarm, type WeightSyncMetrics } from "../port/index.ts";
import type { SampleCollectionMethod, Task, WorkflowOutput } from "../protocol/index.ts";
import type { Sandbox, SandboxOptions } from "../sandbox/types.ts";

// the swarm-name rule lives in the port (the scheduler core reads it too); the SDK's names are unchanged
export { DEFAULT_SWARM, serverOfSwarm };

/** A WorkflowOutput as a function returns it: `reward` must be one finite number (BC-22); the rest is optional. */
export type RolloutOutput = Partial<Omit<WorkflowOutput, "reward">> & { reward: number };

/** The claimed episode on one swarm server (spec §5.3): base URL already rewritten to the server URL (BC-37). */
export interface EpisodeEndpoint {
  /** the swarm's name in the run spec (`"default"` for single-swarm runs) */
  swarm: string;
  /** 32-hex episode id issued by the server */
  episodeUuid: string;
  /** OpenAI-compatible base URL, `<server_url>/v1` */
  baseUrl: string;
  /** per-episode key (`sk-ajet-…`); the only routing information, never share it across episodes */
  apiKey: string;
}

/** Structured logger handed to functions; lines are tagged with the run, task and episode. */
export interface RolloutLogger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/**
 * What `run(task, ctx)` receives (issue 4 §1).
 * - `openai[swarm]`: an OpenAI client on that swarm's claimed episode — chat completions and the Responses API,
 *   plain or streamed — with `maxRetries: 0` (BC-42) and the runtime's guards (key fence, stop signal, connection
 *   limiter, subrequest budget, safe retries, transcripts, the BC-38/BC-40 checks) in its fetch.
 * - `anthropic[swarm]`: the official Anthropic client (Messages API, plain or streamed, tool use) on the same
 *   episode, through the same guards: base URL without `/v1`, the episode key as its API key.
 * - `llm` / `anthropicLlm`: shorthands for the clients of the first (or only) swarm.
 * - `signal`: fires when the episode must stop (run stopped, budget exhausted, idle deadline near).
 * - `canContinue()`: asks the server whether the claim is still valid (spec §3.11); false on any error.
 * - `fetch`: the guarded fetch for the function's own calls (judge, tools).
 * - `secrets`: the run's secrets (for example a judge's base URL, key and model), never logged.
 * - `sandbox()`: the attempt's sandbox (commands, files, a code interpreter), made on the first call; destroyed
 *   by the runtime when the attempt is over. The run must have a `sandbox` block.
 */
export interface RolloutContext {
  openai: Readonly<Record<string, OpenAI>>;
  llm: OpenAI;
  /** the Anthropic Messages client per swarm (sdk/anthropic) */
  anthropic: Readonly<Record<string, AnthropicMessagesClient>>;
  /** the Anthropic Messages client of the first (or only) swarm */
  anthropicLlm: AnthropicMessagesClient;
  episodes: Readonly<Record<string, EpisodeEndpoint>>;
  episodeType: "train" | "eval";
  signal: AbortSignal;
  canContinue(): Promise<boolean>;
  /**
   * fetch for the function's own outbound calls (an LLM judge, a tool API). Use it instead of the global fetch:
   * it shares the invocation's 6 connections and subrequest budget (BC-48, BC-49) and stops with `signal`.
   */
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  log: RolloutLogger;
  secrets: Readonly<Record<string, string>>;
  /** the model name to put in requests; swarm servers ignore it (spec §9.3) */
  model: string;
  /**
   * The attempt's sandbox: made on the first call (the run's ledger records it first, and paces creations), the
   * same one on later calls; destroyed when the attempt is over, never by hand. A failure of the sandbox's
   * infrastructure aborts the attempt (it runs again), whatever the function returns: it is never a reward.
   * @throws SandboxError `disabled` (the run has no `sandbox` block), `config` (unknown instance type, image),
   *   `secret` (a secret the run's `sandbox.secrets` does not name), `infrastructure`, `closed`
   */
  sandbox(options?: SandboxOptions): Promise<Sandbox>;
}

/** One output for a single-swarm function, or one per swarm name for a multi-swarm function (issue 4 §4). */
export type RolloutResult = RolloutOutput | Record<string, RolloutOutput>;

/**
 * Demo data a function may ship, so `ajet-edge dev --function NAME` runs without `--dataset`: task rows in the
 * columns of `kind` (a dataset kind of `src/tasks`), and rows the local emulator's simulated policy can answer
 * (its answer-key formats: `{match, answer, format}`, GSM8K or Countdown rows).
 */
export interface RolloutFunctionDemo {
  kind: "gsm8k" | "math" | "countdown" | "generic";
  rows: readonly Record<string, unknown>[];
  answerKey?: readonly Record<string, unknown>[];
}

/** A rollout function module's default export (issue 4 §1). */
export interface RolloutFunction {
  /** kebab-case, equal to the file name (`math-agent`) */
  readonly name: string;
  /** names of the swarm servers this function needs; default `["default"]` */
  readonly swarms?: readonly string[];
  /** short human description, shown by the CLI */
  readonly description?: string;
  /** optional demo tasks for `ajet-edge dev` without `--dataset` */
  readonly demo?: RolloutFunctionDemo;
  /** true when the function calls `ctx.sandbox()`: `ajet-edge dev` then gives its runs a `sandbox` block and starts the local sandbox server */
  readonly sandbox?: boolean;
  /**
   * the sample-collection method `ajet-edge dev` trains this function in (its job's `swarmModeSampleCollectionMethod`,
   * spec §7.3), e.g. `rollout_until_all_clients_agree_sync_weight` for long agents; default the tasks method
   */
  readonly sampleCollectionMethod?: SampleCollectionMethod;
  run(task: Task, ctx: RolloutContext): Promise<RolloutResult>;
  /**
   * optional: called by the run once per server step as the engine enters WEIGHT_SYNCING (train runs), with the step
   * (`global_step`) and the run's share of the batch being trained. Runs in the run's Durable Object, not in an
   * episode: no `ctx`, no secrets. A throw or a call past 10 s is logged and never blocks training.
   */
  onWeightSync?(step: number, metrics: WeightSyncMetrics): Promise<void> | void;
}

/** Identity helper that types `task` and `ctx` (like citty's `defineCommand`). */
export function defineRolloutFunction<F extends RolloutFunction>(fn: F): F {
  return fn;
}

// the error a function throws to abort its episode, and the causes the project names (their home is src/port)
export type { WeightSyncMetrics } from "../port/index.ts";
export { AbortCause, EpisodeAbortError } from "../port/index.ts";

/**
 * The seed's signature (write-swarm-client skill): `run_agent_and_compute_reward(task, base_url, api_key)`.
 * Kept working through {@link fromAgentRun}.
 */
export type SeedAgentRun = (task: Task, baseUrl: string, apiKey: string) => Promise<RolloutOutput>;

/**
 * One-line adapter from a seed-style function to the v1 contract (issue 4 §1). The seed builds its own client
 * from `baseUrl` and `apiKey`; in the Worker the global fetch is fenced by episode key (runtime/key-fence), so its
 * calls still share the episode's guards and stop with it.
 */
export function fromAgentRun(name: string, runAgentAndComputeReward: SeedAgentRun): RolloutFunction {
  return defineRolloutFunction({
    name,
    run: (task, ctx) => {
      const ep = ctx.episodes[DEFAULT_SWARM] ?? Object.values(ctx.episodes)[0];
      if (!ep) throw new EpisodeAbortError(AbortCause.noEpisode, "no claimed episode in context");
      return runAgentAndComputeReward(task, ep.baseUrl, ep.apiKey);
    },
  });
}

/** The swarm names a function needs, defaulting to `["default"]`. */
export function swarmsOf(fn: RolloutFunction): readonly string[] {
  return fn.swarms && fn.swarms.length > 0 ? fn.swarms : [DEFAULT_SWARM];
}

/**
 * Which server each swarm a function needs runs on: by name, except that a single-swarm function (it asks for
 * `"default"`) runs on the run's first server whatever that server is named ({@link serverOfSwarm}).
 * @returns the URL per swarm name the function uses, and the names the run does not provide
 */
export function bindSwarms(
  fn: RolloutFunction,
  runSwarms: ReadonlyArray<{ name: string; url: string }>,
): { urls: Map<string, string>; missing: string[] } {
  const urls = new Map(runSwarms.map((s) => [s.name, s.url]));
  const needed = swarmsOf(fn);
  const fallback = needed.length === 1 && needed[0] === DEFAULT_SWARM ? serverOfSwarm(DEFAULT_SWARM, runSwarms) : undefined;
  if (fallback) urls.set(DEFAULT_SWARM, fallback.url);
  return { urls, missing: needed.filter((s) => !urls.has(s)) };
}
