/**
 * @module runtime/run-function — step 3 of an episode: runs the rollout function with its context, stopped at the
 * local lifetime (BC-24) or before the invocation's wall limit, and turns what it did into the outcome
 * (runtime/outcome). A function that ignores `ctx.signal` is not waited for past the stop; the idle watchdog stops it
 * before the server's idle deadline (BC-23). When the run is stopped (`POST /runs/:id/stop`, or it failed), the
 * episode's stop watch (runtime/stop-watch) fires `ctx.signal` with "run stopped", and the function is cut after the
 * run's grace (`tuning.stopGraceSeconds`).
 */
import type { RolloutFunction, RolloutLogger } from "../sdk/contract.ts";
import { AbortCause, EpisodeAbortError, type EpisodeMessage } from "../port/index.ts";
import { EPISODE_LIFETIME_FACTOR, type Task } from "../protocol/index.ts";
import type { HeldClaim } from "./claims.ts";
import type { FetchLike } from "./limits.ts";
import { decideOutcome, type OutcomeDecision } from "./outcome.ts";
import { createEpisodeStop, StopCause, type EpisodeStop } from "./episode-stop.ts";
import { EPISODE_OVER, type KeyFence } from "./key-fence.ts";
import { createRolloutContext, type RolloutContextDeps } from "./rollout-context.ts";
import { watchRunStop, type StopWatchDeps } from "./stop-watch.ts";
import { startHeartbeat, type HeartbeatDeps } from "./heartbeat.ts";
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
  /** waits between LLM retries and stop-watch asks (ms) */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  random(): number;
  /** the global-fetch fence: the episode keys are routed through their guarded fetch while the function runs */
  keyFence?: KeyFence;
  /** the episode's stop, when the caller fires it too; default a fresh one */
  stop?: EpisodeStop;
  /** the run's stop watch (the scheduler port's `watchStop`) and heartbeat (`episodeHeartbeat`), when the port has them */
  port?: { watchStop?: StopWatchDeps["watchStop"]; episodeHeartbeat?: HeartbeatDeps["beat"] };
  /** the invocation's shared subrequest budget: each stop-watch call and each heartbeat is one subrequest */
  budget?: StopWatchDeps["budget"];
  /** the episode's reserve (its end/abort and reports), which also pays for the last, `quiet`, heartbeat */
  reserve?: HeartbeatDeps["reserve"];
  /** records the function's LLM calls and log lines (the episode's transcript) */
  recorder?: TranscriptRecorder;
  /** `ctx.sandbox` of the attempt (sandbox/attempt) */
  sandbox?: RolloutContextDeps["sandbox"];
}

/**
 * Runs `fn` on `task` with the claims held since `claimedAtMs` (epoch ms) and decides the outcome. Never throws:
 * a throw, a bad result or a stop becomes an abort outcome. One {@link EpisodeStop} fires `ctx.signal` for every
 * reason: the lifetime, the invocation's wall limit, or the idle watchdog (a timer at the earliest local deadline,
 * re-armed on LLM activity, BC-23); when the function is over its keys are closed in the fence.
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
  // the stop reason is the outcome's cause: past the local lifetime (BC-24), out of invocation time, or idle (BC-23)
  const hardStop = stopAtMs >= lifetimeEndsAtMs
    ? { cause: StopCause.lifetime, message: `episode ran past its lifetime, ${EPISODE_LIFETIME_FACTOR} × discardEpisodeTimeoutSeconds = ${EPISODE_LIFETIME_FACTOR * msg.discardEpisodeTimeoutSeconds} s; raise discardEpisodeTimeoutSeconds if episodes need longer` }
    : { cause: StopCause.timeLimit, message: "episode stopped to leave time to report before the invocation's wall limit" };
  const stop = deps.stop ?? createEpisodeStop();
  // `stopped`: the function is no longer waited for (its claims must still be reported): at once for every stop
  // but the run's, which waits out the run's grace after ctx.signal fired
  let graceMs = 0;
  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  const stopped = new Promise<never>((_, reject) => {
    const fire = () => {
      const why = stop.signal.reason;
      if (graceMs > 0) graceTimer = setTimeout(() => reject(why), graceMs);
      else reject(why);
    };
    if (stop.signal.aborted) fire();
    else stop.signal.addEventListener("abort", fire, { once: true });
  });
  stopped.catch(() => undefined);
  // called through the port each time (a Durable Object stub's methods are RPC proxies: never bind or copy them)
  const port = deps.port;
  const stopWatch = port?.watchStop
    ? watchRunStop({ watchStop: (ms) => port.watchStop!(ms), budget: deps.budget, sleep: deps.sleep, log: deps.log }, (grace) => {
        if (stop.signal.aborted) return;
        graceMs = grace;
        stop.stop(StopCause.runStopped, "run stopped");
      })
    : null;
  let givenUp = false;
  // heartbeats while the function runs (runtime/heartbeat): the run notices a dead consumer within seconds; when it
  // answers that it gave up on this attempt, the function is stopped at once
  const heartbeat = port?.episodeHeartbeat && msg.heartbeatSeconds
    ? startHeartbeat(
        { beat: (r) => port.episodeHeartbeat!(r), budget: deps.budget, reserve: deps.reserve, sleep: deps.sleep, log: deps.log },
        { episodeKey: msg.episodeKey, attempt: msg.attempt, dispatchId: msg.dispatchId },
        msg.heartbeatSeconds * 1000,
        (reason) => {
          givenUp = true;
          deps.log.warn("the run gave up on this episode (no heartbeat within its lease); stopping the function", { reason });
          stop.stop(AbortCause.leaseExpired, "the run gave up on this episode: its heartbeat lease expired");
        },
      )
    : null;
  const primary = held[0]!;
  // the watchdog: one timer at the earliest local deadline, re-armed whenever LLM activity changes
  let timer: ReturnType<typeof setTimeout> | null = null;
  let built: ReturnType<typeof createRolloutContext> | undefined;
  const arm = () => {
    if (!built || stop.signal.aborted) return;
    if (timer !== null) clearTimeout(timer);
    const at = built.localDeadlineAtMs();
    if (!Number.isFinite(at)) return; // a call is in flight on every swarm: activity, re-armed when it ends
    const why = built.deadlineStop();
    timer = setTimeout(() => stop.stop(why.cause, why.message), Math.max(0, at - deps.now()));
  };
  built = createRolloutContext(
    {
      fetch: deps.fetch,
      episodes: Object.fromEntries(held.map((h) => [h.swarm, { swarm: h.swarm, episodeUuid: h.episodeUuid, baseUrl: h.episode.baseUrl, apiKey: h.episode.apiKey }])),
      gatewayHeaders: Object.fromEntries(held.map((h) => [h.swarm, deps.gatewayHeaders?.[h.swarm] ?? {}])),
      episodeType: msg.episodeType,
      stop,
      discardEpisodeTimeoutSeconds: msg.discardEpisodeTimeoutSeconds,
      hardStopAtMs: stopAtMs,
      hardStop,
      canContinue: () => primary.client.canContinueEpisode(primary.episodeUuid).catch(() => false),
      log: deps.log,
      secrets: { ...deps.secrets },
      model: msg.model,
      now: deps.now,
      sleep: deps.sleep,
      random: deps.random,
      onActivity: () => arm(),
      ...(deps.keyFence ? { keyFence: deps.keyFence } : {}),
      ...(deps.recorder ? { recorder: deps.recorder } : {}),
      ...(deps.sandbox ? { sandbox: deps.sandbox } : {}),
    },
    claimedAtMs,
  );
  const { ctx, activity } = built;
  arm();
  let result: unknown;
  let error: unknown;
  let threw = false;
  const running = Promise.resolve().then(() => fn.run(task, ctx));
  running.catch(() => undefined); // a function that fails after it was stopped is not an unhandled rejection
  try {
    // a function that ignores ctx.signal is not waited for past the stop (or its grace): its claims must still be reported
    result = await Promise.race([running, stopped]);
  } catch (err) {
    threw = true;
    const reason = stop.reason;
    error = reason ? new EpisodeAbortError(reason.reason, reason.message, { cause: err }) : err;
  } finally {
    if (timer !== null) clearTimeout(timer);
    if (graceTimer !== undefined) clearTimeout(graceTimer);
    stopWatch?.cancel();
    heartbeat?.cancel();
    built.close(); // no request with these keys leaves the runtime any more (BC-23)
    if (!stop.signal.aborted) stop.stop(EPISODE_OVER, "the episode is over");
  }
  const nowMs = deps.now();
  // the run gave up on this attempt and already aborted its claims once (scheduler/leases): whatever the function
  // did, nothing is sent to the server for it — the claims may be another attempt's by now (same client uuid)
  if (givenUp) return { outcome: { kind: "abort", cause: AbortCause.leaseExpired }, action: "none", error };
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
