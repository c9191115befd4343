/** The learning signals of the metrics export (edge/run/board/signals): GRPO groups, histogram, lengths, latency, step time. */
import { describe, expect, it } from "vitest";
import type { EpisodeSignals } from "../../../src/port/index.ts";
import type { AttemptRow } from "../../../src/edge/run/attempts.ts";
import { runMetrics } from "../../../src/edge/run/board/metrics.ts";
import { histogram, histogramEdges, learningSignals, nearestRank, spread, stepTime } from "../../../src/edge/run/board/signals.ts";

const sig = (over: Partial<EpisodeSignals> = {}): EpisodeSignals => ({
  llmCalls: 1, toolCalls: 0, responseChars: 100, promptTokens: 50, completionTokens: 20, lengthCut: 0, callMs: [200], callTokens: [20], wallMs: 300, transcriptBytes: 0, sandboxSeconds: 0, ...over,
});

const row = (key: string, reward: number | null, over: Partial<AttemptRow> = {}): AttemptRow => ({
  episodeKey: key, attempt: 1, taskId: "t", source: "s", repeat: Number(key.split("#")[1]), windowIndex: 0, globalStep: 1,
  kind: reward === null ? "failed" : "ended", reward, swarmRewards: {}, logMetrics: {}, cause: reward === null ? "function_error" : null,
  durationMs: 1000, atMs: 10_000, claimedAtMs: 1_000, signals: sig(), ...over,
});

describe("learning signals", () => {
  it("counts GRPO groups whose repeats all scored the same, split all-0 / all-1; the latest attempt of a repeat counts", () => {
    const rows = [
      row("s/0/0#0", 0), row("s/0/0#1", 0), // all 0
      row("s/0/1#0", 1), row("s/0/1#1", 1), // all 1
      row("s/0/2#0", 0.1), row("s/0/2#1", 0.1), // all the same, neither
      row("s/0/3#0", 0), row("s/0/3#1", 1), // a signal
      row("s/0/4#0", 1), // one rewarded repeat: not a group
      row("s/0/4#1", null),
      // repeat 0 of group 5 ended twice (a wipe re-ran it): attempt 2's reward counts, so the group has a signal
      row("s/0/5#0", 1, { attempt: 1 }), row("s/0/5#0", 0, { attempt: 2 }), row("s/0/5#1", 1),
    ];
    const s = learningSignals(rows, (r) => r.reward, histogramEdges(0, 1), true);
    expect(s.groups).toBe(5);
    expect(s.zeroAdvantageShare).toBeCloseTo(3 / 5, 12);
    expect(s.allZeroShare).toBeCloseTo(1 / 5, 12);
    expect(s.allOneShare).toBeCloseTo(1 / 5, 12);
    // every rewarded attempt is in the histogram, like the reward mean
    expect(s.histogram.reduce((a, b) => a + b, 0)).toBe(12);
    expect(s.histogram[0]).toBe(4);
    expect(s.histogram[1]).toBe(2);
    expect(s.histogram[9]).toBe(6);
  });

  it("no group: the shares are null", () => {
    const s = learningSignals([row("s/0/0#0", 1)], (r) => r.reward, [0, 1], true);
    expect(s).toMatchObject({ groups: 0, zeroAdvantageShare: null, allZeroShare: null, allOneShare: null });
  });

  it("answer lengths, tokens, the length cut and turns are per rewarded episode; latency per call over every attempt", () => {
    const rows = [
      row("s/0/0#0", 1, { signals: sig({ llmCalls: 2, toolCalls: 1, responseChars: 100, promptTokens: 10, completionTokens: 40, lengthCut: 1, callMs: [100, 300], callTokens: [10, 30] }) }),
      row("s/0/0#1", 0, { signals: sig({ llmCalls: 1, responseChars: 300, promptTokens: null, completionTokens: null, callMs: [200], callTokens: [null] }) }),
      row("s/0/0#2", null, { signals: sig({ llmCalls: 1, responseChars: 9999, callMs: [1000], callTokens: [100] }) }),
      row("s/0/0#3", 1, { signals: null }),
    ];
    const s = learningSignals(rows, (r) => r.reward, [0, 1], true);
    expect(s.responseChars).toEqual({ mean: 200, p95: 300, max: 300, n: 2 });
    expect(s.promptTokens).toEqual({ mean: 10, p95: 10, max: 10, n: 1 });
    expect(s.completionTokens).toEqual({ mean: 40, p95: 40, max: 40, n: 1 });
    expect(s.lengthCutShare).toBe(0.5);
    expect(s.turns).toEqual({ mean: 1.5, max: 2 });
    expect(s.toolCalls).toEqual({ mean: 0.5, max: 1 });
    // calls 100, 200, 300, 1000 ms (the failed attempt's too): p50 200, p95 1000
    expect(s.calls).toBe(4);
    expect([s.latencyP50Ms, s.latencyP95Ms]).toEqual([200, 1000]);
    // tokens over seconds of the calls that reported tokens: (10 + 30 + 100) / (0.1 + 0.3 + 1.0)
    expect(s.tokensPerSecond).toBeCloseTo(140 / 1.4, 10);
    // a per-swarm row leaves the LLM side out (an episode's measurements are not split by swarm)
    expect(learningSignals(rows, (r) => r.reward, [0, 1], false)).toMatchObject({ responseChars: null, latencyP50Ms: null, calls: 0, turns: null });
  });

  it("the step time: first claim to last end, the trainer until WEIGHT_SYNCING, the sync until ROLLING", () => {
    const rows = [row("s/0/0#0", 1, { claimedAtMs: 1_000, atMs: 5_000 }), row("s/0/0#1", 0, { claimedAtMs: 1_500, atMs: 9_000 })];
    const marks = [
      { atMs: 500, status: "ENGINE.ROLLING" }, { atMs: 9_500, status: "ENGINE.ROLLING_POST" },
      { atMs: 14_000, status: "ENGINE.WEIGHT_SYNCING" }, { atMs: 17_000, status: "ENGINE.ROLLING" },
    ];
    expect(stepTime(rows, { closedAtMs: 17_100 }, marks)).toEqual({ rolloutMs: 8_000, trainerWaitMs: 5_000, weightSyncMs: 3_000 });
    // the sync never seen (polls missed it): the trainer's turn runs to the engine seen past the step; no sync time
    expect(stepTime(rows, { closedAtMs: 17_100 }, marks.filter((m) => m.status !== "ENGINE.WEIGHT_SYNCING"))).toEqual({ rolloutMs: 8_000, trainerWaitMs: 8_100, weightSyncMs: null });
    expect(stepTime([row("s/0/0#0", null)], { closedAtMs: null }, marks)).toBeNull();
  });

  it("the metrics export puts the step time on each training window's all-rows only, with the run's histogram edges", () => {
    const rows = [row("s/0/0#0", 1, { atMs: 5_000 }), row("s/0/0#1", 0, { atMs: 6_000 }), row("e/0/0#0", 0.5, { windowIndex: null, kind: "scored" })];
    const m = runMetrics("r", rows, ["s"], ["default"], 1, { closedAtMs: { 1: 7_000 }, marks: [] });
    expect(m.histogramEdges).toEqual([0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1]);
    expect(m.groups[0]!.signals.stepTime).toEqual({ rolloutMs: 5_000, trainerWaitMs: 1_000, weightSyncMs: null });
    expect(m.groups[1]!.window).toBeNull();
    expect(m.groups[1]!.signals.stepTime).toBeNull();
  });

  it("quantiles are nearest rank; spreads of nothing are null; a one-value histogram has one bin", () => {
    expect(nearestRank([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.95)).toBe(10);
    expect(nearestRank([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.5)).toBe(5);
    expect(spread([])).toBeNull();
    expect(histogramEdges(null, null)).toEqual([]);
    expect(histogram([1, 1], histogramEdges(1, 1))).toEqual([2]);
  });
});
