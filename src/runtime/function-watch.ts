/**
 * @module runtime/function-watch — the clocks around one running rollout function, in one place (issue 17): the
 * idle watchdog (one timer at the earliest local deadline, re-armed on LLM activity, BC-23; the lifetime and the
 * invocation's wall limit are among those deadlines), the grace after the run's stop (the function is waited for
 * `graceMs` after `ctx.signal` fired, then cut), and the heartbeats (runtime/heartbeat: the run's lease and its one
 * stop channel). Every reason fires the episode's one stop (runtime/episode-stop); the watch owns every timer it
 * starts and clears them all in {@link FunctionWatch.close}. Timers and the clock are injectable.
 */
import { AbortCause, type EpisodeAbortError } from "../port/index.ts";
import type { RolloutLogger } from "../sdk/contract.ts";
import type { EpisodeStop } from "./episode-stop.ts";
import { startHeartbeat, type HeartbeatDeps } from "./heartbeat.ts";

/** Timers (default the platform's `setTimeout` / `clearTimeout`). */
export interface WatchTimers {
  set(callback: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const PLATFORM_TIMERS: WatchTimers = { set: (callback, ms) => setTimeout(callback, ms), clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>) };

/** Where the idle watchdog reads its deadline (runtime/rollout-context). */
export interface DeadlineSource {
  /** the earliest local deadline (epoch ms); not finite while a call is in flight on every swarm */
  localDeadlineAtMs(): number;
  /** the stop that deadline means (idle, lifetime or time limit) */
  deadlineStop(): { cause: string; message: string };
}

/** The watch of one running function. */
export interface FunctionWatch {
  /**
   * Rejects with the stop's reason once the function is no longer waited for (its claims must still be reported): at
   * once for every stop but the run's, which waits out the run's grace after `ctx.signal` fired. Never resolves.
   */
  readonly stopped: Promise<never>;
  /** The run gave up on this attempt (a heartbeat answered `stale`/`unknown`): nothing more is sent for it. */
  readonly givenUp: boolean;
  /** Sets the watchdog's deadline source and arms it. */
  watchDeadlines(source: DeadlineSource): void;
  /** LLM activity changed: the watchdog is re-armed at the new earliest deadline. */
  activity(): void;
  /** Starts the heartbeats (once the function was called: a beat answered at once never stops a function that has not begun). */
  beat(deps: Omit<HeartbeatDeps, "log">, ref: Parameters<typeof startHeartbeat>[1], intervalMs: number): void;
  /** Clears every timer and ends the heartbeats. */
  close(): void;
}

/** Watches one running function whose stop is `stop`. */
export function watchFunction(stop: EpisodeStop, deps: { log: RolloutLogger; now(): number; timers?: WatchTimers }): FunctionWatch {
  const timers = deps.timers ?? PLATFORM_TIMERS;
  let graceMs = 0;
  let graceTimer: unknown;
  let watchdog: unknown;
  let source: DeadlineSource | null = null;
  let heartbeat: { cancel(): void } | null = null;
  let givenUp = false;
  const stopped = new Promise<never>((_, reject) => {
    const fire = () => {
      const why = stop.signal.reason as EpisodeAbortError;
      if (graceMs > 0) graceTimer = timers.set(() => reject(why), graceMs);
      else reject(why);
    };
    if (stop.signal.aborted) fire();
    else stop.signal.addEventListener("abort", fire, { once: true });
  });
  stopped.catch(() => undefined);
  const arm = () => {
    if (!source || stop.signal.aborted) return;
    if (watchdog !== undefined) timers.clear(watchdog);
    watchdog = undefined;
    const at = source.localDeadlineAtMs();
    if (!Number.isFinite(at)) return; // a call is in flight on every swarm: activity, re-armed when it ends
    const why = source.deadlineStop();
    watchdog = timers.set(() => stop.stop(why.cause, why.message), Math.max(0, at - deps.now()));
  };
  return {
    stopped,
    get givenUp() {
      return givenUp;
    },
    watchDeadlines(s) {
      source = s;
      arm();
    },
    activity: arm,
    beat(beatDeps, ref, intervalMs) {
      heartbeat = startHeartbeat(
        { ...beatDeps, log: deps.log },
        ref,
        intervalMs,
        (reason) => {
          givenUp = true;
          deps.log.warn("the run gave up on this episode (no heartbeat within its lease); stopping the function", { reason });
          stop.stop(AbortCause.leaseExpired, "the run gave up on this episode: its heartbeat lease expired");
        },
        (grace, cause) => {
          if (stop.signal.aborted) return;
          graceMs = grace;
          if (cause === AbortCause.batchClosed) stop.stop(AbortCause.batchClosed, "the batch closed on other task groups: this episode gives its claim back");
          else stop.stop(AbortCause.runStopped, "run stopped");
        },
      );
    },
    close() {
      if (watchdog !== undefined) timers.clear(watchdog);
      if (graceTimer !== undefined) timers.clear(graceTimer);
      watchdog = graceTimer = undefined;
      heartbeat?.cancel();
    },
  };
}
