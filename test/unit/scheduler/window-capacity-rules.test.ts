/**
 * The capacity check's answer to the operator (scheduler/window-capacity): the batch size it suggests always fits and
 * is the largest that does, its message names the count in words that read right, the error carries every short
 * source, and a dataset whose size is unknown is left to the config check that names it.
 */
import { describe, expect, it } from "vitest";
import { RunSpec, WindowCapacityError, schedulerConfig, windowCapacityIssues, type RunSpecInput } from "../../../src/scheduler/index.ts";
import { specInput } from "./harness.ts";

const spec = (overrides: Partial<RunSpecInput>) => RunSpec.parse(specInput(overrides));
const suggested = (message: string): number => Number(/lower batchSize to ≤ (\d+)/.exec(message)?.[1]);

describe("the suggested batch size", () => {
  const cases: { datasets: RunSpecInput["datasets"]; counts: Record<string, number>; batchSize: number }[] = [
    { datasets: [{ name: "a" }], counts: { a: 4 }, batchSize: 8 },
    { datasets: [{ name: "a" }], counts: { a: 1 }, batchSize: 5 },
    { datasets: [{ name: "a" }, { name: "b" }], counts: { a: 3, b: 1000 }, batchSize: 16 },
    { datasets: [{ name: "a", weight: 1 }, { name: "b", weight: 3 }], counts: { a: 2, b: 1000 }, batchSize: 24 },
    { datasets: [{ name: "a" }, { name: "b" }, { name: "c", weight: 5 }], counts: { a: 1000, b: 1000, c: 5 }, batchSize: 12 },
    // a source with 1 task whose weight share would allow 2: the largest size that fits is below the share's
    { datasets: [{ name: "a", weight: 3 }, { name: "b", weight: 2 }, { name: "c", weight: 2 }], counts: { a: 1, b: 1000, c: 1000 }, batchSize: 14 },
  ];

  it("fits (no issue for that source at that size) and one more does not: the largest size that fits", () => {
    for (const { datasets, counts, batchSize } of cases) {
      const issues = windowCapacityIssues(spec({ datasets, batchSize }), counts);
      expect(issues.length, JSON.stringify(datasets)).toBeGreaterThan(0);
      for (const issue of issues) {
        const n = suggested(issue.message);
        expect(n).toBeGreaterThanOrEqual(1);
        expect(n).toBeLessThan(batchSize);
        const at = (b: number) => windowCapacityIssues(spec({ datasets, batchSize: b }), counts).filter((i) => i.path === issue.path);
        expect(at(n), `${issue.message} at ${n}`).toEqual([]);
        expect(at(n + 1), `${issue.message} at ${n + 1}`).toHaveLength(1);
      }
    }
  });
});

describe("the message and the error", () => {
  it("one task reads in the singular, several in the plural; a lone source is not told to lower its weight", () => {
    const [one] = windowCapacityIssues(spec({ datasets: [{ name: "solo" }], batchSize: 4 }), { solo: 1 });
    expect(one?.message).toMatch(/^dataset "solo" has 1 task but a batch window of 4 needs up to 4 distinct tasks from it; lower batchSize to ≤ 1 or add tasks$/);
    const [two] = windowCapacityIssues(spec({ datasets: [{ name: "a" }, { name: "b" }], batchSize: 8 }), { a: 2, b: 100 });
    expect(two?.message).toContain('dataset "a" has 2 tasks but');
    expect(two?.message).toContain(", lower its weight or add tasks");
    expect(two?.path).toBe("datasets.0");
  });

  it("schedulerConfig refuses with a WindowCapacityError whose message holds every short source's issue", () => {
    let error: unknown;
    try {
      schedulerConfig(spec({ datasets: [{ name: "a" }, { name: "b" }], batchSize: 8 }), { a: 1, b: 2 });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(WindowCapacityError);
    const e = error as WindowCapacityError;
    expect(e.name).toBe("WindowCapacityError");
    expect(e.issues.map((i) => i.path)).toEqual(["datasets.0", "datasets.1"]);
    expect(e.message).toBe(e.issues.map((i) => i.message).join("; "));
  });

  it("in a run with throttle caps, an uncapped source short of tasks is refused as well as a capped one", () => {
    const datasets = [{ name: "a", throttleRatio: 0.5 }, { name: "b", weight: 3 }];
    expect(windowCapacityIssues(spec({ batchSize: 8, datasets }), { a: 100, b: 3 }).map((i) => i.path)).toEqual(["datasets.1"]);
    expect(windowCapacityIssues(spec({ batchSize: 8, datasets }), { a: 100, b: 100 })).toEqual([]);
  });

  it("a dataset whose size is missing, zero or not whole is no capacity issue here (the config check names it)", () => {
    const s = spec({ datasets: [{ name: "a" }, { name: "b" }], batchSize: 8 });
    expect(windowCapacityIssues(s, { a: 1 })).toEqual([]);
    expect(windowCapacityIssues(s, { a: 1, b: 0 })).toEqual([]);
    expect(windowCapacityIssues(s, { a: 1, b: 2.5 })).toEqual([]);
    expect(windowCapacityIssues(s, { a: 1, b: 100 })).toHaveLength(1); // with both sizes known, the short one is named
  });
});
