/**
 * @module client/status-watch — waits for an engine status by polling `GET /get_engine_status` (spec §4.5
 * `_wait_until_status_change_to`, BC-25): jittered polls, a deadline and a signal, and offline detection (OFFLINE
 * after any non-OFFLINE status → `SwarmServerOfflineError`, spec §11.10).
 */
import { ENGINE, EngineStatus } from "../protocol/index.ts";
import { isRetryableError, SwarmConnectionError, SwarmServerOfflineError } from "./errors.ts";
import { pause, remainingMs, throwIfStopped, withJitter, type SwarmBackoff, type SwarmClock, type WaitOptions } from "./timing.ts";
import type { SwarmRequestOptions } from "./transport.ts";
import { isCannotConnect, type CannotConnectSnapshot, type EngineStatusSnapshot, type SwarmLogger } from "./types.ts";

/** Remembers whether a real non-OFFLINE status has been seen during one logical wait (beginEpisode, startEngine). */
export interface OfflineTracker {
  seenNonOffline: boolean;
}

/**
 * Records an observed status. Pseudo statuses (`ENGINE.CANNOT_CONNECT`, `unknown`) are ignored.
 * @throws SwarmServerOfflineError when `status` is OFFLINE, OFFLINE is not awaited, and a non-OFFLINE status was seen
 */
export function observeStatus(tracker: OfflineTracker, status: string, awaited: readonly string[]): void {
  if (status === ENGINE.OFFLINE) {
    if (tracker.seenNonOffline && !awaited.includes(ENGINE.OFFLINE)) throw new SwarmServerOfflineError(awaited);
  } else if (EngineStatus.safeParse(status).success) {
    tracker.seenNonOffline = true;
  }
}

/** What a status watch needs from its client. */
export interface StatusWatchDeps {
  clock: SwarmClock;
  backoff: SwarmBackoff;
  logger: SwarmLogger;
  /** one status poll that never throws for transport/HTTP errors (only for the caller's abort) */
  poll(options: SwarmRequestOptions): Promise<EngineStatusSnapshot | CannotConnectSnapshot>;
  /** the status endpoint's default timeout (ms), capped by the deadline per poll */
  pollTimeoutMs: number;
}

/** Options of {@link watchEngineStatus}. */
export interface StatusWatchOptions extends WaitOptions {
  /** shared offline tracker (e.g. across a whole beginEpisode); default: a fresh one */
  tracker?: OfflineTracker;
  /** a status the caller just observed (not awaited): the watch sleeps before its first poll */
  justObserved?: string;
}

/**
 * Polls until the engine status is one of `awaited`, sleeping `statusPollIntervalMs` (± jitter) between polls.
 * Failed polls (`ENGINE.CANNOT_CONNECT`) keep the watch going, except a connection error the injected fetch marked
 * `retryable: false`, which is thrown.
 * @returns the snapshot with an awaited status
 * @throws SwarmServerOfflineError (see {@link observeStatus}) | SwarmDeadlineError | SwarmAbortError
 */
export async function watchEngineStatus(
  deps: StatusWatchDeps,
  awaited: readonly string[],
  options: StatusWatchOptions = {},
): Promise<EngineStatusSnapshot> {
  const tracker = options.tracker ?? { seenNonOffline: false };
  const what = `waiting for engine status [${awaited.join(", ")}]`;
  let last: string | null = options.justObserved ?? null;
  let pollNow = options.justObserved === undefined || awaited.includes(options.justObserved);
  for (;;) {
    if (pollNow) {
      throwIfStopped(deps.clock, options, what, last);
      const timeoutMs = Math.min(deps.pollTimeoutMs, remainingMs(deps.clock, options));
      const snap = await deps.poll({ signal: options.signal, timeoutMs: Math.max(1, timeoutMs) });
      if (isCannotConnect(snap)) {
        // An error the injected fetch marked non-retryable (e.g. an exhausted subrequest budget) ends the watch.
        if (snap.error instanceof SwarmConnectionError && !isRetryableError(snap.error)) throw snap.error;
        deps.logger.debug?.(`status poll failed while ${what}: ${snap.error.message}`);
      } else {
        observeStatus(tracker, snap.status, awaited);
        if (awaited.includes(snap.status)) return snap;
        if (snap.status !== last) deps.logger.info(`Engine status is ${snap.status}. ${what}...`);
      }
      last = snap.status;
    }
    pollNow = true;
    await pause(deps.clock, withJitter(deps.backoff.statusPollIntervalMs, deps.backoff.jitterRatio, deps.clock.random), options, what, last);
  }
}
