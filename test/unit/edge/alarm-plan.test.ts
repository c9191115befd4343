/** @module test/unit/edge/alarm-plan — the run object's alarm arming rule (pure: time is an input) and RunAlarm, which writes it. */
import { describe, expect, it } from "vitest";
import { FAILED_TICK_ALARM_MS, IDLE_ALARM_MS, planAlarm, RunAlarm } from "../../../src/edge/run/alarm-plan.ts";
import { initialState, RunSpec } from "../../../src/scheduler/index.ts";
import { specInput } from "../scheduler/harness.ts";

const nowMs = 1_000_000;

describe("planAlarm", () => {
  it("an active run with nothing scheduled still wakes within the idle interval", () => {
    expect(planAlarm({ finished: false, wakeAtMs: null, armedAtMs: null, nowMs })).toEqual({ kind: "set", atMs: nowMs + IDLE_ALARM_MS });
  });

  it("an active run wakes at the core's wake-up when it is sooner, never in the past", () => {
    expect(planAlarm({ finished: false, wakeAtMs: nowMs + 1_200, armedAtMs: null, nowMs })).toEqual({ kind: "set", atMs: nowMs + 1_200 });
    expect(planAlarm({ finished: false, wakeAtMs: nowMs - 500, armedAtMs: null, nowMs })).toEqual({ kind: "set", atMs: nowMs });
  });

  it("keeps an alarm already armed in the future no later than wanted, and moves one armed later", () => {
    expect(planAlarm({ finished: false, wakeAtMs: nowMs + 3_000, armedAtMs: nowMs + 2_000, nowMs })).toEqual({ kind: "keep" });
    expect(planAlarm({ finished: false, wakeAtMs: nowMs + 1_000, armedAtMs: nowMs + 2_000, nowMs })).toEqual({ kind: "set", atMs: nowMs + 1_000 });
    expect(planAlarm({ finished: false, wakeAtMs: nowMs + 1_000, armedAtMs: nowMs - 1, nowMs })).toEqual({ kind: "set", atMs: nowMs + 1_000 });
  });

  it("a finished run deletes its alarm when nothing is scheduled, and is not held to the idle interval", () => {
    expect(planAlarm({ finished: true, wakeAtMs: null, armedAtMs: nowMs + 100, nowMs })).toEqual({ kind: "delete" });
    expect(planAlarm({ finished: true, wakeAtMs: nowMs + 60_000, armedAtMs: null, nowMs })).toEqual({ kind: "set", atMs: nowMs + 60_000 });
  });
});

describe("RunAlarm", () => {
  /** A storage that records each alarm write. */
  function fakeStorage() {
    const writes: Array<number | "delete"> = [];
    return { writes, setAlarm: async (atMs: number) => void writes.push(atMs), deleteAlarm: async () => void writes.push("delete") };
  }
  const state = initialState(RunSpec.parse(specInput()), { gsm8k: 100 });

  it("writes the planned alarm once and keeps it while it is still ahead; after it fired it writes again", async () => {
    const storage = fakeStorage();
    const alarm = new RunAlarm(storage);
    await alarm.arm(state, false, nowMs);
    await alarm.arm(state, false, nowMs + 1_000);
    expect(storage.writes).toEqual([nowMs + IDLE_ALARM_MS]);
    alarm.fired();
    await alarm.arm(state, false, nowMs + 1_000);
    expect(storage.writes).toEqual([nowMs + IDLE_ALARM_MS, nowMs + 1_000 + IDLE_ALARM_MS]);
  });

  it("wakeNow sets the alarm to now, before one armed later", async () => {
    const storage = fakeStorage();
    const alarm = new RunAlarm(storage);
    await alarm.arm(state, false, nowMs);
    await alarm.arm(state, true, nowMs + 10);
    expect(storage.writes).toEqual([nowMs + IDLE_ALARM_MS, nowMs + 10]);
  });

  it("a finished run keeps waking while a sandbox waits to be destroyed (the sweep's time), and deletes its alarm after", async () => {
    const storage = fakeStorage();
    const alarm = new RunAlarm(storage);
    const finished = { ...state, run: { ...state.run, phase: "finished" as const } };
    await alarm.arm(finished, false, nowMs, nowMs + 2_000);
    await alarm.arm(finished, false, nowMs + 10, null);
    expect(storage.writes).toEqual([nowMs + 2_000, "delete"]);
    // an active run: the sweep's time when it is sooner than the idle interval
    await alarm.arm(state, false, nowMs, nowMs + 1_000);
    expect(storage.writes.at(-1)).toBe(nowMs + 1_000);
  });

  it("after a failing tick the alarm fires again in FAILED_TICK_ALARM_MS, and an arm no later than that keeps it", async () => {
    const storage = fakeStorage();
    const alarm = new RunAlarm(storage);
    await alarm.retrySoon(nowMs);
    await alarm.arm(state, false, nowMs);
    expect(storage.writes).toEqual([nowMs + FAILED_TICK_ALARM_MS]);
  });
});
