import { describe, expect, it } from "vitest";
import { allocateSlots, sourceCapIssues, throttleCap } from "../../../src/scheduler/mixing.ts";

function windows(weights: number[], batchSize: number, count: number, caps?: (number | null)[]): number[][] {
  let credits = weights.map(() => 0);
  const out: number[][] = [];
  for (let w = 0; w < count; w++) {
    const a = allocateSlots(credits, weights, batchSize, caps);
    expect(a.picks).toHaveLength(batchSize);
    credits = a.credits;
    out.push(a.counts);
  }
  return out;
}

describe("exact mix per window (largest remainder, carried deficit)", () => {
  it("weights 0.25/0.75 with batchSize 8 → every window has exactly 2 and 6", () => {
    for (const counts of windows([0.25, 0.75], 8, 50)) expect(counts).toEqual([2, 6]);
  });

  it("weights 1/1/1 with batchSize 4 → the deficit is carried: 2/1/1, 1/2/1, 1/1/2, then again", () => {
    expect(windows([1, 1, 1], 4, 6)).toEqual([[2, 1, 1], [1, 2, 1], [1, 1, 2], [2, 1, 1], [1, 2, 1], [1, 1, 2]]);
  });

  it("long-run shares converge: cumulative counts stay within 1 of the exact target", () => {
    const weights = [1, 2, 3.3];
    const total = weights.reduce((a, b) => a + b, 0);
    const cumulative = [0, 0, 0];
    windows(weights, 10, 300).forEach((counts, w) => {
      counts.forEach((c, i) => (cumulative[i] = (cumulative[i] ?? 0) + c));
      cumulative.forEach((c, i) => expect(Math.abs(c - ((w + 1) * 10 * (weights[i] ?? 0)) / total)).toBeLessThan(1));
    });
  });

  it("interleaves sources in slot order and skips a source with weight 0 (exhausted in eval)", () => {
    const a = allocateSlots([0, 0], [1, 1], 4);
    expect(a.picks).toEqual([0, 1, 0, 1]);
    expect(allocateSlots([0, 0, 0], [1, 0, 1], 4).counts).toEqual([2, 0, 2]);
  });

  it("respects per-source caps and fills the rest from the other sources", () => {
    expect(allocateSlots([0, 0], [3, 1], 8, [4, null]).counts).toEqual([4, 4]);
  });
});

describe("BC-31 cap arithmetic", () => {
  it("BC-31 caps are ceil(batch × ratio): 32 × 0.4 = 12.8 → 13, 32 × 0.5 = 16 → 16", () => {
    expect(throttleCap(32, 0.4)).toBe(13);
    expect(throttleCap(32, 0.5)).toBe(16);
    expect(throttleCap(10, 0.3)).toBe(3); // 10 × 0.3 = 3.0000000000000004 in floats: still 3
  });

  it("BC-31 flags caps that cannot fill the batch and shares above a cap; uncapped sources always fill", () => {
    expect(sourceCapIssues(32, 1.5, [{ name: "a", weight: 1, throttleRatio: 0.4 }, { name: "b", weight: 1, throttleRatio: 0.4 }]).map((i) => i.path)).toEqual([
      ["datasets"], // 13 + 13 = 26 < 32
      ["datasets", 0, "throttleRatio"], // and each share 16 > cap 13
      ["datasets", 1, "throttleRatio"],
    ]);
    expect(sourceCapIssues(32, 1.5, [{ name: "a", weight: 1, throttleRatio: 0.4 }, { name: "b", weight: 1 }])).toEqual([
      expect.objectContaining({ path: ["datasets", 0, "throttleRatio"] }),
    ]);
    expect(sourceCapIssues(32, 1.5, [{ name: "a", weight: 1, throttleRatio: 0.6 }, { name: "b", weight: 1 }])).toEqual([]);
  });
});

describe("mixing edge rules (found open by mutation testing)", () => {
  it("an exhausted source (weight 0) gets no slot and its carried credit resets to 0; with no weight at all nothing is assigned", () => {
    expect(allocateSlots([0.5, -0.75], [1, 0], 2)).toEqual({ picks: [0, 0], counts: [2, 0], credits: [0.5, 0] });
    expect(allocateSlots([0.5, 0.25], [0, 0], 3)).toEqual({ picks: [], counts: [0, 0], credits: [0, 0] });
  });

  it("BC-31 a run ratio whose cap equals batchSize is enough; no datasets means no cap issue", () => {
    expect(sourceCapIssues(8, 1, [])).toEqual([]);
    expect(sourceCapIssues(8, 1, [{ name: "a", weight: 1 }])).toEqual([]);
    expect(sourceCapIssues(8, 0.875, [{ name: "a", weight: 1 }]).map((i) => i.path)).toEqual([["throttleRatio"]]);
  });

  it("BC-31 each issue names the value received and the fix", () => {
    const [run] = sourceCapIssues(8, 0.5, [{ name: "a", weight: 1 }]);
    expect(run?.message).toBe("throttleRatio 0.5 caps this run at 4 unique tasks per batch, below batchSize 8, so its windows could never fill the batch; use a ratio ≥ 1 (default 1.5)");
    const [sum] = sourceCapIssues(8, 1.5, [{ name: "a", weight: 1, throttleRatio: 0.25 }, { name: "b", weight: 1, throttleRatio: 0.25 }]).filter((i) => i.path.join(".") === "datasets");
    expect(sum?.message).toBe("the per-source caps ceil(batchSize × throttleRatio) sum to 4, below batchSize 8: the batch can never fill; raise the datasets' throttleRatio values so they sum to at least 1, or remove them");
    const [share] = sourceCapIssues(8, 1.5, [{ name: "a", weight: 3, throttleRatio: 0.5 }, { name: "b", weight: 1 }]);
    expect(share).toEqual({ path: ["datasets", 0, "throttleRatio"], message: 'dataset "a" has weight share 6.00 tasks per window but throttleRatio 0.5 caps it at 4; raise its throttleRatio to at least 0.750 or lower its weight' });
  });
});
