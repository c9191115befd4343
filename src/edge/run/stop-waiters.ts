/**
 * @module edge/run/stop-waiters — the run object's held heartbeats (`RolloutScheduler.episodeHeartbeat` of a running
 * episode, the one way a stop reaches a running function): each running episode's beat is held open until the run
 * starts to stop or its hold ends. In memory only: a reset answers the open RPCs with an error, and the consumers
 * beat again.
 */

import { AbortCause, type EventAck, type HeartbeatAck } from "../../port/index.ts";
import type { RunRow } from "../../scheduler/index.ts";

/** The run stops before its end (stop requested, or failed): running functions are told (ctx.signal). */
export function runIsStopping(run: Pick<RunRow, "stopReason" | "phase"> | undefined): boolean {
  return !!run && (run.stopReason === "stopRequested" || run.stopReason === "failed") && (run.phase === "draining" || run.phase === "finished");
}

/** The longest a heartbeat is held open, ms (the consumer beats again: one subrequest per this much function time at most). */
export const MAX_HOLD_MS = 60_000;

/** What a held beat reads of the run: its phase, why it stops, and the grace its functions get. */
export type WatchedRun = Pick<RunRow, "stopReason" | "phase"> & { config: { timing: { stopGraceSeconds: number } } };

/** The held heartbeats of one Durable Object instance. */
export class StopWaiters {
  /** each held beat's release, with its own stop check (a cut episode, scheduler/over-provision) */
  readonly #waiters = new Map<() => void, (() => boolean) | undefined>();

  /**
   * Holds a running episode's heartbeat answer: at once with `runStopping` when the run is stopping, else when it
   * starts to (see {@link stateChanged}) or after `holdMs` (clamped to {@link MAX_HOLD_MS}); `runStopping.graceMs` is
   * the run's `stopGraceSeconds` in ms. An episode whose window's batch closed (`cut`) is answered the same way at
   * once, with grace 0 and cause `batch_closed`: its function stops and gives its claim back.
   * @param ack the core's answer to the beat (returned as is, with `runStopping` once the run stops)
   * @param run the run's row now (read again once the hold ends)
   * @param cut whether this beat's episode was cut (read again after each decision); omitted: never
   */
  async hold(ack: EventAck, run: () => WatchedRun | undefined, holdMs: number, cut?: () => boolean): Promise<HeartbeatAck> {
    const stopping = (): HeartbeatAck | null => {
      if (cut?.()) return { ...ack, runStopping: { graceMs: 0, cause: AbortCause.batchClosed } };
      const r = run();
      return r && runIsStopping(r) ? { ...ack, runStopping: { graceMs: r.config.timing.stopGraceSeconds * 1000 } } : null;
    };
    const now = stopping();
    if (now || holdMs <= 0) return now ?? ack;
    await this.wait(holdMs, cut);
    return stopping() ?? ack;
  }

  /** After each decision: every held beat is answered once the run is stopping, and each cut episode's beat. */
  stateChanged(run: WatchedRun): void {
    if (runIsStopping(run)) {
      this.releaseAll();
      return;
    }
    for (const [release, cut] of this.#waiters) if (cut?.()) release();
  }

  /**
   * Resolves when {@link releaseAll} is called (or, for a beat with a `cut` check, {@link stateChanged} finds it
   * true) or after `maxWaitMs` (clamped to 0…{@link MAX_HOLD_MS}), whichever comes first. Never rejects.
   */
  async wait(maxWaitMs: number, cut?: () => boolean): Promise<void> {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    this.#waiters.set(release, cut);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([released, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, Math.min(maxWaitMs, MAX_HOLD_MS)))))]);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      this.#waiters.delete(release);
    }
  }

  /** Answers every held beat now (the run is stopping). */
  releaseAll(): void {
    for (const release of this.#waiters.keys()) release();
  }
}
