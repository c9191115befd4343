/**
 * The metrics export carries each window's sandbox-seconds (issue 21 §3): on the window's all/all group, 0 for a
 * window that made none, never on eval groups or per-source / per-swarm groups; the CSV gets a `sandbox_seconds`
 * column only for a run that made sandboxes.
 */
import { describe, expect, it } from "vitest";
import type { AttemptRow } from "../../../src/edge/run/attempts.ts";
import { ALL, metricsCsv, runMetrics, withSandboxSeconds } from "../../../src/edge/run/board/metrics.ts";

const attempt = (windowIndex: number | null, source: string, reward: number): AttemptRow => ({
  episodeKey: `${source}/${windowIndex}/${reward}`,
  attempt: 1,
  taskId: "t",
  source,
  repeat: 0,
  windowIndex,
  globalStep: windowIndex,
  kind: windowIndex === null ? "scored" : "ended",
  reward,
  swarmRewards: { a: reward },
  logMetrics: {},
  cause: null,
  durationMs: 1000,
  atMs: 0,
});

const rows = [attempt(0, "gsm8k", 1), attempt(0, "math", 0), attempt(1, "gsm8k", 1), attempt(null, "gsm8k", 1)];
const metrics = runMetrics("run-1", rows, ["gsm8k", "math"], ["a"], 0.5);

describe("sandbox-seconds in the metrics export", () => {
  it("each window's all/all group gets its seconds (0 for a window without sandboxes); other groups none", () => {
    const m = withSandboxSeconds(metrics, { "0": { seconds: 12.5 }, none: { seconds: 3 } });
    const seconds = m.groups.map((g) => [g.window, g.source, g.swarm, g.sandboxSeconds]);
    expect(seconds).toEqual([
      [1, ALL, ALL, 12.5],
      [1, "gsm8k", ALL, undefined],
      [1, "math", ALL, undefined],
      [2, ALL, ALL, 0],
      [2, "gsm8k", ALL, undefined],
      [2, "math", ALL, undefined],
      [null, ALL, ALL, undefined],
      [null, "gsm8k", ALL, undefined],
      [null, "math", ALL, undefined],
    ]);
    expect(
      metrics.groups.every((g) => g.sandboxSeconds === undefined),
      "the input is not changed",
    ).toBe(true);
  });

  it("the CSV has a sandbox_seconds column only for a run that made sandboxes", () => {
    expect(metricsCsv(metrics).split("\r\n")[0]).not.toContain("sandbox_seconds");
    const lines = metricsCsv(withSandboxSeconds(metrics, { "0": { seconds: 12.5 } })).split("\r\n");
    const col = lines[0]!.split(",").indexOf("sandbox_seconds");
    expect(col).toBeGreaterThan(0);
    expect(lines.slice(1, -1).map((l) => l.split(",")[col])).toEqual(["12.5", "", "", "0", "", "", "", "", ""]);
  });
});
