/**
 * Verdicts across stop and sync (issue 25): a stop while the engine trains the batch holding the run's rewards counts
 * them trained once the sync shows it, and waits a bounded time for a batch the engine is draining to reach its sync.
 */
import { describe, expect, it } from "vitest";
import type { FinishRun } from "../../../src/scheduler/index.ts";
import { STOP_UNKNOWN_GRACE_MS } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

/** A run of two 1-task steps whose first step's reward was accepted at step 1. */
function oneLanded() {
  const h = new Harness(specInput({ batchSize: 1, numRepeat: 1, maxParallel: 1, maxSteps: 2 }));
  h.start();
  h.rolling(1);
  const [d] = h.takeDispatches();
  h.finishEpisode(d!, 1, 1);
  return h;
}
const summaryOf = (h: Harness) => h.commands.find((c): c is FinishRun => c.type === "finishRun")?.summary;

describe("a stop while the engine trains the run's batch", () => {
  it("WEIGHT_SYNCING at the batch's step seen before the stop: its rewards count trained, the run stops at once", () => {
    const h = oneLanded();
    h.engine("ENGINE.ROLLING_POST", 1);
    h.engine("ENGINE.WEIGHT_SYNCING", 1);
    h.apply({ type: "stopRequested" });
    expect(h.state.run.phase).toBe("finished");
    expect(h.state.run.untrainedRewards).toBe(0);
    expect(summaryOf(h)).toMatchObject({ untrainedRewards: 0 });
  });

  it("ROLLING_POST (draining) at the stop: the run waits for the sync, then counts it trained", () => {
    const h = oneLanded();
    h.engine("ENGINE.ROLLING_POST", 1);
    h.apply({ type: "stopRequested" });
    expect(h.state.run.phase).toBe("draining");
    h.advance(1_000);
    h.engine("ENGINE.WEIGHT_SYNCING", 1);
    h.advance(1_000);
    expect(h.state.run.phase).toBe("finished");
    expect(h.state.run.untrainedRewards).toBe(0);
  });

  it("a drain that never reaches its sync: the stop finishes after the bounded wait and reports the rewards untrained", () => {
    const h = oneLanded();
    h.engine("ENGINE.ROLLING_POST", 1);
    h.apply({ type: "stopRequested" });
    h.advance(STOP_UNKNOWN_GRACE_MS - 1_000);
    expect(h.state.run.phase).toBe("draining");
    h.advance(2_000);
    h.advance(10_000);
    expect(h.state.run.phase).toBe("finished");
    expect(h.state.run.untrainedRewards).toBe(1);
  });

  it("a stop while the batch still lacks tasks (ROLLING, the pool's target not reached): no wait, its rewards untrained", () => {
    const h = oneLanded();
    h.answerTopUps = false; // its top-up ask is not answered before the stop
    const uuid = h.state.run.totals.episodesEnded === 1 ? [...Object.values(h.state.batches)][0]!.episodes.keySeq().first()! : "";
    h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 1, pool: { globalStep: 1, completedTasks: 1, completedTaskTarget: 2, episodeUuids: [uuid], taskEpisodes: { t: [uuid] }, runningTaskIds: {} } });
    h.apply({ type: "stopRequested" });
    expect(h.state.run.phase).toBe("finished");
    expect(h.state.run.untrainedRewards).toBe(1);
  });
});

describe("a stop while the run's batch is complete but still seen ROLLING", () => {
  it("waits for the engine's next status: a sync (or the next step) counts it trained", () => {
    const h = oneLanded(); // batch size 1: the landed task completes the batch
    h.apply({ type: "stopRequested" });
    expect(h.state.run.phase).toBe("draining");
    h.advance(1_000);
    h.rolling(2);
    h.advance(1_000);
    expect(h.state.run.phase).toBe("finished");
    expect(h.state.run.untrainedRewards).toBe(0);
  });
});
