/**
 * @module runtime/heartbeat — while a rollout function runs, the episode tells its run it is alive every
 * `heartbeatSeconds` (`SchedulerPort.episodeHeartbeat`, stage `running`), so the run gives up on a consumer that
 * died within its heartbeat lease (seconds) instead of 8 × the discard timeout (scheduler/heartbeats). The beat is
 * also how the run's stop reaches the function, its one stop channel: each beat is held open by the run for up to
 * the interval and answered at once when the run starts to stop (`runStopping`, with the grace the function gets),
 * so a stop reaches `ctx.signal` within milliseconds; the next beat goes when the interval since the last one is
 * over. Each beat is one subrequest from the invocation's shared budget (BC-49: an exhausted budget ends the beats,
 * never the episode); the beats end with one `quiet` beat paid from the episode's reserve, so the run puts the
 * episode back on its run lease instead of giving up on a live consumer when the beats stop. A `stale` or `unknown`
 * answer means the run gave up on this attempt: the function is stopped at once, so it sends nothing more with its keys.
 */
import type { SleepFn } from "../client/index.ts";
import type { HeartbeatAck, HeartbeatReport } from "../port/index.ts";
import type { RolloutLogger } from "../sdk/contract.ts";

/** What the beats need. */
export interface HeartbeatDeps {
  /**
   * the port's heartbeat (called through the port each time: a Durable Object stub's methods are RPC proxies); a
   * `running` beat is held by the run up to `holdMs`
   */
  beat(report: HeartbeatReport, options?: { holdMs?: number }): Promise<HeartbeatAck>;
  /** one subrequest per beat (the invocation's shared budget); throws when exhausted */
  budget?: { take(purpose?: string): void };
  /** the episode's reserve, which pays for the one `quiet` beat sent when the shared budget is exhausted */
  reserve?: { take(): void };
  /** waits `ms` on the injected clock; rejects or resolves early when `signal` aborts */
  sleep: SleepFn;
  /** the clock (epoch ms), to space the beats from the last one's start; default Date.now */
  now?(): number;
  log: RolloutLogger;
}

/**
 * Beats for `ref` until `cancel()`: the first at once, then one every `intervalMs` from the start of the last; each
 * held by the run up to `intervalMs` (the stop channel). A failed beat is logged and the next one goes on time (the
 * lease covers two misses).
 * @param intervalMs milliseconds between beats (the message's `heartbeatSeconds` × 1000)
 * @param onGivenUp the run gave up on this attempt (`stale`/`unknown`): called once, the beats end (stop the function)
 * @param onRunStopping the run is stopping (or this episode's batch closed: `cause` `batch_closed`): `ctx.signal` fires and the function has `graceMs` ms; called once, the
 *   beats go on (they keep the lease during the grace)
 * @returns `cancel`, which ends the beats (a beat in flight is left to finish; its answer is ignored)
 */
export function startHeartbeat(
  deps: HeartbeatDeps,
  ref: Omit<HeartbeatReport, "stage">,
  intervalMs: number,
  onGivenUp: (reason: string) => void,
  onRunStopping?: (graceMs: number, cause?: string) => void,
): { cancel(): void } {
  const stop = new AbortController();
  const now = deps.now ?? Date.now;
  let stopping = false;
  /** @returns false when the beats must end */
  const heard = (ack: HeartbeatAck): boolean => {
    if (stop.signal.aborted) return false;
    if (ack.status === "stale" || ack.status === "unknown") {
      onGivenUp(ack.reason);
      return false;
    }
    if (ack.runStopping && !stopping) {
      stopping = true;
      onRunStopping?.(ack.runStopping.graceMs, ack.runStopping.cause);
    }
    return true;
  };
  void (async () => {
    while (!stop.signal.aborted) {
      const sentAtMs = now();
      try {
        deps.budget?.take("heartbeat");
      } catch {
        return quietBeat(deps, ref, heard); // no budget left for beats: the last one says so
      }
      try {
        if (!heard(await deps.beat({ ...ref, stage: "running" }, { holdMs: intervalMs }))) return;
      } catch (err) {
        if (stop.signal.aborted) return;
        deps.log.warn("heartbeat failed; the next one goes on time", { error: String(err) });
      }
      try {
        await deps.sleep(Math.max(0, sentAtMs + intervalMs - now()), stop.signal);
      } catch {
        return; // cancelled while waiting
      }
    }
  })();
  return {
    cancel() {
      stop.abort();
    },
  };
}

/** The last beat (stage `quiet`, not held), paid from the episode's reserve: the run lease bounds the episode again. */
async function quietBeat(deps: HeartbeatDeps, ref: Omit<HeartbeatReport, "stage">, heard: (ack: HeartbeatAck) => boolean): Promise<void> {
  if (!deps.reserve) return;
  try {
    deps.reserve.take();
    heard(await deps.beat({ ...ref, stage: "quiet" }));
  } catch (err) {
    deps.log.warn("the last heartbeat failed; the run may give up on this episode at its heartbeat lease", { error: String(err) });
  }
}
