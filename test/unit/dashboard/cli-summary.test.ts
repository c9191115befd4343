/** `ajet-edge dev`'s summary of a multi-model run shows every swarm server's reward (render `swarmRewardsOf`). */
import { describe, expect, it } from "vitest";
import { renderSummary, swarmRewardsOf } from "../../../src/cli/dev/render.ts";
import { parseDevArgs } from "../../../src/cli/dev/options.ts";
import type { MetricsGroup } from "../../../src/edge/run/board/metrics.ts";
import { learningSignals } from "../../../src/edge/run/board/signals.ts";

const group = (window: number, swarm: string, rewardMean: number, ended = 4): MetricsGroup => ({
  window, globalStep: window, source: "*", swarm, attempts: ended, ended, wiped: 0, scored: 0, failed: 0, rewardMean, rewardStd: 0, rewardMin: rewardMean,
  rewardMax: rewardMean, successRate: null, durationMeanMs: null, durationMaxMs: null, failuresByCause: {}, logMetrics: {},
  signals: learningSignals([], () => null, [], true),
});

describe("dev summary of a two-model run", () => {
  it("adds one reward column per swarm server, per step and in total", () => {
    const rewards = swarmRewardsOf({ groups: [group(1, "*", 0.5), group(1, "student", 0.5), group(1, "teacher", 0.25), group(2, "*", 0.75), group(2, "student", 0.75), group(2, "teacher", 0.75, 12)] });
    expect(rewards).toEqual({ student: { steps: { 1: 0.5, 2: 0.75 }, total: 0.625 }, teacher: { steps: { 1: 0.25, 2: 0.75 }, total: 0.625 } });
    const step = (windowIndex: number, meanReward: number) => ({ windowIndex, globalStep: windowIndex + 1, episodesEnded: 4, meanReward, wallTimeMs: 1000 });
    const text = renderSummary(
      { steps: [step(0, 0.5), step(1, 0.75)] as never, totals: { episodesEnded: 8, meanReward: 0.625 } as never, stopReason: "maxSteps", failuresByCause: {}, droppedGroups: [], wallTimeMs: 2000, episodeType: "train" },
      { episodesPerStep: 4, swarmRewards: rewards },
    );
    const lines = text.split("\n");
    expect(lines[0]).toMatch(/mean reward\s+reward student\s+reward teacher\s+wall time/);
    expect(lines[1]).toMatch(/0\.500\s+0\.500\s+0\.250/);
    expect(lines[3]).toMatch(/^total.*0\.625\s+0\.625\s+0\.625/);
  });

  it("--log-level takes debug, info, warn or error (default warn) and names the flag otherwise", () => {
    expect(parseDevArgs([])!.logLevel).toBe("warn");
    expect(parseDevArgs(["--log-level", "info"])!.logLevel).toBe("info");
    expect(() => parseDevArgs(["--log-level", "loud"])).toThrow(/--log-level must be debug, info, warn or error/);
  });
});
