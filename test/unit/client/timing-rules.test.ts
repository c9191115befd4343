/**
 * The client's time rules (client/timing): the real sleep resolves after its time and never after an abort (it
 * rejects with the signal's reason and leaves no listener behind); jitter spreads a delay over [d(1 − j), d(1 + j));
 * a wait stopped by the caller's signal is a SwarmAbortError whether the signal fires before, during or right after
 * the sleep, and another failure of the sleep is passed on.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { SwarmAbortError, SwarmDeadlineError } from "../../../src/client/errors.ts";
import { pause, realSleep, throwIfStopped, withJitter, type SwarmClock } from "../../../src/client/timing.ts";

afterEach(() => {
  vi.useRealTimers();
});

/** A signal stand-in that records its listeners. */
function recordingSignal() {
  const listeners = new Set<() => void>();
  const added: unknown[] = [];
  const signal = {
    aborted: false,
    reason: undefined as unknown,
    addEventListener: (type: string, fn: () => void, options?: unknown) => {
      added.push({ type, options });
      listeners.add(fn);
    },
    removeEventListener: (type: string, fn: () => void) => {
      if (type === "abort") listeners.delete(fn);
    },
    abort(reason: unknown) {
      this.aborted = true;
      this.reason = reason;
      for (const fn of [...listeners]) fn();
    },
  };
  return { signal, listeners, added };
}

describe("realSleep", () => {
  it("resolves after its time and removes the abort listener it added (once)", async () => {
    vi.useFakeTimers();
    const { signal, listeners, added } = recordingSignal();
    let done = false;
    const sleeping = realSleep(1_000, signal as unknown as AbortSignal).then(() => {
      done = true;
    });
    expect(added).toEqual([{ type: "abort", options: { once: true } }]);
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await sleeping;
    expect(done).toBe(true);
    expect(listeners.size).toBe(0);
  });

  it("works without a signal: it just resolves after its time", async () => {
    vi.useFakeTimers();
    let done = false;
    const sleeping = realSleep(200).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(200);
    await sleeping;
    expect(done).toBe(true);
  });

  it("rejects with the signal's reason when aborted before or during the sleep, and never resolves afterwards", async () => {
    vi.useFakeTimers();
    const before = new AbortController();
    before.abort(new Error("stopped before"));
    await expect(realSleep(1_000, before.signal)).rejects.toThrow("stopped before");

    const during = new AbortController();
    const outcome = realSleep(1_000, during.signal).then(() => "resolved", (e: Error) => e.message);
    await vi.advanceTimersByTimeAsync(500);
    during.abort(new Error("stopped during"));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await outcome).toBe("stopped during");
    expect(vi.getTimerCount()).toBe(0); // its timer was cleared
  });
});

describe("withJitter", () => {
  it("spreads a delay over [d(1 − j), d(1 + j)) by the random draw", () => {
    expect(withJitter(1_000, 0.25, () => 0)).toBe(750);
    expect(withJitter(1_000, 0.25, () => 0.5)).toBe(1_000);
    expect(withJitter(1_000, 0.25, () => 0.75)).toBe(1_125);
    expect(withJitter(1_000, 0, () => 0.9)).toBe(1_000);
  });
});

describe("pause and throwIfStopped", () => {
  const clock = (sleep: SwarmClock["sleep"]): SwarmClock => ({ now: () => 0, sleep, random: () => 0.5 });

  it("a signal already fired stops the wait before it sleeps", () => {
    const c = new AbortController();
    c.abort("bye");
    expect(() => throwIfStopped(clock(async () => {}), { signal: c.signal }, "claim")).toThrow(SwarmAbortError);
    expect(() => throwIfStopped(clock(async () => {}), { deadlineMs: 0 }, "claim", "ENGINE.BOOTING")).toThrow(SwarmDeadlineError);
    expect(() => throwIfStopped(clock(async () => {}), {}, "claim")).not.toThrow();
  });

  it("a sleep that fails because the signal fired is a SwarmAbortError naming the wait; another failure is passed on", async () => {
    const c = new AbortController();
    const aborting = clock(async () => {
      c.abort("bye");
      throw new Error("the sleep's own rejection");
    });
    await expect(pause(aborting, 100, { signal: c.signal }, "waiting for ROLLING")).rejects.toThrow(new SwarmAbortError("waiting for ROLLING"));

    const failing = clock(async () => {
      throw new Error("timer broke");
    });
    await expect(pause(failing, 100, { signal: new AbortController().signal }, "waiting")).rejects.toThrow("timer broke");
    await expect(pause(failing, 100, {}, "waiting")).rejects.toThrow("timer broke"); // no signal at all
  });

  it("a signal that fires while a sleep resolves anyway still stops the wait", async () => {
    const c = new AbortController();
    const ignoring = clock(async () => {
      c.abort("bye"); // a sleep that does not watch the signal
    });
    await expect(pause(ignoring, 100, { signal: c.signal }, "waiting")).rejects.toBeInstanceOf(SwarmAbortError);
  });
});
