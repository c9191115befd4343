/**
 * @module runtime/run-function — step 3 of an episode: runs the rollout function with its context, stopped at the
 * local lifetime (BC-24) or before the invocation's wall limit, and turns what it did into the outcome
 * (runtime/outcome). A function that ignores `ctx.signal` is not waited for past the stop. When the run is stopped
 * (`POST /runs/:id/stop`, or it failed), the episode's stop watch (runtime/stop-watch) fires `ctx.signal` with
 * "run stopped", and the function is cut after the run's grace (`tuning.stopGraceSeconds`).
 */
import type { RolloutFunction, RolloutLogger } from "../sdk/contract.ts";
import { AbortCause, EpisodeAbortError, type EpisodeMessage } from "../port/index.ts";
import { EPISODE_LIFETIME_FACTOR, type Task } from "../protocol/index.ts";
import { realSleep, type SleepFn } from "../client/index.ts";
import type { HeldClaim } from "./claims.ts";
import type { FetchLike } from "./limits.ts";
import { decideOutcome, type OutcomeDecision } from "./outcome.ts";
import { createRolloutContext } from "./rollout-context.ts";
import { watchRunStop, type StopWatchDeps } from "./stop-watch.ts";
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
  /** the run's stop watch (the scheduler port's `watchStop`), when the port has one */
  port?: { watchStop?: StopWatchDeps["watchStop"] };
  /** the invocation's shared subrequest budget: each stop-watch call is one subrequest */
  budget?: StopWatchDeps["budget"];
  sleep?: SleepFn;
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
  // `cut`: the function is no longer waited for (its claims must still be reported). At the lifetime / wall limit
  // the signal fires and the function is cut at once; when the run stops the signal fires with "run stopped" and
  // the function is cut after the run's grace.
  let cutWith!: (reason: EpisodeAbortError) => void;
  const cut = new Promise<never>((_, reject) => (cutWith = reject));
  const timer = setTimeout(() => {
    controller.abort(stopReason);
    cutWith(stopReason);
  }, Math.max(0, stopAtMs - deps.now()));
  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  const runStopped = new EpisodeAbortError(AbortCause.runStopped, "run stopped");
  // called through the port each time (a Durable Object stub's methods are RPC proxies: never bind or copy them)
  const port = deps.port;
  const stopWatch = port?.watchStop
    ? watchRunStop({ watchStop: (ms) => port.watchStop!(ms), budget: deps.budget, sleep: deps.sleep ?? realSleep, log: deps.log }, (graceMs) => {
        if (controller.signal.aborted) return;
        controller.abort(runStopped);
        graceTimer = setTimeout(() => cutWith(runStopped), graceMs);
      })
    : null;
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
    // a function that ignores ctx.signal is not waited for past the stop (or its grace): its claims must still be reported
    result = await Promise.race([running, cut]);
  } catch (err) {
    threw = true;
    const why = controller.signal.aborted ? (controller.signal.reason as EpisodeAbortError) : null;
    error = why ? new EpisodeAbortError(why.reason, why.message, { cause: err }) : err;
  } finally {
    clearTimeout(timer);
    if (graceTimer !== undefined) clearTimeout(graceTimer);
    stopWatch?.cancel();
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
