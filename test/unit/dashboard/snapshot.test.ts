/** The run page's data (edge/run/board/snapshot): one reward line per source and per swarm, failures per step. */
import { describe, expect, it } from "vitest";
import { runMetrics } from "../../../src/edge/run/board/metrics.ts";
import { dashboardSnapshot } from "../../../src/edge/run/board/snapshot.ts";
import type { AttemptRow } from "../../../src/edge/run/attempts.ts";
import type { RunView } from "../../../src/edge/run/run-views.ts";

const row = (over: Partial<AttemptRow>): AttemptRow => ({
  episodeKey: "a/0/0#0", attempt: 1, taskId: "t", source: "a", repeat: 0, windowIndex: 0, globalStep: 1, kind: "ended", reward: 1,
  swarmRewards: { student: 1, teacher: 0 }, logMetrics: {}, cause: null, durationMs: 10, atMs: 0, ...over,
});

describe("run page snapshot", () => {
  it("draws the API's step means as the main line, and one line per source and per swarm server", () => {
    const rows = [row({}), row({ source: "b", reward: 0, swarmRewards: { student: 0, teacher: 1 } }), row({ kind: "failed", reward: null, swarmRewards: {}, cause: "no_llm_call" })];
    const metrics = runMetrics("r", rows, ["a", "b"], ["student", "teacher"], 1);
    const view = {
      steps: [{ windowIndex: 0, meanReward: 0.5 }], datasets: { a: {}, b: {} }, swarms: [{ name: "student" }, { name: "teacher" }],
      totals: { episodesEnded: 2 }, createdAtMs: 0,
    } as unknown as RunView;
    const snap = dashboardSnapshot({ view, metrics, inFlight: [], recent: rows, evalReport: null, startedAtMs: 0, finishedAtMs: 60_000, nowMs: 90_000 });
    expect(snap.rewards.map((r) => [r.label, r.mean])).toEqual([["all", [0.5]], ["source a", [1]], ["source b", [0]], ["swarm student", [0.5]], ["swarm teacher", [0.5]]]);
    expect(snap.rewards[0]!.std).toEqual([0.5]);
    expect(snap.failures).toEqual({ windows: [1], byCause: { no_llm_call: [1] } });
    expect(snap.successRate.rate).toEqual([0.5]);
    expect(snap.episodesPerMinute).toBe(2);
  });

  it("the signal charts are the metrics export's numbers, and the run's cost", () => {
    const rows = [
      row({ episodeKey: "a/0/0#0", reward: 0, logMetrics: { default: { turns: 2 } } }), row({ episodeKey: "a/0/0#1", reward: 1, logMetrics: { default: { turns: 4 } } }),
      row({ episodeKey: "a/0/1#0", windowIndex: 1, globalStep: 2, reward: 0.9 }), row({ episodeKey: "a/0/1#1", windowIndex: 1, globalStep: 2, reward: 1 }),
      row({ episodeKey: "a/0/1#2", windowIndex: 1, globalStep: 2, reward: 1 }),
    ];
    const metrics = runMetrics("r", rows, ["a"], ["default"], 1);
    const view = { steps: [{ windowIndex: 0, meanReward: 0.5 }, { windowIndex: 1, meanReward: 29 / 30 }], datasets: { a: {} }, swarms: [{ name: "default" }], totals: { episodesEnded: 5 }, createdAtMs: 0 } as unknown as RunView;
    const snap = dashboardSnapshot({ view, metrics, inFlight: [], recent: rows, evalReport: null, startedAtMs: 0, finishedAtMs: 60_000, nowMs: 90_000 });
    expect(snap.signals.windows).toEqual([1, 2]);
    // window 1's group scored 0 and 1 (a signal); window 2's scored 0.9, 1, 1 (a signal)
    expect(snap.signals.zeroAdvantageShare).toEqual([0, 0]);
    expect(snap.signals.histogramEdges).toEqual(metrics.histogramEdges);
    expect(snap.signals.histograms).toEqual(metrics.groups.map((g) => g.signals.histogram));
    expect(snap.cost).toBeNull();
  });

  it("cuts the ± sd band to the window's lowest and highest reward, and charts each log_metrics key per window", () => {
    const rows = [1, 1, 1, 0].map((reward, i) => row({ episodeKey: `a/${i}/0#0`, reward, swarmRewards: {}, logMetrics: { default: { turns: i + 1, tokens: [10, 30] } } }));
    rows.push(row({ episodeKey: "a/9/0#0", windowIndex: 1, globalStep: 2, reward: 0.5, swarmRewards: {}, logMetrics: {} }));
    const metrics = runMetrics("r", rows, ["a"], ["default"], 1);
    const view = { steps: [{ windowIndex: 0, meanReward: 0.75 }, { windowIndex: 1, meanReward: 0.5 }], datasets: { a: {} }, swarms: [{ name: "default" }], totals: { episodesEnded: 5 }, createdAtMs: 0 } as unknown as RunView;
    const snap = dashboardSnapshot({ view, metrics, inFlight: [], recent: rows, evalReport: null, startedAtMs: 0, finishedAtMs: 60_000, nowMs: 90_000 });
    const all = snap.rewards[0]!;
    const sd = Math.sqrt(3 / 16); // rewards 1, 1, 1, 0: mean 0.75
    expect(all.std[0]).toBeCloseTo(sd, 12);
    expect(all.high).toEqual([1, 0.5]); // 0.75 + 0.433 is above the highest reward, 1; one reward: no spread
    expect(all.low[0]).toBeCloseTo(0.75 - sd, 12);
    expect(all.low[1]).toBe(0.5);
    expect(snap.logMetrics).toEqual({ windows: [1, 2], byKey: { tokens: [20, null], turns: [2.5, null] } });
  });
});
