import { describe, expect, it } from "vitest";
import { evalReport, unbiasedPassAtK, type FinishRun } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

describe("unbiased pass@k", () => {
  it("is 1 − C(n−c, k)/C(n, k)", () => {
    expect(unbiasedPassAtK(4, 1, 1)).toBeCloseTo(0.25, 12);
    expect(unbiasedPassAtK(5, 2, 2)).toBeCloseTo(1 - 3 / 10, 12);
    expect(unbiasedPassAtK(10, 3, 4)).toBeCloseTo(1 - 35 / 210, 12); // C(7,4)=35, C(10,4)=210
    expect(unbiasedPassAtK(4, 0, 4)).toBe(0);
    expect(unbiasedPassAtK(4, 1, 4)).toBe(1);
    expect(() => unbiasedPassAtK(3, 4, 1)).toThrow(RangeError);
  });
});

describe("eval runs (spec §5.8)", () => {
  it("runs each task's group once without windows, then reports per-task rewards, pass@k and means", () => {
    const h = new Harness(specInput({ episodeType: "eval", numRepeat: 3, maxParallel: 4, datasets: [{ name: "a" }, { name: "b" }], successThreshold: 1 }), { a: 2, b: 1 });
    h.start();
    h.engine("ENGINE.WEIGHT_SYNCING", 1);
    expect(h.takeDispatches()).toEqual([]); // eval claims still need ROLLING
    h.rolling(1);
    const scores = new Map<string, number[]>();
    const rewardOf = (taskIndex: number, source: string, repeat: number) => (source === "a" && taskIndex === 0 ? [1, 0, 0][repeat]! : source === "b" ? 0.5 : 1);
    for (let batch = h.takeDispatches(); batch.length; batch = h.takeDispatches()) {
      for (const d of batch) {
        expect(d).toMatchObject({ episodeType: "eval", throttle: null, windowIndex: null });
        const r = rewardOf(d.taskIndex, d.source, d.repeat);
        h.claim(d, 1);
        h.outcome(d, { kind: "score", reward: r });
        h.report(d, "aborted"); // the consumer aborts after scoring
        scores.set(d.groupKey, [...(scores.get(d.groupKey) ?? []), r]);
      }
    }
    expect(h.state.run).toMatchObject({ phase: "finished", stopReason: "epochsDone", windowsOpened: 0 });
    expect(Object.keys(h.state.steps)).toEqual([]);
    const report = evalReport(h.state);
    expect(report.k).toBe(3);
    expect(report.tasks.map((t) => [t.groupKey, t.rewards, t.successes, t.passAtK, t.passAt1])).toEqual(
      [...scores.entries()].sort(([x], [y]) => x.localeCompare(y)).map(([key, rs]) => {
        const c = rs.filter((r) => r >= 1).length;
        return [key, rs, c, c > 0 ? 1 : 0, c / rs.length];
      }),
    );
    expect(report.bySource.b).toEqual({ tasks: 1, scoredTasks: 1, episodes: 3, meanReward: 0.5, passAtK: 0, passAt1: 0 });
    expect(report.bySource.a).toMatchObject({ tasks: 2, episodes: 6, passAtK: 1, passAt1: (1 / 3 + 1) / 2 });
    expect(report.overall.meanReward).toBeCloseTo((1 + 0 + 0 + 3 + 1.5) / 9, 12);
    expect(evalReport(h.state, { successThreshold: 0.5 }).bySource.b?.passAtK).toBe(1);
    const summary = h.commands.find((c): c is FinishRun => c.type === "finishRun")?.summary;
    expect(summary).toMatchObject({ episodeType: "eval", steps: [], totals: { episodesEnded: 9, groupsCompleted: 3 } });
  });

  it("covers every source even when one is exhausted first, and reports repeats never scored as missing", () => {
    const h = new Harness(specInput({ episodeType: "eval", numRepeat: 2, maxParallel: 2, maxAttempts: 1, datasets: [{ name: "a", weight: 10 }, { name: "b" }] }), { a: 1, b: 3 });
    h.start();
    h.rolling(1);
    for (let batch = h.takeDispatches(); batch.length; batch = h.takeDispatches()) {
      for (const d of batch) {
        h.claim(d, 1);
        if (d.source === "b" && d.taskIndex === 0 && d.repeat === 1) {
          h.outcome(d, { kind: "abort", cause: "infra_error" });
        } else h.outcome(d, { kind: "score", reward: 1 });
        h.report(d, "aborted");
      }
    }
    const report = evalReport(h.state);
    expect(report.tasks.map((t) => t.groupKey).sort()).toEqual(["a/0/0", "b/0/0", "b/0/1", "b/0/2"]);
    const failed = report.tasks.find((t) => t.groupKey === "b/0/0");
    expect(failed).toMatchObject({ rewards: [1], scored: 1, resolution: "dropped", passAtKUnbiased: null });
    expect(h.state.run.failuresByCause).toEqual({ infra_error: 1 });
  });

  it("keeps the live eval groups bounded while claims keep failing (no groups opened for backed-off slots)", () => {
    const h = new Harness(specInput({ episodeType: "eval", numRepeat: 2, maxParallel: 4 }), { gsm8k: 1000 });
    h.start();
    h.rolling(1);
    for (let round = 0; round < 20; round++) {
      for (const d of h.takeDispatches()) h.apply({ type: "claimFailed", episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, kind: "noEpisodes" });
      h.advance(70_000);
      expect(Object.keys(h.state.episodes).length).toBeLessThanOrEqual(4 + 1);
    }
    expect(h.state.run.totals.groupsOpened).toBe(2);
  });
});
