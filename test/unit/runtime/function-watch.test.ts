/**
 * The clocks around a running function (runtime/function-watch, issue 17), on a hand-driven clock: the idle watchdog
 * fires at the earliest local deadline and is re-armed on activity, a call in flight holds it, the run's stop is
 * waited out for its grace, a stop for any other reason is not, the run giving up stops at once, and close() leaves
 * no timer behind.
 */
import { describe, expect, it } from "vitest";
import type { HeartbeatAck } from "../../../src/port/index.ts";
import { createEpisodeStop } from "../../../src/runtime/episode-stop.ts";
import { watchFunction, type WatchTimers } from "../../../src/runtime/function-watch.ts";

/** Timers on a clock the test moves (`advance`), firing in time order. */
function manualClock() {
  let now = 0;
  let next = 1;
  const pending = new Map<number, { at: number; callback: () => void }>();
  const timers: WatchTimers = {
    set: (callback, ms) => {
      const id = next++;
      pending.set(id, { at: now + ms, callback });
      return id;
    },
    clear: (handle) => void pending.delete(handle as number),
  };
  const advance = (ms: number) => {
    const until = now + ms;
    for (;;) {
      const due = [...pending.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      pending.delete(due[0]);
      now = due[1].at;
      due[1].callback();
    }
    now = until;
  };
  return { timers, advance, now: () => now, pending: () => pending.size };
}

const log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const settled = async (p: Promise<unknown>) => {
  let done: unknown = "pending";
  p.then((v) => (done = v), (e) => (done = e));
  await new Promise((r) => setTimeout(r, 0));
  return done;
};

describe("the function's watch", () => {
  it("the watchdog fires at the earliest local deadline with its cause, and is re-armed when activity moves the deadline", async () => {
    const clock = manualClock();
    const stop = createEpisodeStop();
    const watch = watchFunction(stop, { log, now: clock.now, timers: clock.timers });
    let deadline = 1_000;
    watch.watchDeadlines({ localDeadlineAtMs: () => deadline, deadlineStop: () => ({ cause: "idle_deadline", message: "idle" }) });
    clock.advance(900);
    deadline = 2_000; // an LLM call ended at 900: the idle deadline moves
    watch.activity();
    clock.advance(1_000); // now 1900: not yet
    expect(stop.signal.aborted).toBe(false);
    clock.advance(100);
    expect(stop.reason).toMatchObject({ reason: "idle_deadline", message: "idle" });
    expect(await settled(watch.stopped)).toBe(stop.reason); // not the run's stop: no grace
  });

  it("a call in flight on every swarm holds the watchdog (no deadline), until activity sets one", () => {
    const clock = manualClock();
    const stop = createEpisodeStop();
    const watch = watchFunction(stop, { log, now: clock.now, timers: clock.timers });
    let deadline = Number.POSITIVE_INFINITY;
    watch.watchDeadlines({ localDeadlineAtMs: () => deadline, deadlineStop: () => ({ cause: "idle_deadline", message: "idle" }) });
    expect(clock.pending()).toBe(0);
    clock.advance(1_000_000);
    expect(stop.signal.aborted).toBe(false);
    deadline = clock.now() + 5;
    watch.activity();
    clock.advance(5);
    expect(stop.signal.aborted).toBe(true);
  });

  it("the run's stop (a heartbeat answer) fires ctx.signal at once and cuts the function only after the grace", async () => {
    const clock = manualClock();
    const stop = createEpisodeStop();
    const watch = watchFunction(stop, { log, now: clock.now, timers: clock.timers });
    const answers: HeartbeatAck[] = [{ status: "applied", runStopping: { graceMs: 30_000 } }];
    watch.beat({ beat: async () => answers.shift() ?? { status: "applied" }, sleep: () => new Promise(() => {}), now: clock.now }, { episodeKey: "k", attempt: 1, dispatchId: 1 }, 10_000);
    await new Promise((r) => setTimeout(r, 0));
    expect(stop.reason).toMatchObject({ reason: "run_stopped", message: "run stopped" });
    expect(watch.givenUp).toBe(false);
    clock.advance(29_999);
    expect(await settled(watch.stopped)).toBe("pending");
    clock.advance(1);
    expect(await settled(watch.stopped)).toBe(stop.reason);
    watch.close();
  });

  it("a cut episode (its batch closed on other groups: cause batch_closed, grace 0) is stopped and cut at once with that cause", async () => {
    const clock = manualClock();
    const stop = createEpisodeStop();
    const watch = watchFunction(stop, { log, now: clock.now, timers: clock.timers });
    const answers: HeartbeatAck[] = [{ status: "applied", runStopping: { graceMs: 0, cause: "batch_closed" } }];
    watch.beat({ beat: async () => answers.shift() ?? { status: "applied" }, sleep: () => new Promise(() => {}), now: clock.now }, { episodeKey: "k", attempt: 1, dispatchId: 1 }, 10_000);
    await new Promise((r) => setTimeout(r, 0));
    expect(stop.reason).toMatchObject({ reason: "batch_closed", message: expect.stringMatching(/batch closed on other task groups/) });
    expect(await settled(watch.stopped)).toBe(stop.reason);
    expect(watch.givenUp).toBe(false);
    watch.close();
  });

  it("the run giving up on the attempt stops the function at once (lease_expired) and says so", async () => {
    const stop = createEpisodeStop();
    const clock = manualClock();
    const watch = watchFunction(stop, { log, now: clock.now, timers: clock.timers });
    watch.beat({ beat: async () => ({ status: "stale", reason: "attempt 1 was closed" }), sleep: () => new Promise(() => {}), now: clock.now }, { episodeKey: "k", attempt: 1, dispatchId: 1 }, 10_000);
    await new Promise((r) => setTimeout(r, 0));
    expect(watch.givenUp).toBe(true);
    expect(stop.reason).toMatchObject({ reason: "lease_expired" });
    expect(await settled(watch.stopped)).toBe(stop.reason);
  });

  it("close() leaves no timer behind: neither the watchdog nor a grace under way", async () => {
    const clock = manualClock();
    const stop = createEpisodeStop();
    const watch = watchFunction(stop, { log, now: clock.now, timers: clock.timers });
    watch.watchDeadlines({ localDeadlineAtMs: () => 1_000, deadlineStop: () => ({ cause: "idle_deadline", message: "idle" }) });
    expect(clock.pending()).toBe(1);
    watch.close();
    expect(clock.pending()).toBe(0);
    clock.advance(10_000);
    expect(stop.signal.aborted).toBe(false);
  });
});
