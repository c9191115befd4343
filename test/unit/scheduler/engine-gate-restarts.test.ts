/**
 * How the engine view tells a restart (scheduler/engine-gate): a restart wipes every episode record of the server
 * (spec §4.3), so its batches are run again — counting one too many re-runs rewards the server kept, one too few
 * strands them. The rules: OFFLINE/BOOTING entered from a live status, or the step going backwards between two polls
 * (also across a failed poll that reported no step), is one restart; the first observation, staying down, and going
 * down then backwards are not counted again.
 */
import { describe, expect, it } from "vitest";
import { hasMovedPast, initialEngineView, observeEngine, stepMarkOf, type EngineView } from "../../../src/scheduler/engine-gate.ts";

/** The view after a sequence of (status, step) observations from the initial view. */
function viewAfter(seq: readonly [string, number | null | undefined][]): EngineView {
  let v = initialEngineView("x");
  seq.forEach(([status, step], i) => {
    v = observeEngine(v, status, step, i).view;
  });
  return v;
}

describe("restarts", () => {
  it("the first observation is no restart, even OFFLINE; staying down counts one", () => {
    expect(viewAfter([["ENGINE.OFFLINE", 0]]).restarts).toBe(0);
    expect(viewAfter([["ENGINE.BOOTING", null]]).restarts).toBe(0);
    expect(viewAfter([["ENGINE.ROLLING", 2], ["ENGINE.OFFLINE", 0], ["ENGINE.OFFLINE", 0], ["ENGINE.BOOTING", null]]).restarts).toBe(1);
  });

  it("the step going backwards while the engine looks live is a restart between two polls", () => {
    expect(viewAfter([["ENGINE.ROLLING", 5], ["ENGINE.ROLLING", 3]]).restarts).toBe(1);
    expect(viewAfter([["ENGINE.WEIGHT_SYNCING", 5], ["ENGINE.ROLLING", 1]]).restarts).toBe(1);
    expect(viewAfter([["ENGINE.ROLLING", 5], ["ENGINE.ROLLING", 5], ["ENGINE.ROLLING_POST", 5], ["ENGINE.ROLLING", 6]]).restarts).toBe(0);
  });

  it("a failed poll that reported no step does not hide a step that went back across it", () => {
    const v = viewAfter([["ENGINE.ROLLING", 5], ["ENGINE.CANNOT_CONNECT", null], ["ENGINE.ROLLING", 2]]);
    expect(v.restarts).toBe(1);
    expect(v.globalStep).toBe(2);
    // and the step it last knew stays known through the failed poll
    expect(viewAfter([["ENGINE.ROLLING", 5], ["ENGINE.CANNOT_CONNECT", null]]).lastGlobalStep).toBe(5);
  });

  it("going down and coming back at a lower step is one restart, not two", () => {
    expect(viewAfter([["ENGINE.ROLLING", 5], ["ENGINE.OFFLINE", 0], ["ENGINE.BOOTING", null], ["ENGINE.ROLLING", 1]]).restarts).toBe(1);
    expect(viewAfter([["ENGINE.ROLLING", 5], ["ENGINE.BOOTING", 0], ["ENGINE.ROLLING", 1]]).restarts).toBe(1);
  });

  it("an observation without a step keeps the step; one with null clears it", () => {
    const v = viewAfter([["ENGINE.ROLLING", 4]]);
    expect(observeEngine(v, "ENGINE.ROLLING_POST", undefined, 9).view.globalStep).toBe(4);
    expect(observeEngine(v, "ENGINE.ROLLING_POST", null, 9).view.globalStep).toBeNull();
    expect(observeEngine(v, "ENGINE.ROLLING_POST", null, 9).view.seenAtMs).toBe(9);
  });
});

describe("moving past a step", () => {
  it("a restart moves past the step only once the engine is ROLLING again, whatever step it then reports", () => {
    const v = viewAfter([["ENGINE.ROLLING", 5]]);
    const mark = stepMarkOf(v);
    const down = observeEngine(v, "ENGINE.OFFLINE", 0, 1).view;
    expect(hasMovedPast(down, mark)).toBe(false);
    const back = observeEngine(observeEngine(down, "ENGINE.BOOTING", null, 2).view, "ENGINE.ROLLING", 1, 3).view;
    expect(hasMovedPast(back, mark)).toBe(true);
    expect(hasMovedPast(observeEngine(back, "ENGINE.ROLLING_POST", 1, 4).view, mark)).toBe(false);
  });

  it("with steps known, the step decides, not the ROLLING edges", () => {
    const v = viewAfter([["ENGINE.ROLLING", 5]]);
    const mark = stepMarkOf(v);
    // a new ROLLING edge at the same step (ROLLING_POST → ROLLING without a sync) is not a new batch
    const again = observeEngine(observeEngine(v, "ENGINE.ROLLING_POST", 5, 1).view, "ENGINE.ROLLING", 5, 2).view;
    expect(again.rollingEdges).toBe(2);
    expect(hasMovedPast(again, mark)).toBe(false);
    expect(hasMovedPast(observeEngine(v, "ENGINE.WEIGHT_SYNCING", 6, 1).view, mark)).toBe(true);
  });

  it("with steps unknown, a later ROLLING edge moves past only while the engine is ROLLING", () => {
    const v = viewAfter([["ENGINE.ROLLING", null]]);
    const mark = stepMarkOf(v);
    const synced = observeEngine(observeEngine(v, "ENGINE.WEIGHT_SYNCING", null, 1).view, "ENGINE.ROLLING", null, 2).view;
    expect(hasMovedPast(synced, mark)).toBe(true);
    expect(hasMovedPast(observeEngine(synced, "ENGINE.ROLLING_POST", null, 3).view, mark)).toBe(false);
  });
});
