/** The metrics export's aggregation (edge/run/board/metrics): per step, source and swarm; CSV. */
import { describe, expect, it } from "vitest";
import type { AttemptRow } from "../../../src/edge/run/attempts.ts";
import { metricsCsv, metricsJsonl, runMetrics } from "../../../src/edge/run/board/metrics.ts";
import { SIGNAL_COLUMNS } from "../../../src/edge/run/board/signals.ts";

const row = (over: Partial<AttemptRow>): AttemptRow => ({
  episodeKey: "a/0/0#0", attempt: 1, taskId: "t", source: "a", repeat: 0, windowIndex: 0, globalStep: 1, kind: "ended", reward: 1,
  swarmRewards: { student: 1, teacher: 0.5 }, logMetrics: {}, cause: null, durationMs: 1000, atMs: 0, ...over,
});

describe("metrics export", () => {
  const rows = [
    row({ reward: 1, swarmRewards: { student: 1, teacher: 0.5 }, logMetrics: { student: { turns: 2, lens: [10, 20] } } }),
    row({ episodeKey: "b/0/0#0", source: "b", reward: 0, swarmRewards: { student: 0, teacher: 1 }, logMetrics: { student: { turns: 4 } }, durationMs: 3000 }),
    row({ kind: "failed", reward: null, swarmRewards: {}, cause: "function_error", durationMs: 500 }),
    row({ windowIndex: 1, globalStep: 2, reward: 0.5, swarmRewards: { student: 0.5, teacher: 0.5 } }),
  ];
  const m = runMetrics("run-1", rows, ["a", "b"], ["student", "teacher"], 1);

  it("aggregates each step overall, per source and per swarm: mean, spread, success rate, counts, durations, failures", () => {
    expect(m.groups.map((g) => [g.window, g.source, g.swarm])).toEqual([
      [1, "*", "*"], [1, "a", "*"], [1, "b", "*"], [1, "*", "student"], [1, "*", "teacher"],
      [2, "*", "*"], [2, "a", "*"], [2, "b", "*"], [2, "*", "student"], [2, "*", "teacher"],
    ]);
    const all = m.groups[0]!;
    expect(all).toMatchObject({ attempts: 3, ended: 2, failed: 1, rewardMean: 0.5, rewardStd: 0.5, rewardMin: 0, rewardMax: 1, successRate: 0.5, durationMaxMs: 3000, failuresByCause: { function_error: 1 } });
    expect(all.durationMeanMs).toBeCloseTo(1500, 10);
    expect(m.groups[4]).toMatchObject({ swarm: "teacher", rewardMean: 0.75 });
    expect(m.groups[2]).toMatchObject({ source: "b", attempts: 1, rewardMean: 0 });
    expect(all.logMetrics).toEqual({ turns: { mean: 3, count: 2 }, lens: { mean: 15, count: 2 } });
  });

  it("counts an ended attempt whose server batch was wiped apart: not ended, not in the rewards", () => {
    const wiped = runMetrics("run-2", [row({ reward: 1 }), row({ attempt: 2, reward: 0, wipedBy: "batch 0:1: the engine stopped or restarted before training it" })], ["a"], ["student"], 1);
    expect(wiped.groups[0]).toMatchObject({ attempts: 2, ended: 1, wiped: 1, rewardMean: 1, rewardMin: 1 });
  });

  it("writes one CSV row per group: the reward columns, the learning signals' columns, a log_metric column per key", () => {
    const lines = metricsCsv(m).trim().split("\r\n");
    const base = "window,global_step,source,swarm,attempts,ended,wiped,scored,failed,reward_mean,reward_std,reward_min,reward_max,success_rate,duration_mean_ms,duration_max_ms,failures_by_cause";
    expect(lines[0]).toBe(`${base},${SIGNAL_COLUMNS.join(",")},log_metric:lens,log_metric:turns`);
    const header = lines[0]!.split(",");
    const first = Object.fromEntries(lines[1]!.split(",").map((v, i) => [header[i], v]));
    expect(lines[1]!.startsWith("1,1,*,*,3,2,0,0,1,0.5,0.5,0,1,0.5,1500,3000,function_error=1,")).toBe(true);
    // window 1 rewards one repeat of a/0/0 and one of b/0/0: no group of two repeats, so no GRPO share (an empty cell)
    expect(first).toMatchObject({ groups: "0", zero_adv_share: "", "log_metric:lens": "15", "log_metric:turns": "3" });
    expect(first["reward_hist"]).toBe("0:1;0.1:0;0.2:0;0.3:0;0.4:0;0.5:0;0.6:0;0.7:0;0.8:0;0.9:1");
    expect(lines).toHaveLength(11);
  });

  it("writes JSON Lines with the CSV's columns as keys, numbers as numbers", () => {
    const lines = metricsJsonl(m).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(10);
    expect(lines[0]).toMatchObject({ window: 1, global_step: 1, source: "*", swarm: "*", reward_mean: 0.5, groups: 0, zero_adv_share: null, "log_metric:turns": 3 });
    expect(Object.keys(lines[0]!)).toEqual(metricsCsv(m).split("\r\n")[0]!.split(","));
  });
});
