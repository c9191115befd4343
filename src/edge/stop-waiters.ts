/**
 * @module edge/stop-waiters — the run object's open stop watches (`RolloutScheduler.watchStop`): each running
 * episode's consumer holds one RPC open until the run starts to stop or a bounded wait ends. In memory only: a reset
 * answers the open RPCs with an error, and the consumers ask again.
 */

import type { RunRow } from "../scheduler/index.ts";

/** The run stops before its end (stop requested, or failed): running functions are told (ctx.signal). */
export function runIsStopping(run: Pick<RunRow, "stopReason" | "phase"> | undefined): boolean {
  return !!run && (run.stopReason === "stopRequested" || run.stopReason === "failed") && (run.phase === "draining" || run.phase === "finished");
}

/** The longest a stop watch is held open, ms (the consumer asks again: one subrequest per this much function time). */
export const MAX_STOP_WATCH_MS = 60_000;

/** The open stop watches of one Durable Object instance. */
export class StopWaiters {
  readonly #waiters = new Set<() => void>();

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
