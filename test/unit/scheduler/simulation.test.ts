/**
 * A simple simulation: the core driven by a fake swarm server and fake consumers (pure, in the test, 1 s clock
 * steps): 3 training steps of batch 8 × numRepeat 4. The expected summary is computed from what the fake server saw.
 */
import { describe, expect, it } from "vitest";
import type { FinishRun } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";
import { runWithFakeSwarm, taskIdOf } from "./fake-swarm.ts";

const reward = (taskIndex: number, repeat: number) => ((taskIndex + repeat) % 3) / 2;
const TRAIN_MS = 20_000;

describe("simulation with a fake server", () => {
  it("serves 3 steps of batch 8 × numRepeat 4 and reports the summary the server saw", () => {
    const h = new Harness(specInput({ batchSize: 8, numRepeat: 4, maxParallel: 12, maxSteps: 3 }), { gsm8k: 200 });
    const { batches, rolledAtMs, firstDispatchAtMs } = runWithFakeSwarm(h, { reward: (d) => reward(d.taskIndex, d.repeat), trainMs: TRAIN_MS });

    expect(h.state.run.phase).toBe("finished");
    expect(batches).toHaveLength(3);
    // every batch the server closed holds exactly one window: 8 task groups × 4 episodes, all from that window
    batches.forEach((batch, w) => {
      expect([...batch.values()].map((r) => r.length)).toEqual(Array(8).fill(4));
      const windowKeys = h.dispatched().filter((d) => d.windowIndex === w).map(taskIdOf);
      expect(new Set(windowKeys)).toEqual(new Set(batch.keys()));
    });
    const summary = h.commands.find((c): c is FinishRun => c.type === "finishRun")?.summary;
    expect(summary?.stopReason).toBe("maxSteps");
    expect(summary?.steps).toEqual(
      batches.map((batch, w) => {
        const rewards = [...batch.values()].flat();
        return expect.objectContaining({
          windowIndex: w,
          globalStep: w + 1,
          episodesEnded: 32,
          meanReward: rewards.reduce((a, b) => a + b, 0) / rewards.length,
          wallTimeMs: (rolledAtMs[w] ?? NaN) - (firstDispatchAtMs[w] ?? NaN),
          groupsCompleted: 8,
          groupsDropped: 0,
        });
      }),
    );
    const all = batches.flatMap((b) => [...b.values()].flat());
    expect(summary?.totals).toMatchObject({ windows: 3, episodesEnded: 96, groupsCompleted: 24, meanReward: all.reduce((a, b) => a + b, 0) / 96 });
    expect(summary?.wallTimeMs).toBe((summary?.finishedAtMs ?? 0) - (summary?.startedAtMs ?? 0));
    expect(summary?.steps.every((s) => (s.wallTimeMs ?? 0) > TRAIN_MS)).toBe(true);
  });
});
