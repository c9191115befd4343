import { describe, expect, it } from "vitest";
import { runSummary } from "../../../src/scheduler/index.ts";
import { rollingRun, specInput } from "./harness.ts";

describe("runSummary", () => {
  it("lists dropped groups (BC-32), failures by cause and per-step mean rewards", () => {
    const { h, sent } = rollingRun(specInput({ batchSize: 2, numRepeat: 1, maxAttempts: 1, maxParallel: 2 }));
    const [bad, good] = sent;
    h.finishEpisode(good!, 0.25, 1);
    h.claim(bad!, 1);
    h.outcome(bad!, { kind: "abort", cause: "invalid_reward" });
    h.report(bad!, "aborted");
    const [replacement] = h.takeDispatches();
    h.finishEpisode(replacement!, 0.75, 1);
    const summary = runSummary(h.state);
    expect(summary.droppedGroups).toEqual([bad!.groupKey]);
    expect(summary.failuresByCause).toEqual({ invalid_reward: 1 });
    expect(summary.steps).toEqual([
      expect.objectContaining({ windowIndex: 0, globalStep: 1, episodesEnded: 2, meanReward: 0.5, groupsCompleted: 2, groupsDropped: 1, replacementGroups: 1 }),
    ]);
    expect(summary.totals).toMatchObject({ windows: 1, episodesEnded: 2, meanReward: 0.5, groupsOpened: 3, attemptsFailed: 1 });
    expect(summary).toMatchObject({ phase: "running", finishedAtMs: null, wallTimeMs: null });
  });
});
