/**
 * @module runtime/rollout-context — builds the {@link RolloutContext} a rollout function runs with (issue 4 §1):
 * one OpenAI client per claimed swarm episode (`maxRetries: 0`, BC-42) whose fetch is guarded (6 connections,
 * subrequest budget: BC-48/BC-49), checked (BC-38/BC-40/BC-43), watched (LLM call count and last activity per
 * swarm, for BC-23 and BC-29), retried on 429/5xx/resets within the idle budget, and fenced: once the episode's
 * stop fired, or its local deadline (idle or lifetime) passed, no request with its key is sent.
 */
import OpenAI from "openai";
import { episodeAnthropic, type AnthropicMessagesClient } from "../sdk/anthropic.ts";
import { SWARM_LLM_TIMEOUT_MS } from "../sdk/chat.ts";
import type { EpisodeEndpoint, RolloutContext, RolloutLogger } from "../sdk/contract.ts";
import { SANDBOX_DISABLED_MESSAGE, SandboxError, type Sandbox, type SandboxOptions } from "../sandbox/types.ts";
import { withLlmGuards, withTransientRetries } from "../sdk/llm-guards.ts";
import { AbortCause } from "../port/index.ts";
import { idleMarginMs, type EpisodeStop } from "./episode-stop.ts";
import { GhostGuard } from "./ghost-guard.ts";
import type { KeyFence } from "./key-fence.ts";
import { untilBodyDone, type FetchLike } from "./limits.ts";
import type { EpisodeMeter } from "./episode-meter.ts";
import type { CallJournal } from "./call-journal.ts";
import { watchLlm } from "./llm-watch.ts";
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
  /** the episode's stop: fires `ctx.signal`; requests with an episode key are refused once it fired */
  stop: EpisodeStop;
  /** the claim's discard timeout (seconds): the server's idle deadline, BC-23 */
  discardEpisodeTimeoutSeconds: number;
  /** epoch ms past which the function must not run (local lifetime or invocation limit); Infinity for none */
  hardStopAtMs: number;
  /** cause and message of the stop at `hardStopAtMs` */
  hardStop: { cause: string; message: string };
  /** asks the server whether the primary claim is still valid (answered false once the episode stopped) */
  canContinue(): Promise<boolean>;
  log: RolloutLogger;
  secrets: Record<string, string>;
  model: string;
  /** epoch ms clock */
  now(): number;
  /** waits for LLM retries (ms) */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  random(): number;
  /** called whenever an episode's LLM activity changes (the runner re-arms its idle watchdog) */
  onActivity?(): void;
  /** the global-fetch fence; when given, each episode's key is routed through its guarded fetch while it runs */
  keyFence?: KeyFence;
  /** per-call LLM timeout (ms); default {@link SWARM_LLM_TIMEOUT_MS} (the proxy's 3600 s budget plus a margin) */
  llmTimeoutMs?: number;
  /** records the LLM calls and `ctx.log` lines for the episode's transcript (runtime/transcript) */
  recorder?: TranscriptRecorder;
  /** measures each LLM call for the run's learning signals and cost (runtime/episode-meter) */
  meter?: EpisodeMeter;
  /** the episode's call journal (runtime/call-journal): replays an earlier holder's calls, records this one's */
  journal?: CallJournal;
  /** the attempt's sandbox (sandbox/attempt); absent: `ctx.sandbox()` says the run has none */
  sandbox?: (options?: SandboxOptions) => Promise<Sandbox>;
}

/** `ctx.sandbox()` of an attempt without sandboxes. */
const noSandbox = (): Promise<Sandbox> =>
  Promise.reject(new SandboxError("disabled", SANDBOX_DISABLED_MESSAGE));

/** A context plus the activity the runtime reads after the function returns. */
export interface BuiltRolloutContext {
  ctx: RolloutContext;
  activity: Record<string, LlmActivity>;
  /** epoch ms of the earliest local deadline now: the idle deadline of some swarm, or the hard stop */
  localDeadlineAtMs(): number;
  /** the stop the deadline calls for (an abort cause: idle, lifetime or time limit), and its message */
  deadlineStop(): { cause: string; message: string };
  /** closes the episode keys in the fence: later requests with them are refused */
  close(): void;
}

/**
 * Wraps `fetch` so requests and responses of one swarm episode update its {@link LlmActivity}. A call is in flight
 * until its body ends: a streamed answer stays open while the model generates, and the proxy counts that time as
 * activity (spec §5.4), so it is never idle time (BC-23).
 */
function watchActivity(inner: FetchLike, activity: LlmActivity, now: () => number, onChange: () => void = () => undefined): FetchLike {
  return async (input, init) => {
    activity.calls++;
    activity.inFlight++;
    activity.lastActivityAtMs = now();
    onChange();
    const res = await untilBodyDone(
      () => inner(input, init),
      () => {
        activity.inFlight--;
        activity.lastActivityAtMs = now();
        onChange();
      },
    );
    if (res.ok) activity.successfulCalls++;
    return res;
  };
}

/**
 * Aborts each request when the episode's signal fires, on top of the SDK's own per-call signal; refuses (before
 * sending) every request once the episode stopped, or once its local deadline passed (the stop fires then).
 */
function followSignal(inner: FetchLike, stop: EpisodeStop, deadline?: { now(): number; at(): number; stop(): { cause: string; message: string } }): FetchLike {
  return (input, init) => {
    if (!stop.signal.aborted && deadline && deadline.now() >= deadline.at()) {
      const why = deadline.stop();
      stop.stop(why.cause, why.message);
    }
    if (stop.signal.aborted) return Promise.reject(stop.signal.reason);
    const signal = init?.signal ? AbortSignal.any([init.signal, stop.signal]) : stop.signal;
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
  const anthropic: Record<string, AnthropicMessagesClient> = {};
  const margin = idleMarginMs(deps.discardEpisodeTimeoutSeconds);
  const idleDeadline = (act: LlmActivity) => (act.inFlight > 0 ? Infinity : act.lastActivityAtMs + deps.discardEpisodeTimeoutSeconds * 1000 - margin);
  const earliestIdle = () => Math.min(...Object.values(activity).map(idleDeadline));
  const localDeadlineAtMs = () => Math.min(earliestIdle(), deps.hardStopAtMs);
  const deadlineStop = () =>
    deps.hardStopAtMs <= earliestIdle()
      ? deps.hardStop
      : { cause: AbortCause.idleDeadline, message: `no LLM activity for ${deps.discardEpisodeTimeoutSeconds} s less ${margin / 1000} s: the server reverts an idle claim at its discard timeout (BC-23)` };
  const deadline = { now: deps.now, at: localDeadlineAtMs, stop: deadlineStop };
  const closers: Array<() => void> = [];
  // a re-issue of a request still open on the server is refused (a ghost sample, runtime/ghost-guard)
  const ghosts = new GhostGuard({ now: deps.now, stop: (cause, message) => deps.stop.stop(cause, message) });
  for (const [swarm, ep] of Object.entries(deps.episodes)) {
    const act: LlmActivity = { calls: 0, successfulCalls: 0, lastActivityAtMs: claimedAtMs, inFlight: 0 };
    activity[swarm] = act;
    // each attempt is activity; a retry waits only while the idle budget lasts (BC-23, BC-42)
    // the journal (runtime/call-journal) answers a replayed call without sending it, and holds new calls at a handover
    const sendable = deps.journal ? deps.journal.wrap(swarm, deps.fetch) : deps.fetch;
    const retried = withTransientRetries(watchActivity(sendable, act, deps.now, deps.onActivity), {
      now: deps.now,
      sleep: (ms, signal) => deps.sleep(ms, signal ? AbortSignal.any([signal, deps.stop.signal]) : deps.stop.signal),
      random: deps.random,
      retryBefore: localDeadlineAtMs,
      onRetry: (info) => deps.log.warn("LLM call failed transiently; sending it again", { swarm, ...info }),
    });
    deps.recorder?.redact(ep.apiKey);
    const sent = ghosts.wrap(swarm, retried);
    // every LLM route of this swarm's clients goes through this one watch: measured, and recorded when transcripts are on
    const recorder = deps.recorder;
    const recorded = watchLlm(swarm, sent, { now: deps.now, ...(deps.meter ? { meter: deps.meter } : {}), ...(recorder ? { record: (s, body, route) => recorder.record(s, body, route) } : {}) });
    const fetch = withLlmGuards(followSignal(recorded, deps.stop, deadline));
    if (deps.keyFence) closers.push(deps.keyFence.open(ep.apiKey, fetch));
    openai[swarm] = new OpenAI({
      baseURL: ep.baseUrl,
      apiKey: ep.apiKey,
      defaultHeaders: deps.gatewayHeaders?.[swarm] ?? {},
      maxRetries: 0,
      timeout: deps.llmTimeoutMs ?? SWARM_LLM_TIMEOUT_MS,
      fetch: fetch as unknown as typeof globalThis.fetch,
    });
    anthropic[swarm] = episodeAnthropic({ baseUrl: ep.baseUrl, apiKey: ep.apiKey, fetch, timeoutMs: deps.llmTimeoutMs ?? SWARM_LLM_TIMEOUT_MS, headers: deps.gatewayHeaders?.[swarm] });
  }
  const first = Object.values(openai)[0];
  if (!first) throw new Error("createRolloutContext: no claimed episode");
  const stopped = () => {
    if (!deps.stop.signal.aborted && deps.now() >= localDeadlineAtMs()) {
      const why = deadlineStop();
      deps.stop.stop(why.cause, why.message);
    }
    return deps.stop.signal.aborted;
  };
  const ctx: RolloutContext = {
    openai,
    llm: first,
    anthropic,
    anthropicLlm: Object.values(anthropic)[0]!,
    episodes: deps.episodes,
    episodeType: deps.episodeType,
    signal: deps.stop.signal,
    // false without asking once the local deadline passed: the claim may be about to be reverted (BC-23)
    canContinue: async () => (stopped() ? false : deps.canContinue()),
    fetch: followSignal(deps.fetch, deps.stop),
    log: deps.recorder ? deps.recorder.logger(deps.log) : deps.log,
    secrets: deps.secrets,
    model: deps.model,
    sandbox: deps.sandbox ?? noSandbox,
  };
  return { ctx, activity, localDeadlineAtMs, deadlineStop, close: () => closers.splice(0).forEach((c) => c()) };
}

/**
 * True when the server's idle janitor may already have reverted this episode (BC-23): no request in flight and
 * more than `discardEpisodeTimeoutSeconds` since the last activity. The janitor runs every 10 s, so the revert
 * happens somewhere in (timeout, timeout + 10 s]; past the timeout the end is no longer safe to count on.
 */
export function isIdleExpired(act: LlmActivity, discardEpisodeTimeoutSeconds: number, nowMs: number): boolean {
  return act.inFlight === 0 && nowMs - act.lastActivityAtMs > discardEpisodeTimeoutSeconds * 1000;
}
