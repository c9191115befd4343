/**
 * @module runtime/episode-stop — the one abort-reason mechanism of an episode: every reason to stop a running
 * rollout function (past the local lifetime, out of invocation time, near the server's idle deadline, the run
 * stopped) fires the same `ctx.signal` with an {@link EpisodeAbortError} whose `reason`, one of the port's abort
 * causes (`lifetimeExceeded`, `timeLimit`, `idleDeadline`, `runStopped`, `leaseExpired`), becomes the outcome's
 * cause. The first stop wins; later ones are ignored.
 *
 * The idle deadline (BC-23): the server's janitor reverts a claimed episode once `discard_episode_timeout` seconds
 * passed since its last LLM activity (checked every 10 s). After the revert another client may claim the same
 * episode, and any request still sent with the old key lands in that client's episode. So the runtime stops the
 * function {@link idleMarginMs} before that deadline, and from then on refuses every request with the key.
 */
import { EpisodeAbortError } from "../port/index.ts";

/**
 * How long before the server's idle deadline the runtime stops a function, milliseconds: 10 % of the discard
 * timeout, at least 1 s and at most 15 s (room for clock skew between the Worker and the server, and for the abort
 * to arrive while the claim is still this run's).
 * @param discardEpisodeTimeoutSeconds the claim's discard timeout, seconds
 */
export function idleMarginMs(discardEpisodeTimeoutSeconds: number): number {
  return Math.min(15_000, Math.max(1_000, discardEpisodeTimeoutSeconds * 100));
}

/** The stop of one episode: its signal and the way to fire it. */
export interface EpisodeStop {
  readonly signal: AbortSignal;
  /** the reason of the first stop, or undefined while running */
  readonly reason: EpisodeAbortError | undefined;
  /** Fires the signal with `EpisodeAbortError(cause, message)` unless it already fired. @returns the winning reason */
  stop(cause: string, message: string): EpisodeAbortError;
}

/** Creates an episode's stop. */
export function createEpisodeStop(): EpisodeStop {
  const controller = new AbortController();
  return {
    signal: controller.signal,
    get reason() {
      return controller.signal.aborted ? (controller.signal.reason as EpisodeAbortError) : undefined;
    },
    stop(cause, message) {
      if (!controller.signal.aborted) controller.abort(new EpisodeAbortError(cause, message));
      return controller.signal.reason as EpisodeAbortError;
    },
  };
}
