/**
 * The run object's held heartbeats (edge/run/stop-waiters): a run's stop answers every held beat with its grace; an
 * episode cut by over-provisioning (its batch closed on other groups) is answered alone, at once, with grace 0 and
 * cause `batch_closed`, and the other held beats stay held.
 */
import { describe, expect, it } from "vitest";
import { StopWaiters, type WatchedRun } from "../../../src/edge/run/stop-waiters.ts";

const running: WatchedRun = { phase: "running", stopReason: null, config: { timing: { stopGraceSeconds: 30 } } };
const stopping: WatchedRun = { ...running, phase: "draining", stopReason: "stopRequested" };
const APPLIED = { status: "applied" } as const;
const tick = () => new Promise((r) => setTimeout(r, 0));

describe("StopWaiters", () => {
  it("answers a beat of a cut episode at once with grace 0 and cause batch_closed", async () => {
    const w = new StopWaiters();
    expect(await w.hold(APPLIED, () => running, 60_000, () => true)).toEqual({ status: "applied", runStopping: { graceMs: 0, cause: "batch_closed" } });
  });

  it("releases a held beat once its episode is cut, and only that one", async () => {
    const w = new StopWaiters();
    let cut = false;
    const answers: unknown[] = [];
    void w.hold(APPLIED, () => running, 60_000, () => cut).then((a) => answers.push(["cut", a]));
    void w.hold(APPLIED, () => running, 200, () => false).then((a) => answers.push(["other", a]));
    await tick();
    w.stateChanged(running);
    await tick();
    expect(answers).toEqual([]);
    cut = true;
    w.stateChanged(running);
    await tick();
    expect(answers).toEqual([["cut", { status: "applied", runStopping: { graceMs: 0, cause: "batch_closed" } }]]);
    await new Promise((r) => setTimeout(r, 250));
    expect(answers[1]).toEqual(["other", APPLIED]);
  });

  it("a run's stop answers every held beat with its grace (a beat without a cut check too)", async () => {
    const w = new StopWaiters();
    let run = running;
    const held = [w.hold(APPLIED, () => run, 60_000, () => false), w.hold(APPLIED, () => run, 60_000)];
    await tick();
    run = stopping;
    w.stateChanged(run);
    expect(await Promise.all(held)).toEqual([
      { status: "applied", runStopping: { graceMs: 30_000 } },
      { status: "applied", runStopping: { graceMs: 30_000 } },
    ]);
  });
});
