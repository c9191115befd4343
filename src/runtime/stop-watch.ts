/**
 * @module runtime/stop-watch — how a running function learns that its run was stopped (issue 8 §2): while the
 * function runs, the episode holds ONE open call to the run's scheduler (`watchStop`), answered at once when the run
 * stops, or after at most a minute (then asked again). So a stop reaches `ctx.signal` within milliseconds, and a
 * 10-minute episode spends about ten subrequests on it (BC-49: taken from the invocation's shared budget; an
 * exhausted budget ends the watch, never the episode).
 */
import type { SleepFn } from "../client/index.ts";
import type { StopWatchAnswer } from "../port/index.ts";
import type { RolloutLogger } from "../sdk/contract.ts";

/** What the watch needs. */
export interface StopWatchDeps {
  /** the port's watch: resolves when the run stops or after `maxWaitMs` */
  watchStop(maxWaitMs: number): Promise<StopWatchAnswer>;
  /** one subrequest per call (the invocation's shared budget); throws when exhausted */
  budget?: { take(purpose?: string): void };
  sleep: SleepFn;
  log: RolloutLogger;
}

/** How long one watch call is held open at most, ms. */
export const STOP_WATCH_MS = 60_000;
/** Pause after a failed watch call (a scheduler reset), ms. */
export const STOP_WATCH_RETRY_MS = 1_000;
/** Failed watch calls in a row after which the episode stops watching (its leases still bound it). */
export const STOP_WATCH_MAX_FAILURES = 5;

/**
 * Watches for the run's stop until `cancel()` is called; calls `onStop(graceMs)` once when the run stops.
 * @returns `cancel`, which ends the watch (a call in flight is left to finish; its answer is ignored)
 */
export function watchRunStop(deps: StopWatchDeps, onStop: (graceMs: number) => void): { cancel(): void } {
  let cancelled = false;
  void (async () => {
    let failures = 0;
    while (!cancelled) {
      try {
        deps.budget?.take("stop watch");
      } catch {
        return; // no budget left for watching: the run's leases still bound the episode
      }
      try {
        const answer = await deps.watchStop(STOP_WATCH_MS);
        failures = 0;
        if (cancelled) return;
        if (answer.stopped) return onStop(answer.graceMs);
      } catch (err) {
        if (cancelled) return;
        if (++failures >= STOP_WATCH_MAX_FAILURES) return deps.log.warn("stop watch given up: the scheduler did not answer", { error: String(err) });
        await deps.sleep(STOP_WATCH_RETRY_MS);
      }
    }
  })();
  return {
    cancel() {
      cancelled = true;
    },
  };
}
