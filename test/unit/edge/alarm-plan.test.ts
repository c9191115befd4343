/** @module test/unit/edge/alarm-plan — the run object's alarm arming rule (pure: time is an input). */
import { describe, expect, it } from "vitest";
import { IDLE_ALARM_MS, planAlarm } from "../../../src/edge/alarm-plan.ts";

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
