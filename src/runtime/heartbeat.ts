/**
 * @module runtime/heartbeat — while a rollout function runs, the episode tells its run it is alive every
 * `heartbeatSeconds` (`SchedulerPort.episodeHeartbeat`, stage `running`), so the run gives up on a consumer that
 * died within its heartbeat lease (seconds) instead of 8 × the discard timeout (scheduler/heartbeats). Each beat is
 * one subrequest from the invocation's shared budget (BC-49: an exhausted budget ends the beats, never the
 * episode). The beats end with one `quiet` beat paid from the episode's reserve, so the run puts the episode back on
 * its run lease instead of giving up on a live consumer when the beats stop. A `stale` or `unknown` answer means the run gave up on this attempt: the
 * function is stopped at once, so it sends nothing more with its keys.
 */
import type { SleepFn } from "../client/index.ts";
import type { EventAck, HeartbeatReport } from "../port/index.ts";
import type { RolloutLogger } from "../sdk/contract.ts";

/** What the beats need. */
export interface HeartbeatDeps {
  /** the port's heartbeat (called through the port each time: a Durable Object stub's methods are RPC proxies) */
  beat(report: HeartbeatReport): Promise<EventAck>;
  /** one subrequest per beat (the invocation's shared budget); throws when exhausted */
  budget?: { take(purpose?: string): void };
  /** the episode's reserve, which pays for the one `quiet` beat sent when the shared budget is exhausted */
  reserve?: { take(): void };
  /** waits `ms` on the injected clock; rejects or resolves early when `signal` aborts */
  sleep: SleepFn;
  log: RolloutLogger;
}

/**
 * Beats every `intervalMs` for `ref` until `cancel()`; calls `onGivenUp(reason)` once when the run answers that it
 * gave up on this attempt. A failed beat is logged and the next one is sent on time (the lease covers two misses).
 * @param intervalMs milliseconds between beats (the message's `heartbeatSeconds` × 1000)
 * @returns `cancel`, which ends the beats (a beat in flight is left to finish; its answer is ignored)
 */
export function startHeartbeat(deps: HeartbeatDeps, ref: Omit<HeartbeatReport, "stage">, intervalMs: number, onGivenUp: (reason: string) => void): { cancel(): void } {
  const stop = new AbortController();
  void (async () => {
    while (!stop.signal.aborted) {
      try {
        await deps.sleep(intervalMs, stop.signal);
      } catch {
        return; // cancelled while waiting
      }
      if (stop.signal.aborted) return;
      try {
        deps.budget?.take("heartbeat");
      } catch {
        // no budget left for beats: the last one says so, and the run lease bounds the episode again
        if (!deps.reserve) return;
        try {
          deps.reserve.take();
          const ack = await deps.beat({ ...ref, stage: "quiet" });
          if (!stop.signal.aborted && (ack.status === "stale" || ack.status === "unknown")) onGivenUp(ack.reason);
        } catch (err) {
          deps.log.warn("the last heartbeat failed; the run may give up on this episode at its heartbeat lease", { error: String(err) });
        }
        return;
      }
      try {
        const ack = await deps.beat({ ...ref, stage: "running" });
        if (stop.signal.aborted) return;
        if (ack.status === "stale" || ack.status === "unknown") return onGivenUp(ack.reason);
      } catch (err) {
        if (stop.signal.aborted) return;
        deps.log.warn("heartbeat failed; the next one goes on time", { error: String(err) });
      }
    }
  })();
  return {
    cancel() {
      stop.abort();
    },
  };
}
