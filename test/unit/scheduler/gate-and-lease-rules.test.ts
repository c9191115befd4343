/**
 * Small rules of the engine gate and the dispatch leases: an engine nobody has polled reads `unknown` in the run's
 * status (the gate closed); when either step is unknown, only a later edge into ROLLING says the engine moved past a
 * window's step; a run whose consumers do not report starts keeps the whole dispatch lease (the shorter un-started
 * lease is only for consumers that report starts) and counts no un-started expiries.
 */
import { describe, expect, it } from "vitest";
import { hasMovedPast, initialEngineView } from "../../../src/scheduler/engine-gate.ts";
import { runStatus } from "../../../src/scheduler/index.ts";
import { DEFAULT_DISPATCH_START_LEASE_SECONDS } from "../../../src/scheduler/tuning.ts";
import { Harness, rollingRun, specInput } from "./harness.ts";

describe("the engine gate", () => {
  it("an engine nobody has polled reads 'unknown' in the run's status, and the gate is closed", () => {
    const h = new Harness(specInput());
    h.start();
    expect(runStatus(h.state)).toMatchObject({ gateOpen: false, engines: [{ swarm: "default", engineStatus: "unknown", globalStep: null, seenAtMs: null }] });
  });

  it("with the engine's step unknown, only a later edge into ROLLING means it moved past the window's step", () => {
    const mark = { globalStep: 4, rollingEdges: 1, restarts: 0 };
    const view = { ...initialEngineView("default"), engineStatus: "ENGINE.ROLLING", seenAtMs: 1, globalStep: null };
    expect(hasMovedPast({ ...view, rollingEdges: 1 }, mark)).toBe(false);
    expect(hasMovedPast({ ...view, rollingEdges: 2 }, mark)).toBe(true);
  });

  it("with the window's step unknown, a higher engine step without a new ROLLING edge is not past it", () => {
    const mark = { globalStep: null, rollingEdges: 1, restarts: 0 };
    const view = { ...initialEngineView("default"), engineStatus: "ENGINE.ROLLING", seenAtMs: 1, globalStep: 3 };
    expect(hasMovedPast({ ...view, rollingEdges: 1 }, mark)).toBe(false);
    expect(hasMovedPast({ ...view, rollingEdges: 2 }, mark)).toBe(true);
  });
});

describe("dispatch leases of a run whose consumers do not report starts", () => {
  it("a dispatch keeps the whole dispatch lease, not the shorter un-started one, and counts no un-started expiry", () => {
    const { h, sent } = rollingRun(specInput({ batchSize: 1, numRepeat: 1, maxParallel: 1, tuning: { dispatchLeaseSeconds: 120 } }));
    const key = sent[0]!.episodeKey;
    expect(h.state.run.consumersHeartbeat ?? false).toBe(false);
    h.advance((DEFAULT_DISPATCH_START_LEASE_SECONDS + 1) * 1000);
    expect(h.row(key)).toMatchObject({ status: "dispatched", claimFailures: 0 });
    h.advance((120 - DEFAULT_DISPATCH_START_LEASE_SECONDS - 1) * 1000); // 120 s after the dispatch
    expect(h.row(key)).toMatchObject({ status: "queued", claimFailures: 1 });
    expect(h.row(key)?.unstartedExpiries ?? 0).toBe(0);
  });
});
