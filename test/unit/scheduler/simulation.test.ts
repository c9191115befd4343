/**
 * A simple simulation: the core driven by a fake swarm server and fake consumers (pure, in the test, 1 s clock
 * steps): 3 training steps of batch 8 × numRepeat 4. The expected summary is computed from what the fake server saw.
 */
import { describe, expect, it } from "vitest";
import { nextWakeAtMs, type EpisodeDispatch, type FinishRun } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

const reward = (taskIndex: number, repeat: number) => ((taskIndex + repeat) % 3) / 2;
const durationMs = (taskIndex: number) => (5 + (taskIndex % 7)) * 1000;
const TRAIN_MS = 20_000;

interface Running {
  d: EpisodeDispatch;
  doneAtMs: number;
  step: number;
}

describe("simulation with a fake server", () => {
  it("serves 3 steps of batch 8 × numRepeat 4 and reports the summary the server saw", () => {
    const h = new Harness(specInput({ batchSize: 8, numRepeat: 4, maxParallel: 12, maxSteps: 3 }), { gsm8k: 200 });
    const server = { status: "ENGINE.BOOTING", step: 1, batch: new Map<string, number[]>(), trainUntilMs: 0 };
    const batches: Map<string, number[]>[] = [];
    const firstDispatchAtMs: number[] = [];
    const rolledAtMs: number[] = [];
    const inbox: EpisodeDispatch[] = [];
    const running: Running[] = [];
    let handled = 0;
    let wake: number | null = null;

    const execute = () => {
      for (; handled < h.commands.length; handled++) {
        const c = h.commands[handled]!;
        if (c.type === "pollEngineStatus") {
          h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: server.status, globalStep: server.step });
          if (server.status === "ENGINE.ROLLING" && rolledAtMs.length < server.step - 1) rolledAtMs.push(h.nowMs);
        }
        if (c.type === "dispatchEpisodes") {
          for (const d of c.episodes) if (firstDispatchAtMs[d.windowIndex ?? 0] === undefined) firstDispatchAtMs[d.windowIndex ?? 0] = h.nowMs;
          inbox.push(...c.episodes);
        }
      }
      wake = nextWakeAtMs(h.state);
    };

    h.start();
    execute();
    for (let i = 0; i < 2000 && h.state.run.phase !== "finished"; i++) {
      h.nowMs += 1000;
      // the engine: boot, then close a batch once batchSize tasks have numRepeat episodes, train, roll again
      if (server.status === "ENGINE.BOOTING" && i === 3) server.status = "ENGINE.ROLLING";
      const full = [...server.batch.values()].filter((r) => r.length >= 4).length >= 8;
      if (server.status === "ENGINE.ROLLING" && full) server.status = "ENGINE.ROLLING_POST";
      else if (server.status === "ENGINE.ROLLING_POST" && running.length === 0) {
        server.status = "ENGINE.WEIGHT_SYNCING";
        server.trainUntilMs = h.nowMs + TRAIN_MS;
        batches.push(server.batch);
        server.batch = new Map();
      } else if (server.status === "ENGINE.WEIGHT_SYNCING" && h.nowMs >= server.trainUntilMs) {
        server.status = "ENGINE.ROLLING";
        server.step++;
      }
      // consumers: claim what was delivered, finish what is done
      for (const d of inbox.splice(0)) {
        if (server.status !== "ENGINE.ROLLING") {
          h.apply({ type: "claimFailed", episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, kind: "notReady" });
          continue;
        }
        const ack = h.claim(d, server.step).ack;
        if (ack.status === "applied") running.push({ d, doneAtMs: h.nowMs + durationMs(d.taskIndex), step: server.step });
      }
      for (const r of running.filter((x) => x.doneAtMs <= h.nowMs)) {
        running.splice(running.indexOf(r), 1);
        const value = reward(r.d.taskIndex, r.d.repeat);
        h.outcome(r.d, { kind: "end", reward: value });
        const key = r.d.groupKey;
        server.batch.set(key, [...(server.batch.get(key) ?? []), value]);
        h.report(r.d, "ended");
      }
      execute();
      if (wake !== null && h.nowMs >= wake) {
        h.apply({ type: "tick" });
        execute();
      }
    }

    expect(h.state.run.phase).toBe("finished");
    expect(batches).toHaveLength(3);
    // every batch the server closed holds exactly one window: 8 task groups × 4 episodes, all from that window
    batches.forEach((batch, w) => {
      expect([...batch.values()].map((r) => r.length)).toEqual(Array(8).fill(4));
      const windowKeys = h.dispatched().filter((d) => d.windowIndex === w).map((d) => d.groupKey);
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
