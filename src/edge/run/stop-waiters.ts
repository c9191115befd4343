/**
 * @module edge/run/stop-waiters — the run object's open stop watches (`RolloutScheduler.watchStop`): each running
 * episode's consumer holds one RPC open until the run starts to stop or a bounded wait ends. In memory only: a reset
 * answers the open RPCs with an error, and the consumers ask again.
 */

import type { StopWatchAnswer } from "../../port/index.ts";
import type { RunRow } from "../../scheduler/index.ts";

/** The run stops before its end (stop requested, or failed): running functions are told (ctx.signal). */
export function runIsStopping(run: Pick<RunRow, "stopReason" | "phase"> | undefined): boolean {
  return !!run && (run.stopReason === "stopRequested" || run.stopReason === "failed") && (run.phase === "draining" || run.phase === "finished");
}

/** The longest a stop watch is held open, ms (the consumer asks again: one subrequest per this much function time). */
export const MAX_STOP_WATCH_MS = 60_000;

/** What a stop watch reads of the run: its phase, why it stops, and the grace its functions get. */
export type WatchedRun = Pick<RunRow, "stopReason" | "phase"> & { config: { timing: { stopGraceSeconds: number } } };

/** The open stop watches of one Durable Object instance. */
export class StopWaiters {
  readonly #waiters = new Set<() => void>();

  /**
   * One stop watch: answers at once when there is no run or it is stopping, else when it starts to (see
   * {@link stateChanged}) or after `maxWaitMs` with `stopped: false`. `graceMs`: the run's `stopGraceSeconds` (30 s
   * without a run), in ms.
   * @param run the run's row now (read again once the wait ends)
   */
  async watch(run: () => WatchedRun | undefined, maxWaitMs: number): Promise<StopWatchAnswer> {
    const graceMs = (run()?.config.timing.stopGraceSeconds ?? 30) * 1000;
    if (!run() || runIsStopping(run())) return { stopped: true, graceMs };
    await this.wait(maxWaitMs);
    return { stopped: runIsStopping(run()), graceMs };
  }

  /** After each decision: every open watch is answered once the run is stopping. */
  stateChanged(run: WatchedRun): void {
    if (runIsStopping(run)) this.releaseAll();
  }

  /**
   * Resolves when {@link releaseAll} is called or after `maxWaitMs` (clamped to 0…{@link MAX_STOP_WATCH_MS}),
   * whichever comes first. Never rejects.
   */
  async wait(maxWaitMs: number): Promise<void> {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    this.#waiters.add(release);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([released, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, Math.min(maxWaitMs, MAX_STOP_WATCH_MS)))))]);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      this.#waiters.delete(release);
    }
  }

  /** Answers every open watch now (the run is stopping). */
  releaseAll(): void {
    for (const release of this.#waiters) release();
  }
}
