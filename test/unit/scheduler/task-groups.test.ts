import { describe, expect, it } from "vitest";
import { permutationKey, permuteIndex } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

function runWindows(h: Harness, windows: number): void {
  h.start();
  for (let step = 1; step <= windows; step++) {
    h.rolling(step);
    h.serveAll(step);
  }
}

describe("batch windows mix the sources exactly", () => {
  it("weights 0.25/0.75 with batchSize 8: every window holds exactly 2 and 6 task groups", () => {
    const h = new Harness(specInput({ batchSize: 8, numRepeat: 1, datasets: [{ name: "a", weight: 0.25 }, { name: "b", weight: 0.75 }] }), { a: 100, b: 100 });
    runWindows(h, 6);
    const steps = Object.values(h.state.steps);
    expect(steps).toHaveLength(6);
    for (const s of steps) expect(s.sourceGroups).toEqual({ a: 2, b: 6 });
    // and the groups the server received in each window match that mix
    for (const s of steps) {
      const sources = h.dispatched().filter((d) => d.windowIndex === s.windowIndex).map((d) => d.source);
      expect(sources.filter((x) => x === "a")).toHaveLength(2);
      expect(sources.filter((x) => x === "b")).toHaveLength(6);
    }
  });

  it("weights 1/1/1 with batchSize 4: the deficit carries over, 4 of each every 3 windows", () => {
    const h = new Harness(specInput({ batchSize: 4, numRepeat: 1, datasets: [{ name: "a" }, { name: "b" }, { name: "c" }] }), { a: 50, b: 50, c: 50 });
    runWindows(h, 6);
    expect(Object.values(h.state.steps).map((s) => s.sourceGroups)).toEqual([
      { a: 2, b: 1, c: 1 }, { a: 1, b: 2, c: 1 }, { a: 1, b: 1, c: 2 }, { a: 2, b: 1, c: 1 }, { a: 1, b: 2, c: 1 }, { a: 1, b: 1, c: 2 },
    ]);
  });

  it("episode keys are {source}/{epoch}/{taskIndex}#{repeat}, and epoch 2 serves the same tasks in a new order", () => {
    const h = new Harness(specInput({ batchSize: 4, numRepeat: 2, epochs: 2 }), { gsm8k: 4 });
    runWindows(h, 2);
    h.rolling(3);
    expect(h.state.run).toMatchObject({ phase: "finished", stopReason: "epochsDone" });
    const groups = [...new Set(h.dispatched().map((d) => d.groupKey))];
    expect(h.dispatched()[0]?.episodeKey).toMatch(/^gsm8k\/0\/\d#0$/);
    const order = (epoch: number) => groups.filter((g) => g.startsWith(`gsm8k/${epoch}/`)).map((g) => Number(g.split("/")[2]));
    const seeded = (epoch: number) => [0, 1, 2, 3].map((p) => permuteIndex(p, 4, permutationKey(0, "gsm8k", epoch)));
    expect(order(0)).toEqual(seeded(0));
    expect(order(1)).toEqual(seeded(1));
    expect([...order(1)].sort()).toEqual([0, 1, 2, 3]);
    expect(order(1)).not.toEqual(order(0));
  });
});
