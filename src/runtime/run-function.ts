/**
 * @module runtime/run-function — step 3 of an episode: runs the rollout function with its context, stopped at the
 * local lifetime (BC-24) or before the invocation's wall limit, and turns what it did into the outcome
 * (runtime/outcome). A function that ignores `ctx.signal` is not waited for past the stop; the idle watchdog stops it
 * before the server's idle deadline (BC-23). When the run is stopped (`POST /runs/:id/stop`, or it failed), the
 * answer to the episode's held heartbeat (runtime/heartbeat, the one stop channel) fires `ctx.signal` with "run
 * stopped", and the function is cut after the run's grace (`tuning.stopGraceSeconds`).
 */
import type { RolloutFunction, RolloutLogger } from "../sdk/contract.ts";
import { AbortCause, EpisodeAbortError, type EpisodeMessage, type HeartbeatReport } from "../port/index.ts";
import { EPISODE_LIFETIME_FACTOR, type Task } from "../protocol/index.ts";
import type { HeldClaim } from "./claims.ts";
import type { FetchLike } from "./limits.ts";
import { decideOutcome, type OutcomeDecision } from "./outcome.ts";
import { createEpisodeStop, type EpisodeStop } from "./episode-stop.ts";
import { EPISODE_OVER, type KeyFence } from "./key-fence.ts";
import { createRolloutContext, type RolloutContextDeps } from "./rollout-context.ts";
import { watchFunction } from "./function-watch.ts";
import type { HeartbeatDeps } from "./heartbeat.ts";
import type { EpisodeMeter } from "./episode-meter.ts";
import type { TranscriptRecorder } from "./transcript.ts";
import { startHandover, type HandoverPlan } from "./handover.ts";

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
  /** waits between LLM retries and heartbeats (ms) */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  random(): number;
  /** the global-fetch fence: the episode keys are routed through their guarded fetch while the function runs */
  keyFence?: KeyFence;
  /** the episode's stop, when the caller fires it too; default a fresh one */
  stop?: EpisodeStop;
  /** the run's heartbeat (the scheduler port's `episodeHeartbeat`; its held answer is the stop channel), when the port has it */
  port?: { episodeHeartbeat?: HeartbeatDeps["beat"] };
  /** the invocation's shared subrequest budget: each heartbeat is one subrequest */
  budget?: HeartbeatDeps["budget"];
  /** the episode's reserve (its end/abort and reports), which also pays for the last, `quiet`, heartbeat */
  reserve?: HeartbeatDeps["reserve"];
  /** records the function's LLM calls and log lines (the episode's transcript) */
  recorder?: TranscriptRecorder;
  /** measures the function's LLM calls (the end report's signals) */
  meter?: EpisodeMeter;
  /** `ctx.sandbox` of the attempt (sandbox/attempt) */
  sandbox?: RolloutContextDeps["sandbox"];
  /**
   * epoch ms of the episode's last LLM activity before this holder (a handover's time); default the claim's: the
   * server counts the claim as activity (spec §5.4)
   */
  activeSinceMs?: number;
  /** the episode's handover to its next holder before this one's wall (runtime/handover); absent: none */
  handover?: HandoverPlan;
}

/**
 * Runs `fn` on `task` with the claims held since `claimedAtMs` (epoch ms) and decides the outcome. Never throws:
 * a throw, a bad result or a stop becomes an abort outcome. One {@link EpisodeStop} fires `ctx.signal` for every
 * reason: the lifetime, the invocation's wall limit, the idle watchdog (BC-23), the run's stop or the run giving up
 * on the attempt; their clocks are the function's watch (runtime/function-watch). When the function is over its keys
 * are closed in the fence.
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
    ? { cause: AbortCause.lifetimeExceeded, message: `episode ran past its lifetime, ${EPISODE_LIFETIME_FACTOR} × discardEpisodeTimeoutSeconds = ${EPISODE_LIFETIME_FACTOR * msg.discardEpisodeTimeoutSeconds} s; raise discardEpisodeTimeoutSeconds if episodes need longer` }
    : { cause: AbortCause.timeLimit, message: "episode stopped to leave time to report before the invocation's wall limit" };
  const stop = deps.stop ?? createEpisodeStop();
  // the clocks around the function (runtime/function-watch): the idle watchdog, the run's grace, the heartbeats
  const watch = watchFunction(stop, deps);
  const built = createRolloutContext(contextDeps(msg, deps, held, stop, { stopAtMs, hardStop, onActivity: () => watch.activity() }), Math.max(claimedAtMs, deps.activeSinceMs ?? claimedAtMs));
  // before the wall the episode moves to its next holder when it can (runtime/handover); the hard stop stays the fallback
  const handover = deps.handover && deps.handover.gateAtMs < stopAtMs ? startHandover(deps.handover, { lastAtMs: stopAtMs, now: deps.now, sleep: deps.sleep, log: deps.log, stopped: () => stop.signal.aborted }) : null;
  watch.watchDeadlines(built);
  const { ctx, activity } = built;
  let result: unknown;
  let error: unknown;
  let threw = false;
  const running = Promise.resolve().then(() => fn.run(task, ctx));
  running.catch(() => undefined); // a function that fails after it was stopped is not an unhandled rejection
  // called through the port each time (a Durable Object stub's methods are RPC proxies: never bind or copy them)
  const port = deps.port;
  if (port?.episodeHeartbeat && msg.heartbeatSeconds) {
    const beatDeps = { beat: (r: HeartbeatReport, o?: { holdMs?: number }) => port.episodeHeartbeat!(r, o), budget: deps.budget, reserve: deps.reserve, sleep: deps.sleep, now: deps.now };
    watch.beat(beatDeps, { episodeKey: msg.episodeKey, attempt: msg.attempt, dispatchId: msg.dispatchId }, msg.heartbeatSeconds * 1000);
  }
  try {
    // a function that ignores ctx.signal is not waited for past the stop (or its grace): its claims must still be reported
    result = await Promise.race(handover ? [running, watch.stopped, handover.handed] : [running, watch.stopped]);
  } catch (err) {
    threw = true;
    const reason = stop.reason;
    error = reason ? new EpisodeAbortError(reason.reason, reason.message, { cause: err }) : err;
  } finally {
    handover?.cancel();
    watch.close();
    built.close(); // no request with these keys leaves the runtime any more (BC-23)
    if (!stop.signal.aborted) stop.stop(EPISODE_OVER, "the episode is over");
  }
  // once the handover began its answer decides: the next holder may run the function, so this one sends nothing more
  const moved = await handover?.settled();
  if (moved) return { outcome: { kind: "abort", cause: AbortCause.aborted }, action: "none", handedOver: moved };
  const nowMs = deps.now();
  // the run gave up on this attempt and already aborted its claims once (scheduler/leases): whatever the function
  // did, nothing is sent to the server for it — the claims may be another attempt's by now (same client uuid)
  if (watch.givenUp) return { outcome: { kind: "abort", cause: AbortCause.leaseExpired }, action: "none", error };
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

/** What the rollout context of this episode is built from (runtime/rollout-context). */
function contextDeps(
  msg: EpisodeMessage,
  deps: FunctionRunDeps,
  held: readonly HeldClaim[],
  stop: EpisodeStop,
  o: { stopAtMs: number; hardStop: { cause: string; message: string }; onActivity(): void },
): Parameters<typeof createRolloutContext>[0] {
  const primary = held[0]!;
  return {
    fetch: deps.fetch,
    episodes: Object.fromEntries(held.map((h) => [h.swarm, { swarm: h.swarm, episodeUuid: h.episodeUuid, baseUrl: h.episode.baseUrl, apiKey: h.episode.apiKey }])),
    gatewayHeaders: Object.fromEntries(held.map((h) => [h.swarm, deps.gatewayHeaders?.[h.swarm] ?? {}])),
    episodeType: msg.episodeType,
    stop,
    discardEpisodeTimeoutSeconds: msg.discardEpisodeTimeoutSeconds,
    hardStopAtMs: o.stopAtMs,
    hardStop: o.hardStop,
    canContinue: () => primary.client.canContinueEpisode(primary.episodeUuid).catch(() => false),
    log: deps.log,
    secrets: { ...deps.secrets },
    model: msg.model,
    now: deps.now,
    sleep: deps.sleep,
    random: deps.random,
    onActivity: o.onActivity,
    ...(deps.keyFence ? { keyFence: deps.keyFence } : {}),
    ...(deps.recorder ? { recorder: deps.recorder } : {}),
    ...(deps.meter ? { meter: deps.meter } : {}),
    ...(deps.sandbox ? { sandbox: deps.sandbox } : {}),
    ...(deps.handover ? { journal: deps.handover.journal } : {}),
  };
}
