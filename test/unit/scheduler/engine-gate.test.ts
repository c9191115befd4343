import { describe, expect, it } from "vitest";
import { hasMovedPast, initialEngineView, isGateOpen, observeEngine, stepMarkOf } from "../../../src/scheduler/engine-gate.ts";

describe("engine gate", () => {
  it("counts edges into ROLLING and keeps the step when a claim failure names only a status", () => {
    let v = initialEngineView("default");
    const seq: [string, number | null][] = [["ENGINE.BOOTING", null], ["ENGINE.ROLLING", 1], ["ENGINE.ROLLING", 1], ["ENGINE.ROLLING_POST", 1], ["ENGINE.WEIGHT_SYNCING", 1], ["ENGINE.ROLLING", 2]];
    const edges = seq.map(([s, g], i) => {
      const r = observeEngine(v, s, g, i);
      v = r.view;
      return r.enteredRolling;
    });
    expect(edges).toEqual([false, true, false, false, false, true]);
    expect(v).toEqual({ swarm: "default", lastGlobalStep: 2, engineStatus: "ENGINE.ROLLING", globalStep: 2, seenAtMs: 5, rollingEdges: 2, restarts: 0 });
    expect(observeEngine(v, "ENGINE.WEIGHT_SYNCING", undefined, 6).view.globalStep).toBe(2);
  });

  it("BC-25 opens only when every swarm is exactly ROLLING (ROLLING_POST and unknown keep it closed)", () => {
    const at = (s: string) => observeEngine(initialEngineView("x"), s, 1, 0).view;
    expect(isGateOpen([at("ENGINE.ROLLING"), at("ENGINE.ROLLING")])).toBe(true);
    expect(isGateOpen([at("ENGINE.ROLLING"), at("ENGINE.ROLLING_POST")])).toBe(false);
    expect(isGateOpen([initialEngineView("x")])).toBe(false);
    expect(isGateOpen([])).toBe(false);
  });

  it("moves past a step on a higher global_step, or on a later ROLLING edge when steps are unknown", () => {
    const v1 = observeEngine(initialEngineView("x"), "ENGINE.ROLLING", 3, 0).view;
    const mark = stepMarkOf(v1);
    expect(hasMovedPast(observeEngine(v1, "ENGINE.WEIGHT_SYNCING", 3, 1).view, mark)).toBe(false);
    expect(hasMovedPast(observeEngine(v1, "ENGINE.ROLLING", 4, 1).view, mark)).toBe(true);
    const n1 = observeEngine(initialEngineView("x"), "ENGINE.ROLLING", null, 0).view;
    const n2 = observeEngine(observeEngine(n1, "ENGINE.WEIGHT_SYNCING", null, 1).view, "ENGINE.ROLLING", null, 2).view;
    expect(hasMovedPast(n1, stepMarkOf(n1))).toBe(false);
    expect(hasMovedPast(n2, stepMarkOf(n1))).toBe(true);
  });

  it("BC-28 counts an engine restart (OFFLINE/BOOTING) and treats ROLLING after it as past the old step", () => {
    const v1 = observeEngine(initialEngineView("x"), "ENGINE.ROLLING", 5, 0).view;
    const mark = stepMarkOf(v1);
    const off = observeEngine(v1, "ENGINE.OFFLINE", 0, 1).view;
    const booting = observeEngine(off, "ENGINE.BOOTING", 0, 2).view;
    expect([off.restarts, booting.restarts]).toEqual([1, 1]);
    expect(hasMovedPast(booting, mark)).toBe(false);
    expect(hasMovedPast(observeEngine(booting, "ENGINE.ROLLING", 5, 3).view, mark)).toBe(true);
  });
});
