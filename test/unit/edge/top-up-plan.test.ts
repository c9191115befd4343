/**
 * One plan per server batch across runs (edge/swarm-server/top-up-plan, issue 25): the swarm server's object grants
 * top-ups so that runs sharing its batch never top it up twice, and every other run's unclaimed groups count as filling it.
 */
import { describe, expect, it } from "vitest";
import { emptyPlans, leavePlans, PENDING_TTL_MS, planTopUp, TOP_UP_HOLD_MS, type TopUpPlans } from "../../../src/edge/swarm-server/top-up-plan.ts";

const rolling = (globalStep: number, restarts = 0) => ({ engineStatus: "ENGINE.ROLLING", globalStep, restarts });
const T = 1_000_000;

describe("the server object's top-up plan", () => {
  it("a run alone gets its whole ask", () => {
    const { grant } = planTopUp(emptyPlans(), "a", { pendingGroups: 0, ask: { step: 3, groups: 5 } }, rolling(3), T);
    expect(grant).toEqual({ step: 3, groups: 5 });
  });

  it("another run's unclaimed groups fill the batch: the grant is the ask less them", () => {
    let plans = planTopUp(emptyPlans(), "b", { pendingGroups: 3 }, rolling(3), T).plans;
    const { grant } = planTopUp(plans, "a", { pendingGroups: 0, ask: { step: 3, groups: 5 } }, rolling(3), T + 100);
    expect(grant).toEqual({ step: 3, groups: 2 });
    plans = planTopUp(emptyPlans(), "b", { pendingGroups: 8 }, rolling(3), T).plans;
    expect(planTopUp(plans, "a", { pendingGroups: 0, ask: { step: 3, groups: 5 } }, rolling(3), T + 100).grant).toEqual({ step: 3, groups: 0 });
  });

  it("two runs asking for one batch: the second gets 0 while the first's reservation is live, and again after its groups were claimed", () => {
    let plans: TopUpPlans = emptyPlans();
    ({ plans } = planTopUp(plans, "a", { pendingGroups: 0, ask: { step: 3, groups: 4 } }, rolling(3), T));
    const second = planTopUp(plans, "b", { pendingGroups: 0, ask: { step: 3, groups: 4 } }, rolling(3), T + 500);
    expect(second.grant).toEqual({ step: 3, groups: 0 });
    // a's groups are queued (its pull says so): still live past the hold
    ({ plans } = planTopUp(second.plans, "a", { pendingGroups: 4 }, rolling(3), T + 1_000));
    expect(planTopUp(plans, "b", { pendingGroups: 0, ask: { step: 3, groups: 4 } }, rolling(3), T + TOP_UP_HOLD_MS + 1).grant?.groups).toBe(0);
    // claimed (running in the pool, which b's ask already subtracts): spent, b may ask for what is still missing
    ({ plans } = planTopUp(plans, "a", { pendingGroups: 0 }, rolling(3), T + TOP_UP_HOLD_MS + 2));
    expect(planTopUp(plans, "b", { pendingGroups: 0, ask: { step: 3, groups: 1 } }, rolling(3), T + TOP_UP_HOLD_MS + 3).grant).toEqual({ step: 3, groups: 1 });
  });

  it("the same run asking again keeps its reservation (its own pending groups are not subtracted)", () => {
    let { plans } = planTopUp(emptyPlans(), "a", { pendingGroups: 0, ask: { step: 3, groups: 4 } }, rolling(3), T);
    ({ plans } = planTopUp(plans, "a", { pendingGroups: 4 }, rolling(3), T + 100));
    expect(planTopUp(plans, "a", { pendingGroups: 4, ask: { step: 3, groups: 1 } }, rolling(3), T + 200).grant?.groups).toBe(1);
  });

  it("a new batch (step or restart) starts without a reservation", () => {
    const { plans } = planTopUp(emptyPlans(), "a", { pendingGroups: 0, ask: { step: 3, groups: 4 } }, rolling(3), T);
    expect(planTopUp(plans, "b", { pendingGroups: 0, ask: { step: 4, groups: 4 } }, rolling(4), T + 100).grant?.groups).toBe(4);
    expect(planTopUp(plans, "b", { pendingGroups: 0, ask: { step: 3, groups: 4 } }, rolling(3, 1), T + 100).grant?.groups).toBe(4);
  });

  it("an ask for a batch the engine no longer collects (another step, draining, syncing) gets 0", () => {
    expect(planTopUp(emptyPlans(), "a", { pendingGroups: 0, ask: { step: 3, groups: 4 } }, rolling(4), T).grant?.groups).toBe(0);
    expect(planTopUp(emptyPlans(), "a", { pendingGroups: 0, ask: { step: 3, groups: 4 } }, { engineStatus: "ENGINE.ROLLING_POST", globalStep: 3, restarts: 0 }, T).grant?.groups).toBe(0);
  });

  it("pending groups of a run that stopped pulling expire; a run that leaves takes its reservation and pending with it", () => {
    let { plans } = planTopUp(emptyPlans(), "b", { pendingGroups: 3 }, rolling(3), T);
    expect(planTopUp(plans, "a", { pendingGroups: 0, ask: { step: 3, groups: 5 } }, rolling(3), T + PENDING_TTL_MS).grant?.groups).toBe(5);
    ({ plans } = planTopUp(plans, "b", { pendingGroups: 0, ask: { step: 3, groups: 2 } }, rolling(3), T + 1));
    plans = leavePlans(plans, "b");
    expect(plans.holder).toBeNull();
    expect(planTopUp(plans, "a", { pendingGroups: 0, ask: { step: 3, groups: 5 } }, rolling(3), T + 2).grant?.groups).toBe(5);
  });

  it("a mid-run ask gets 0 while another run of this Worker pulls on the server; a last-window ask, or one with the other gone quiet or failed, is granted", () => {
    const mid = { pendingGroups: 0, ask: { step: 3, groups: 4, midRun: true } };
    const last = { pendingGroups: 0, ask: { step: 3, groups: 4 } };
    const subs = (b: { heardAtMs: number; failed: string | null }) => ({ a: { heardAtMs: T, failed: null }, b });
    expect(planTopUp(emptyPlans(), "a", mid, rolling(3), T, subs({ heardAtMs: T - 1_000, failed: null })).grant?.groups).toBe(0);
    expect(planTopUp(emptyPlans(), "a", last, rolling(3), T, subs({ heardAtMs: T - 1_000, failed: null })).grant?.groups).toBe(4);
    expect(planTopUp(emptyPlans(), "a", mid, rolling(3), T, subs({ heardAtMs: T - PENDING_TTL_MS, failed: null })).grant?.groups).toBe(4);
    expect(planTopUp(emptyPlans(), "a", mid, rolling(3), T, subs({ heardAtMs: T, failed: "other batch settings" })).grant?.groups).toBe(4);
    // alone (only the asker subscribed): granted
    expect(planTopUp(emptyPlans(), "a", mid, rolling(3), T, { a: { heardAtMs: T, failed: null } }).grant?.groups).toBe(4);
  });
});
