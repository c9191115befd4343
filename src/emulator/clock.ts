/**
 * @module emulator/clock — the emulator's only source of time: wall-clock milliseconds, cancellable timers and
 * sleeps. `systemClock` uses the real ones; `createManualClock` is a deterministic clock for tests that runs due
 * timers only when the test advances it (no sleeps in unit tests).
 */

/** An opaque timer handle returned by {@link Clock.setTimer}. */
export interface TimerHandle {
  readonly id: number;
}

/** Time source and timer scheduler of the emulator. All durations are milliseconds. */
export interface Clock {
  /** Wall-clock time in epoch milliseconds (the server's `time.time()` is `nowMs() / 1000`). */
  nowMs(): number;
  /**
   * Runs `fn` once after `delayMs` (≥ 0). A `background` timer does not keep a Node process alive (the janitor);
   * every other timer does (a request waiting on a sleep must finish).
   */
  setTimer(fn: () => void, delayMs: number, options?: { background?: boolean }): TimerHandle;
  /** Cancels a timer; unknown or fired handles are ignored. */
  clearTimer(handle: TimerHandle): void;
  /** Resolves after `delayMs`; rejects with the signal's reason when `signal` aborts first. */
  sleep(delayMs: number, signal?: AbortSignal): Promise<void>;
}

function sleepWith(clock: Pick<Clock, "setTimer" | "clearTimer">, delayMs: number, signal?: AbortSignal) {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clock.clearTimer(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimer(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, delayMs);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The real clock: `Date.now()` and Node timers. */
export function createSystemClock(): Clock {
  let next = 1;
  const timers = new Map<number, ReturnType<typeof setTimeout>>();
  const clock: Clock = {
    nowMs: () => Date.now(),
    setTimer(fn, delayMs, options) {
      const id = next++;
      const t = setTimeout(() => {
        timers.delete(id);
        fn();
      }, Math.max(0, delayMs));
      if (options?.background) t.unref?.();
      timers.set(id, t);
      return { id };
    },
    clearTimer(handle) {
      const t = timers.get(handle.id);
      if (t !== undefined) clearTimeout(t);
      timers.delete(handle.id);
    },
    sleep: (delayMs, signal) => sleepWith(clock, delayMs, signal),
  };
  return clock;
}

/** A clock that only moves when told to. */
export interface ManualClock extends Clock {
  /**
   * Moves time forward by `ms`, firing every timer that falls due in order (timers scheduled by callbacks
   * included) and letting pending promise chains settle after each one.
   */
  advance(ms: number): Promise<void>;
  /** Lets pending promise chains settle without moving time. */
  flush(): Promise<void>;
  /** Number of pending timers (for assertions that everything was cancelled). */
  pendingTimers(): number;
}

/** Settles queued microtasks and I/O callbacks a few rounds (enough for chains of awaits inside handlers). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}

/**
 * Creates a deterministic clock starting at `startMs` (epoch ms; default 2026-01-01T00:00:00Z).
 * @example const clock = createManualClock(); const emu = createEmulator({ clock, profile: "fast" });
 *          const res = emu.app.fetch(req); await clock.advance(100); await res;
 */
export function createManualClock(startMs = Date.UTC(2026, 0, 1)): ManualClock {
  let now = startMs;
  let next = 1;
  const timers = new Map<number, { at: number; seq: number; fn: () => void }>();
  const clock: ManualClock = {
    nowMs: () => now,
    setTimer(fn, delayMs) {
      const id = next++;
      timers.set(id, { at: now + Math.max(0, delayMs), seq: id, fn });
      return { id };
    },
    clearTimer(handle) {
      timers.delete(handle.id);
    },
    sleep: (delayMs, signal) => sleepWith(clock, delayMs, signal),
    async advance(ms) {
      const target = now + Math.max(0, ms);
      await settle();
      for (;;) {
        let due: [number, { at: number; seq: number; fn: () => void }] | undefined;
        for (const entry of timers) {
          if (entry[1].at > target) continue;
          if (!due || entry[1].at < due[1].at || (entry[1].at === due[1].at && entry[1].seq < due[1].seq)) due = entry;
        }
        if (!due) break;
        timers.delete(due[0]);
        now = Math.max(now, due[1].at);
        due[1].fn();
        await settle();
      }
      now = target;
      await settle();
    },
    flush: settle,
    pendingTimers: () => timers.size,
  };
  return clock;
}
