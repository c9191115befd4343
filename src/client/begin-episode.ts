/**
 * @module client/begin-episode — `beginEpisode`'s retry loop (spec §8.3, §7.1, BC-25, BC-31, BC-36): claim until
 * claimed, a deadline or the signal; short jittered back-off on "No available episodes", a status watch (poll until
 * ROLLING) for every not-ready state, offline detection, and no retry of configuration errors.
 */
import { ENGINE, type SwarmThrottlePolicy } from "../protocol/index.ts";
import { isRetryableError } from "./errors.ts";
import { observeStatus, watchEngineStatus, type OfflineTracker, type StatusWatchDeps } from "./status-watch.ts";
import { checkThrottlePolicy, rememberSeenTask, type ThrottlePoolView } from "./throttle.ts";
import { pause, remainingMs, throwIfStopped, withJitter, type WaitOptions } from "./timing.ts";
import type { SwarmRequestOptions } from "./transport.ts";
import type { BeginEpisodeOptions, ClaimedEpisode, ClaimEpisodeOptions, ClaimResult } from "./types.ts";

/** What the loop needs from its client. */
export interface BeginEpisodeDeps extends StatusWatchDeps {
  clientUuid: string;
  /** one claim attempt (`SwarmClient.claimEpisode`) */
  claim(options: ClaimEpisodeOptions): Promise<ClaimResult>;
  /** pool information; the all-defaults object on any failure (spec §7.1: then it never throttles) */
  poolForThrottle(options: SwarmRequestOptions): Promise<ThrottlePoolView>;
  /** default timeout (ms) of one claim, capped by the deadline */
  claimTimeoutMs: number;
  /** serialises throttled claims of one client object (Python `_begin_episode_lock`) */
  runExclusive<T>(fn: () => Promise<T>): Promise<T>;
  /** this client's `recent_seen_tasks` (mutated) */
  recentSeenTasks: string[];
  /** the job check of spec §7.1 step 1; throws SwarmInputError when the job's method does not support throttling */
  assertThrottleSupported(): void;
}

const AWAITED = [ENGINE.ROLLING] as const;
const WHAT = "beginEpisode";

/**
 * Claims one episode, retrying per spec §8.3 with these differences: "No available episodes" backs off from
 * `noEpisodesDelayMs` doubling to `noEpisodesMaxDelayMs` (jittered); a not-ready answer starts a status watch
 * instead of a blind 15 s sleep; 422 (BC-36), other 4xx, protocol and input errors are thrown, not retried; a
 * throttle misconfiguration throws instead of looping (spec §11.14).
 * @throws SwarmServerOfflineError | SwarmDeadlineError | SwarmAbortError | any non-retryable SwarmError
 */
export async function beginEpisodeLoop(deps: BeginEpisodeDeps, options: BeginEpisodeOptions): Promise<ClaimedEpisode> {
  const wait: WaitOptions = { signal: options.signal, deadlineMs: options.deadlineMs };
  const tracker: OfflineTracker = { seenNonOffline: false };
  const { clock, backoff } = deps;
  const jittered = (ms: number) => withJitter(ms, backoff.jitterRatio, clock.random);
  let lastStatus: string | null = null;
  let lastError: unknown;
  let emptyStreak = 0;

  const ensureRolling = async () => {
    const snap = await deps.poll({ signal: wait.signal, timeoutMs: Math.max(1, Math.min(deps.pollTimeoutMs, remainingMs(clock, wait))) });
    lastStatus = snap.status;
    observeStatus(tracker, snap.status, AWAITED);
    if (snap.status === ENGINE.ROLLING) return;
    await watchEngineStatus(deps, AWAITED, { ...wait, tracker, justObserved: snap.status });
    lastStatus = ENGINE.ROLLING;
  };

  const attempt = async (): Promise<ClaimResult | { kind: "throttled"; reason: string }> => {
    const claimOptions: ClaimEpisodeOptions = {
      discardEpisodeTimeoutSeconds: options.discardEpisodeTimeoutSeconds,
      episodeType: options.episodeType,
      throttlePolicy: options.throttlePolicy ?? null,
      signal: wait.signal,
      timeoutMs: Math.max(1, Math.min(deps.claimTimeoutMs, remainingMs(clock, wait))),
    };
    const policy: SwarmThrottlePolicy | null = options.throttlePolicy ?? null;
    if (!policy || (options.episodeType ?? "train") !== "train") return deps.claim(claimOptions);
    return deps.runExclusive(async () => {
      deps.assertThrottleSupported();
      const pool = await deps.poolForThrottle({ signal: wait.signal, timeoutMs: claimOptions.timeoutMs });
      const decision = checkThrottlePolicy(policy, pool, deps.clientUuid, deps.recentSeenTasks);
      if (decision.throttle) return { kind: "throttled" as const, reason: decision.reason };
      rememberSeenTask(deps.recentSeenTasks, policy.current_task_id, policy);
      return deps.claim(claimOptions);
    });
  };

  await ensureRolling();
  for (;;) {
    throwIfStopped(clock, wait, WHAT, lastStatus, lastError);
    let result: Awaited<ReturnType<typeof attempt>>;
    try {
      result = await attempt();
      lastError = undefined;
    } catch (err) {
      if (!isRetryableError(err)) throw err;
      lastError = err;
      throwIfStopped(clock, wait, WHAT, lastStatus, err);
      deps.logger.warn(`Error claiming episode: ${(err as Error).message}. Retrying ...`);
      await pause(clock, jittered(backoff.retryDelayMs), wait, WHAT, lastStatus);
      await ensureRolling();
      continue;
    }
    switch (result.kind) {
      case "claimed":
        return result;
      case "empty":
        tracker.seenNonOffline = true; // "No available episodes" is only answered while ROLLING
        emptyStreak++;
        await pause(clock, jittered(Math.min(backoff.noEpisodesMaxDelayMs, backoff.noEpisodesDelayMs * 2 ** (emptyStreak - 1))), wait, WHAT, lastStatus);
        break;
      case "notReady":
        emptyStreak = 0;
        lastStatus = result.status;
        observeStatus(tracker, result.status, AWAITED);
        await watchEngineStatus(deps, AWAITED, { ...wait, tracker, justObserved: result.status });
        lastStatus = ENGINE.ROLLING;
        break;
      case "throttled":
        deps.logger.info(`Throttle policy is active, delaying episode ... (${result.reason})`);
        await pause(clock, jittered(backoff.throttleDelayMs), wait, WHAT, lastStatus);
        await ensureRolling();
        break;
      case "rejected":
        emptyStreak = 0;
        deps.logger.warn(`Failed to claim episode: ${result.failCause}. Retrying ...`);
        await pause(clock, jittered(backoff.retryDelayMs), wait, WHAT, lastStatus);
        await ensureRolling();
        break;
    }
  }
}
