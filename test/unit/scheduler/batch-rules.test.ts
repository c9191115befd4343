/**
 * Rules of batch truth (scheduler/batches) that decide whether a reward counts as trained or runs again, one by
 * one: an engine that exits before it started training a batch lost it; with steps unknown, the batch closes on the
 * next ROLLING edge only; a re-run group's generation is read from its key.
 */
import { describe, expect, it } from "vitest";
import type { FinishRun, PoolSeen } from "../../../src/scheduler/index.ts";
import { baseGroupKey, rerunOf } from "../../../src/scheduler/batches.ts";
import { Harness, specInput } from "./harness.ts";

const finishOf = (h: Harness) => h.commands.find((c): c is FinishRun => c.type === "finishRun")?.summary;
const seen = (h: Harness, engineStatus: string, globalStep: number | null, p?: PoolSeen) =>
  h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus, globalStep, ...(p ? { pool: p } : {}) });

describe("an engine exit", () => {
  it("OFFLINE with global_step 0 while the batch was still collecting (never seen draining or syncing) lost it: its group runs again", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 1, maxParallel: 1, maxSteps: 1 }));
    h.start();
    h.rolling(3);
    const [a] = h.takeDispatches();
    h.finishEpisode(a!, 1, 3);
    seen(h, "ENGINE.OFFLINE", 0);
    expect(h.state.batches["0:3"]?.state).toBe("wiped");
    expect(h.state.run.totals.episodesWiped).toBe(1);
    h.rolling(1);
    h.serveAll(1);
    const reruns = h.dispatched().filter((d) => d.groupKey !== a!.groupKey && baseGroupKey(d.groupKey) === a!.groupKey);
    expect(reruns.map((d) => rerunOf(d.groupKey))).toEqual([1]);
  });

  it("OFFLINE with global_step 0 after the batch was seen syncing trained it", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 1, maxSteps: 1 }));
    h.start();
    h.rolling(4);
    h.serveAll(4);
    seen(h, "ENGINE.WEIGHT_SYNCING", 4);
    seen(h, "ENGINE.OFFLINE", 0);
    expect(h.state.batches["0:4"]?.state).toBe("closed");
    expect(finishOf(h)).toMatchObject({ verdict: "trained", untrainedRewards: 0 });
  });

  it("an exit at a step other than 0 is a stop, not the end of training: the batch is lost", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 1, maxSteps: 1 }));
    h.start();
    h.rolling(4);
    h.serveAll(4);
    seen(h, "ENGINE.ROLLING_POST", 4);
    seen(h, "ENGINE.OFFLINE", 4);
    expect(h.state.batches["0:4"]?.state).toBe("wiped");
  });
});

describe("steps unknown (a trainer that reports no global_step)", () => {
  it("the batch closes on the engine's next ROLLING edge, not before, and the run then finishes trained", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 1, maxSteps: 1 }));
    h.start();
    h.rolling(null as unknown as number);
    h.serveAll(null);
    const [key] = Object.keys(h.state.batches);
    seen(h, "ENGINE.ROLLING", null); // still the same ROLLING: no edge
    seen(h, "ENGINE.WEIGHT_SYNCING", null);
    expect(h.state.batches[key!]?.state).toBe("open");
    seen(h, "ENGINE.ROLLING", null);
    expect(h.state.batches[key!]?.state).toBe("closed");
    expect(finishOf(h)).toMatchObject({ verdict: "trained", untrainedRewards: 0 });
  });
});

describe("group keys of re-runs", () => {
  it("a re-run group's key carries its generation after the last '~'; a first run has generation 0", () => {
    expect(rerunOf("gsm8k/0/31")).toBe(0);
    expect(rerunOf("gsm8k/0/31~2")).toBe(2);
    expect(rerunOf("gsm8k/0/31~x")).toBe(0);
    expect(baseGroupKey("gsm8k/0/31~2")).toBe("gsm8k/0/31");
    expect(baseGroupKey("gsm8k/0/31")).toBe("gsm8k/0/31");
  });
});
