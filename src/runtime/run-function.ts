/**
 * @module runtime/run-function — step 3 of an episode: runs the rollout function with its context, stopped at the
 * local lifetime (BC-24) or before the invocation's wall limit, and turns what it did into the outcome
 * (runtime/outcome). A function that ignores `ctx.signal` is not waited for past the stop.
 */
import type { RolloutFunction, RolloutLogger } from "../sdk/contract.ts";
import { AbortCause, EpisodeAbortError, type EpisodeMessage } from "../port/index.ts";
import { EPISODE_LIFETIME_FACTOR, type Task } from "../protocol/index.ts";
import type { HeldClaim } from "./claims.ts";
import type { FetchLike } from "./limits.ts";
import { decideOutcome, type OutcomeDecision } from "./outcome.ts";
import { createRolloutContext } from "./rollout-context.ts";
import type { TranscriptRecorder } from "./transcript.ts";

/** What running a function needs of its invocation (a part of `EpisodeRunnerDeps`). */
export interface FunctionRunDeps {
  /** the guarded fetch (connection limiter, shared budget) the function's LLM and own calls go through */
  fetch: FetchLike;
  now(): number;
  log: RolloutLogger;
  /** the run's secrets (the claim ack's) merged under the operator's: the operator's win */
  secrets: Readonly<Record<string, string>>;
  /** per claimed swarm: the gateway headers its LLM proxy calls carry (protocol/gateway-headers.ts) */
  gatewayHeaders?: Readonly<Record<string, Record<string, string>>>;
  /** epoch ms by which the invocation must be done; the function is stopped `reportReserveMs` before */
  invocationDeadlineAtMs?: number;
  /** time kept for recording, ending and reporting after the function is stopped (ms); default 20 s */
  reportReserveMs?: number;
  /** records the function's LLM calls and log lines (the episode's transcript) */
  recorder?: TranscriptRecorder;
}

/**
 * Runs `fn` on `task` with the claims held since `claimedAtMs` (epoch ms) and decides the outcome. Never throws:
 * a throw, a bad result or a stop becomes an abort outcome.
 */
export async function runFunction(
  fn: RolloutFunction,
  task: Task,
  msg: EpisodeMessage,
  deps: FunctionRunDeps,
  held: HeldClaim[],
  claimedAtMs: number,
): Promise<OutcomeDecision> {
  const lifetimeEndsAtMs = claimedAtMs + EPISODE_LIFETIME_FACTOR * msg.discardEpisodeTimeoutSeconds * 1000;
  const stopAtMs = Math.min(lifetimeEndsAtMs, (deps.invocationDeadlineAtMs ?? Infinity) - (deps.reportReserveMs ?? 20_000));
  const controller = new AbortController();
  // the stop reason is the outcome's cause: past the local lifetime (BC-24) or out of invocation time
  const stopReason = stopAtMs >= lifetimeEndsAtMs
    ? new EpisodeAbortError(AbortCause.lifetimeExceeded, `episode ran past its lifetime, ${EPISODE_LIFETIME_FACTOR} × discardEpisodeTimeoutSeconds = ${EPISODE_LIFETIME_FACTOR * msg.discardEpisodeTimeoutSeconds} s; raise discardEpisodeTimeoutSeconds if episodes need longer`)
    : new EpisodeAbortError(AbortCause.timeLimit, "episode stopped to leave time to report before the invocation's wall limit");
  const timer = setTimeout(() => controller.abort(stopReason), Math.max(0, stopAtMs - deps.now()));
  const stopped = new Promise<never>((_, reject) => controller.signal.addEventListener("abort", () => reject(stopReason), { once: true }));
  const primary = held[0]!;
  const { ctx, activity } = createRolloutContext(
    {
      fetch: deps.fetch,
      episodes: Object.fromEntries(held.map((h) => [h.swarm, { swarm: h.swarm, episodeUuid: h.episodeUuid, baseUrl: h.episode.baseUrl, apiKey: h.episode.apiKey }])),
      gatewayHeaders: Object.fromEntries(held.map((h) => [h.swarm, deps.gatewayHeaders?.[h.swarm] ?? {}])),
      episodeType: msg.episodeType,
      signal: controller.signal,
      canContinue: () => primary.client.canContinueEpisode(primary.episodeUuid).catch(() => false),
      log: deps.log,
      secrets: { ...deps.secrets },
      model: msg.model,
      now: deps.now,
      recorder: deps.recorder,
    },
    claimedAtMs,
  );
  let result: unknown;
  let error: unknown;
  let threw = false;
  const running = Promise.resolve().then(() => fn.run(task, ctx));
  running.catch(() => undefined); // a function that fails after it was stopped is not an unhandled rejection
  try {
    // a function that ignores ctx.signal is not waited for past the stop: its claims must still be reported
    result = await Promise.race([running, stopped]);
  } catch (err) {
    threw = true;
    error = controller.signal.aborted ? new EpisodeAbortError(stopReason.reason, stopReason.message, { cause: err }) : err;
  } finally {
    clearTimeout(timer);
  }
  const nowMs = deps.now();
  return decideOutcome({
    result,
    error,
    threw,
    swarms: held.map((h) => h.swarm),
    activity,
    episodeType: msg.episodeType,
    discardEpisodeTimeoutSeconds: msg.discardEpisodeTimeoutSeconds,
    lifetimeExceeded: nowMs > lifetimeEndsAtMs,
    nowMs,
  });
}
