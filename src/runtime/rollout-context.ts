/**
 * @module runtime/rollout-context — builds the {@link RolloutContext} a rollout function runs with (issue 4 §1):
 * one OpenAI client per claimed swarm episode (`maxRetries: 0`, BC-42) whose fetch is guarded (6 connections,
 * subrequest budget: BC-48/BC-49), checked (BC-38/BC-40/BC-43) and watched (LLM call count and last activity per
 * swarm, for BC-23 and BC-29).
 */
import OpenAI from "openai";
import { SWARM_LLM_TIMEOUT_MS } from "../sdk/chat.ts";
import type { EpisodeEndpoint, RolloutContext, RolloutLogger } from "../sdk/contract.ts";
import { withChatCompletionGuards } from "../sdk/llm-guards.ts";
import { untilBodyDone, type FetchLike } from "./limits.ts";
import type { TranscriptRecorder } from "./transcript.ts";

/** LLM activity of one swarm episode, as the server's idle janitor sees it (spec §5.4). */
export interface LlmActivity {
  /** requests sent to the episode endpoint */
  calls: number;
  /** requests answered with HTTP 2xx (the engine keeps a timeline only for these, BC-29) */
  successfulCalls: number;
  /** epoch ms of the last request start or response body end; the claim counts as activity (spec §5.4) */
  lastActivityAtMs: number;
  /** requests in flight (the proxy refreshes activity while a generation is pending) */
  inFlight: number;
}

/** What {@link createRolloutContext} needs. */
export interface RolloutContextDeps {
  /** the invocation's guarded fetch (limiter + budget) */
  fetch: FetchLike;
  /** claimed episodes by swarm name, in the function's order */
  episodes: Record<string, EpisodeEndpoint>;
  /** per swarm name: the gateway headers sent with every LLM call to its proxy (protocol/gateway-headers.ts) */
  gatewayHeaders?: Record<string, Record<string, string>>;
  episodeType: "train" | "eval";
  signal: AbortSignal;
  canContinue(): Promise<boolean>;
  log: RolloutLogger;
  secrets: Record<string, string>;
  model: string;
  /** epoch ms clock */
  now(): number;
  /** per-call LLM timeout (ms); default 330 s, a little above the proxy's ~300 s give-up (BC-42) */
  llmTimeoutMs?: number;
  /** records the LLM calls and `ctx.log` lines for the episode's transcript (runtime/transcript) */
  recorder?: TranscriptRecorder;
}

/** A context plus the activity the runtime reads after the function returns. */
export interface BuiltRolloutContext {
  ctx: RolloutContext;
  activity: Record<string, LlmActivity>;
}

/**
 * Wraps `fetch` so requests and responses of one swarm episode update its {@link LlmActivity}. A call is in flight
 * until its body ends: a streamed answer stays open while the model generates, and the proxy counts that time as
 * activity (spec §5.4), so it is never idle time (BC-23).
 */
function watchActivity(inner: FetchLike, activity: LlmActivity, now: () => number): FetchLike {
  return async (input, init) => {
    activity.calls++;
    activity.inFlight++;
    activity.lastActivityAtMs = now();
    const res = await untilBodyDone(
      () => inner(input, init),
      () => {
        activity.inFlight--;
        activity.lastActivityAtMs = now();
      },
    );
    if (res.ok) activity.successfulCalls++;
    return res;
  };
}

/** Aborts each request when the episode's signal fires, on top of the SDK's own per-call signal. */
function followSignal(inner: FetchLike, episodeSignal: AbortSignal): FetchLike {
  return (input, init) => {
    const signal = init?.signal ? AbortSignal.any([init.signal, episodeSignal]) : episodeSignal;
    return inner(input, { ...init, signal });
  };
}

/**
 * Builds the function's context. Every OpenAI client talks only through `deps.fetch` (so the platform guards
 * hold) and never retries (a retried call is a new, duplicated training turn, BC-42).
 * @param claimedAtMs epoch ms of the claim: the server counts the claim as activity (spec §5.4)
 */
export function createRolloutContext(deps: RolloutContextDeps, claimedAtMs: number): BuiltRolloutContext {
  const activity: Record<string, LlmActivity> = {};
  const openai: Record<string, OpenAI> = {};
  for (const [swarm, ep] of Object.entries(deps.episodes)) {
    const act: LlmActivity = { calls: 0, successfulCalls: 0, lastActivityAtMs: claimedAtMs, inFlight: 0 };
    activity[swarm] = act;
    const watched = watchActivity(deps.fetch, act, deps.now);
    deps.recorder?.redact(ep.apiKey);
    const fetch = withChatCompletionGuards(followSignal(deps.recorder ? deps.recorder.watchLlm(swarm, watched) : watched, deps.signal));
    openai[swarm] = new OpenAI({
      baseURL: ep.baseUrl,
      apiKey: ep.apiKey,
      defaultHeaders: deps.gatewayHeaders?.[swarm] ?? {},
      maxRetries: 0,
      timeout: deps.llmTimeoutMs ?? SWARM_LLM_TIMEOUT_MS,
      fetch: fetch as unknown as typeof globalThis.fetch,
    });
  }
  const first = Object.values(openai)[0];
  if (!first) throw new Error("createRolloutContext: no claimed episode");
  const ctx: RolloutContext = {
    openai,
    llm: first,
    episodes: deps.episodes,
    episodeType: deps.episodeType,
    signal: deps.signal,
    canContinue: deps.canContinue,
    fetch: followSignal(deps.fetch, deps.signal),
    log: deps.recorder ? deps.recorder.logger(deps.log) : deps.log,
    secrets: deps.secrets,
    model: deps.model,
  };
  return { ctx, activity };
}

/**
 * True when the server's idle janitor may already have reverted this episode (BC-23): no request in flight and
 * more than `discardEpisodeTimeoutSeconds` since the last activity. The janitor runs every 10 s, so the revert
 * happens somewhere in (timeout, timeout + 10 s]; past the timeout the end is no longer safe to count on.
 */
export function isIdleExpired(act: LlmActivity, discardEpisodeTimeoutSeconds: number, nowMs: number): boolean {
  return act.inFlight === 0 && nowMs - act.lastActivityAtMs > discardEpisodeTimeoutSeconds * 1000;
}
