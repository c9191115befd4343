/**
 * A whole run inside the Workers pool: `POST /runs`, the Durable Object polls the emulator (a real socket on
 * 127.0.0.1), dispatches episodes to the queue, the pool delivers them to this Worker's `queue` handler, which
 * claims, runs countdown, ends and reports; the run finishes once the engine trained its one step.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { RunView } from "../../src/edge/run/run-views.ts";
import { countdownSpec, createRun, TestEmulator } from "./support.ts";

describe("a run end to end", () => {
  it("one window of 2 tasks × 2 repeats: 4 episodes ended once each on the emulator, the run finishes with maxSteps", async () => {
    const emu = await TestEmulator.start({ policy: { initialAccuracy: 1, malformedRate: 0 }, answerKey: [{ target: 24, nums: [2, 3, 4] }] });
    await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
    const { stub } = await createRun(countdownSpec(emu.url, { maxSteps: 1, tuning: { statusPollRollingMs: 100, statusPollWaitingMs: 100 } }));

    let view = (await stub.status()) as unknown as RunView;
    for (let i = 0; i < 400 && view.phase !== "finished"; i++) {
      await runDurableObjectAlarm(stub); // the alarm also fires by itself; running it now only makes the test quicker
      await new Promise((r) => setTimeout(r, 10));
      view = (await stub.status()) as unknown as RunView;
    }

    expect(view.phase).toBe("finished");
    expect(view.stopReason).toBe("maxSteps");
    const state = await emu.state();
    const accepted = state.stepLog.flatMap((s) => s.episodes);
    expect(accepted).toHaveLength(4);
    expect(view.totals).toMatchObject({ episodesEnded: 4, groupsCompleted: 2, dispatches: 4, attemptsFailed: 0, claimFailures: 0 });
    expect(view.totals.meanReward).toBe(accepted.reduce((s, e) => s + (e.reward ?? 0), 0) / accepted.length);
    // two task groups of two repeats each, all under the run's one client uuid, at the window's global step
    const byTask = new Map<string, number>();
    for (const e of accepted) byTask.set(e.taskId, (byTask.get(e.taskId) ?? 0) + 1);
    expect([...byTask.values()]).toEqual([2, 2]);
    expect(new Set(accepted.map((e) => e.clientUuid)).size).toBe(1);
    expect(state.stepLog.map((s) => s.globalStep)).toEqual([1]);
    // every claim was ended exactly once, nothing aborted, nothing left claimed
    const requests = await emu.requests();
    const ends = requests.filter((r) => r.path === "/end_episode");
    expect(ends.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(new Set(ends.map((r) => r.body.episode_uuid)).size).toBe(4);
    expect(requests.filter((r) => r.path === "/abort_episode")).toHaveLength(0);
    expect(state.records.filter((r) => r.episode_status === "claimed")).toHaveLength(0);
    // the throttle policy names each episode's own task (spec §7)
    const claims = requests.filter((r) => r.path === "/claim_episode" && r.body.throttle_policy);
    expect(claims.length).toBeGreaterThanOrEqual(4);
    expect(claims.every((r) => r.body.throttle_policy.current_task_id.startsWith("cd:"))).toBe(true);

    const report = (await stub.report()) as { summary: { totals: { episodesEnded: number } } };
    expect(report.summary.totals.episodesEnded).toBe(4);
  });
});
