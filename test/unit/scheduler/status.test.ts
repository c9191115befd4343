import { describe, expect, it } from "vitest";
import { runStatus, runSummary } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

describe("runStatus (GET /runs/:id)", () => {
  it("shows phase, engine, global step, the open window, episodes in flight, failures and source progress", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 2, maxParallel: 3, datasets: [{ name: "a", weight: 1 }, { name: "b", weight: 1 }] }), { a: 5, b: 7 });
    const created = runStatus(h.state);
    expect(created).toMatchObject({ phase: "created", gateOpen: false, currentWindow: null, nextWakeAtMs: null });
    h.start();
    h.rolling(4);
    const sent = h.takeDispatches();
    h.finishEpisode(sent[0]!, 0.5, 4);
    h.claim(sent[1]!, 4);
    h.outcome(sent[1]!, { kind: "abort", cause: "no_llm_call" });
    h.report(sent[1]!, "aborted");
    const s = runStatus(h.state);
    expect(s).toMatchObject({
      phase: "running", episodeType: "train", gateOpen: true, globalStep: 4,
      engines: [{ swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 4, seenAtMs: h.nowMs }],
      currentWindow: { windowIndex: 0, globalStep: 4, groupsOpened: 2, groupsResolved: 0, episodesEnded: 1, meanReward: 0.5, waitingForEngine: false },
      failuresByCause: { no_llm_call: 1 },
    });
    expect(s.episodes).toMatchObject({ ended: 1, inFlight: 3, maxParallel: 3 });
    expect(s.episodes.queued + s.episodes.dispatched + s.episodes.running + s.episodes.reporting + s.episodes.ended).toBe(4);
    expect(s.sources).toEqual([
      { name: "a", weight: 1, taskCount: 5, epoch: 0, position: 1, exhausted: false, deferred: 0, tasksServed: 1, tasksTotal: 5 },
      { name: "b", weight: 1, taskCount: 7, epoch: 0, position: 1, exhausted: false, deferred: 0, tasksServed: 1, tasksTotal: 7 },
    ]);
    expect(s.steps).toEqual([expect.objectContaining({ windowIndex: 0, episodesEnded: 1, meanReward: 0.5, wallTimeMs: null })]);
    expect(s.nextWakeAtMs).toBeGreaterThan(h.nowMs);
  });

  it("says when a resolved window waits for the engine, and the summary's wall time runs from first dispatch to the next ROLLING", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 1 }));
    h.start();
    h.rolling(1);
    const t0 = h.nowMs;
    h.serveAll(1);
    expect(runStatus(h.state).currentWindow?.waitingForEngine).toBe(true);
    h.nowMs += 42_000;
    h.rolling(2);
    expect(runSummary(h.state).steps[0]).toMatchObject({ wallTimeMs: 42_000, globalStep: 1, episodesEnded: 1 });
    expect(h.state.steps["0"]?.firstDispatchAtMs).toBe(t0);
  });
});
