/**
 * GSM8K end to end: the first 16 test tasks, num_repeat 4, batch 4, 2 training steps, function math-agent, through
 * the emulator (simulated engine and policy), the Worker in local workerd, the RolloutScheduler DO, the episode
 * queue and the math-agent. The DO's per-step counts must equal what the server accepted, every episode must be
 * ended exactly once, and nothing may be left claimed.
 */
import { afterAll, expect, it } from "vitest";
import { describeShared, sharedPath } from "../support/shared.ts";
import { episodeBuffer, runToEnd, startRig, stepsByGlobalStep, type E2eRig } from "./_support.ts";

describeShared("e2e: GSM8K through emulator, local workerd, DO, queue and math-agent", () => {
  let rig: E2eRig | undefined;
  afterAll(async () => {
    await rig?.session.close();
  });

  it("reports each episode the server counted exactly once, with the server's counts, and leaves nothing claimed", async () => {
    rig = await startRig([
      "--dataset", sharedPath("data/gsm8k/test.jsonl"), "--function", "math-agent", "--limit", "16",
      "--num-repeat", "4", "--batch-size", "4", "--steps", "2",
    ]);
    const firstTaskIds = new Set(Array.from({ length: 16 }, (_, i) => `gsm8k:test:${i}`));
    const status = await runToEnd(rig);

    expect(status.stopReason).toBe("maxSteps");
    expect(status.steps.map((s) => s.globalStep)).toEqual([1, 2]);
    // global step advanced twice: the engine trained both windows and is at step 3
    expect(rig.emulator.emulator.engine.globalStep).toBe(3);
    const serverSteps = stepsByGlobalStep(rig.emulator);
    expect([...serverSteps.keys()]).toEqual([1, 2]);

    const accepted = new Set<string>();
    for (const step of status.steps) {
      const server = serverSteps.get(step.globalStep!)!;
      const kept = server.episodes.filter((e) => !e.dropped);
      expect(kept).toHaveLength(server.episodes.length); // no zero-call or invalid-reward episode reached the engine
      expect(step.episodesEnded).toBe(16);
      expect(step.episodesEnded).toBe(kept.length);
      expect(step.meanReward).toBeCloseTo(server.meanReward!, 12);
      expect(server.completedTaskIds).toHaveLength(4);
      // run-scoped on the wire: the dataset's id, then the run's short tag
      for (const id of server.completedTaskIds) expect({ id, ok: firstTaskIds.has(id.replace(/@[0-9a-f]{8}$/, "")) }).toEqual({ id, ok: true });
      for (const id of server.completedTaskIds) expect(id.endsWith(`@${status.runId.slice(-8)}`)).toBe(true);
      for (const e of kept) {
        expect(accepted.has(e.episodeUuid)).toBe(false);
        accepted.add(e.episodeUuid);
      }
    }
    // identity, not just counts: the DO's ledger of accepted episodes is exactly the server's, step by step
    for (const step of [1, 2]) {
      const ledger = await rig.api.endedEpisodes(status.runId, step);
      const server = serverSteps.get(step)!.episodes.filter((e) => !e.dropped);
      expect(ledger.map((e) => e.episodeUuid).sort()).toEqual(server.map((e) => e.episodeUuid).sort());
      const byUuid = new Map(server.map((e) => [e.episodeUuid, e]));
      for (const e of ledger) expect({ taskId: e.taskId, reward: e.reward }).toEqual({ taskId: byUuid.get(e.episodeUuid)!.taskId, reward: byUuid.get(e.episodeUuid)!.reward });
      expect(new Set(ledger.map((e) => `${e.episodeKey}@${e.attempt}`)).size).toBe(ledger.length); // each episode once
    }
    // one client uuid for the whole run (the DO's), and exactly one /end_episode per accepted episode
    expect(new Set([...serverSteps.values()].flatMap((s) => s.episodes.map((e) => e.clientUuid))).size).toBe(1);
    expect([...rig.endRequests.keys()].sort()).toEqual([...accepted].sort());
    expect([...rig.endRequests.values()].every((n) => n === 1)).toBe(true);
    expect(status.totals.episodesEnded).toBe(32);
    expect(status.episodes.inFlight).toBe(0);
    expect((await episodeBuffer(rig.emulator)).filter((r) => r.episode_status === "claimed")).toEqual([]);
  });
});
