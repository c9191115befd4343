/**
 * @module client/timing — the client's injectable clock (`now`, `sleep`, `random`), the back-off table and the
 * deadline-aware pause. Tests inject all three, so no unit test waits on real time.
 */
import { SwarmAbortError, SwarmDeadlineError } from "./errors.ts";

/** Sleeps `ms` milliseconds; rejects (any error) when `signal` fires. */
export type SleepFn = (ms: number, signal?: AbortSignal) => Promise<void>;

/** The three time sources a client uses. `now` is epoch milliseconds; `random` is uniform in [0, 1). */
export interface SwarmClock {
  now(): number;
  sleep: SleepFn;
  random(): number;
}

/** A `setTimeout` sleep that rejects with the signal's reason when aborted. Works in workerd and Node. */
export const realSleep: SleepFn = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/** The real clock: `Date.now`, {@link realSleep}, `Math.random`. */
export const realClock: SwarmClock = { now: () => Date.now(), sleep: realSleep, random: () => Math.random() };

/**
 * Delays (milliseconds) of the status watch and of `beginEpisode`'s retry rules (spec §8.2, §8.3, BC-25).
 * Every delay is spread by ±`jitterRatio` so many consumers do not claim in lock-step.
 */
export interface SwarmBackoff {
  /** status watch poll interval while waiting for a status (Python `ENGINE_STATUS_POLL_INTERVAL` = 5 s) */
  statusPollIntervalMs: number;
  /** first delay after "No available episodes to claim" (Python 2 s); doubles per consecutive empty answer */
  noEpisodesDelayMs: number;
  /** cap of the "No available episodes" back-off */
  noEpisodesMaxDelayMs: number;
  /** delay after a throttled attempt (Python `TROTTLE_EPISODE_RETRY_DELAY` = 2 s, BC-31) */
  throttleDelayMs: number;
  /** delay after an unrecognised fail_cause or a retryable error (Python `START_EPISODE_RETRY_DELAY` = 15 s) */
  retryDelayMs: number;
  /** pause after a forced stop before re-checking (Python: 8 s, spec §4.5) */
  restartGraceMs: number;
  /** pause before the single retry when the server cannot be reached (Python: 16 s, spec §4.5) */
  cannotConnectRetryMs: number;
  /** delay between `/agree_sync_weight` attempts after a refusal or an error (Python `AGREE_SYNC_WEIGHT_RETRY_DELAY` = 2 s) */
  agreeRetryMs: number;
  /** jitter as a fraction of the delay: the delay is multiplied by a factor in [1 - j, 1 + j) */
  jitterRatio: number;
}

/** Defaults of {@link SwarmBackoff} (Python client values; no-episodes back-off capped at 10 s). */
export const DEFAULT_BACKOFF: SwarmBackoff = {
  statusPollIntervalMs: 5_000,
  noEpisodesDelayMs: 2_000,
  noEpisodesMaxDelayMs: 10_000,
  throttleDelayMs: 2_000,
  retryDelayMs: 15_000,
  restartGraceMs: 8_000,
  cannotConnectRetryMs: 16_000,
  agreeRetryMs: 2_000,
  jitterRatio: 0.25,
};

/** `delayMs` spread by ±`jitterRatio` using `random()` ∈ [0, 1). */
export function withJitter(delayMs: number, jitterRatio: number, random: () => number): number {
  return Math.max(0, delayMs * (1 - jitterRatio + 2 * jitterRatio * random()));
}

/** Options shared by every multi-step wait: the caller's signal and an absolute deadline (epoch ms, clock `now`). */
export interface WaitOptions {
  signal?: AbortSignal;
  /** give up at this instant (epoch milliseconds of the client's clock); none = wait until the signal fires */
  deadlineMs?: number;
}

/**
 * Sleeps `ms`, but not past `deadlineMs`, and turns an abort into {@link SwarmAbortError}.
 * @throws SwarmDeadlineError when the deadline has already passed (`what`, `lastStatus` name it)
 */
export async function pause(
  clock: SwarmClock,
  ms: number,
  wait: WaitOptions,
  what: string,
  lastStatus: string | null = null,
): Promise<void> {
  throwIfStopped(clock, wait, what, lastStatus);
  const remaining = wait.deadlineMs === undefined ? ms : Math.min(ms, wait.deadlineMs - clock.now());
  try {
    await clock.sleep(Math.max(0, remaining), wait.signal);
  } catch (err) {
    if (wait.signal?.aborted) throw new SwarmAbortError(what, wait.signal.reason);
    throw err;
  }
  if (wait.signal?.aborted) throw new SwarmAbortError(what, wait.signal.reason);
}

/**
 * @throws SwarmAbortError when the signal fired; SwarmDeadlineError when `now >= deadlineMs` (cause: `lastError`).
 */
export function throwIfStopped(
  clock: SwarmClock,
  wait: WaitOptions,
  what: string,
  lastStatus: string | null = null,
  lastError?: unknown,
): void {
  if (wait.signal?.aborted) throw new SwarmAbortError(what, wait.signal.reason);
  if (wait.deadlineMs !== undefined && clock.now() >= wait.deadlineMs) {
    throw new SwarmDeadlineError(what, lastStatus, lastError);
  }
}

/** Milliseconds left before `deadlineMs` (Infinity without a deadline; never negative). */
export function remainingMs(clock: SwarmClock, wait: WaitOptions): number {
  return wait.deadlineMs === undefined ? Infinity : Math.max(0, wait.deadlineMs - clock.now());
}
