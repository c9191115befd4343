import { describe, expect, it } from "vitest";
import { RunSpec, initialState, schedulerConfig, stateFromRows } from "../../../src/scheduler/index.ts";
import { specInput } from "./harness.ts";

describe("schedulerConfig and initialState", () => {
  const spec = RunSpec.parse(specInput({ datasets: [{ name: "a", weight: 3, throttleRatio: 1 }, { name: "b" }], secrets: { KEY: "s3cret" }, seed: 7 }));

  it("keeps only numbers, names and task counts (no secrets, no URLs, no source fields)", () => {
    const config = schedulerConfig(spec, { a: 10, b: 20 });
    expect(config.sources).toEqual([
      { name: "a", weight: 3, taskCount: 10, throttleRatio: 1, maxWindowGroups: 8 }, // ≤ its cap and batchSize (bound: 10 > 8)
      { name: "b", weight: 1, taskCount: 20, throttleRatio: null, maxWindowGroups: 8 },
    ]);
    expect(config).toMatchObject({ swarms: ["default"], batchSize: 8, numRepeat: 4, seed: 7, episodeType: "train" });
    expect(JSON.stringify(initialState(spec, { a: 10, b: 20 }))).not.toContain("s3cret");
    expect(JSON.stringify(config)).not.toContain("127.0.0.1");
  });

  it("throws a RangeError naming the dataset when its task count is missing or 0", () => {
    expect(() => schedulerConfig(spec, { a: 10 })).toThrow(/taskCounts\["b"\].*load the dataset/);
    expect(() => schedulerConfig(spec, { a: 10, b: 0 })).toThrow(RangeError);
  });

  it("starts in phase created with one cursor, credit and engine view per source/swarm; rows round-trip", () => {
    const state = initialState(spec, { a: 10, b: 20 });
    expect(state.run).toMatchObject({
      phase: "created", cursors: [{ epoch: 0, position: 0 }, { epoch: 0, position: 0 }], deferred: [[], []], credits: [0, 0], windowsOpened: 0,
    });
    expect(state.run.engines.map((e) => e.engineStatus)).toEqual(["unknown"]);
    expect(stateFromRows({ run: state.run, episodes: [], steps: [], evalTasks: [] })).toEqual(state);
  });
});
