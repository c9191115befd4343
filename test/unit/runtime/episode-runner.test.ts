/**
 * `runEpisode` against the in-process emulator: the happy path (claim → outcome → end → report, with the reward in
 * the emulator's step log), the outcome rules that turn into aborts (BC-22, BC-29, BC-43, EpisodeAbortError), and
 * the scheduler's acks that must stop an episode before it ends anything.
 */
import { describe, expect, it } from "vitest";
import countdown from "../../../functions/countdown.ts";
import type { RolloutFunction } from "../../../src/sdk/contract.ts";
import { runEpisode } from "../../../src/runtime/episode-runner.ts";
import { countdownTask, episodeMessage, methodsOf, recordingLogger, recordingPort, rollingEmulator, runnerDeps, SWARM_A, SwarmNet } from "./_harness.ts";

/** A function that asks the LLM once (so the engine keeps the episode), then returns `result()`. */
async function setup(functions: Record<string, RolloutFunction>, script: Parameters<typeof recordingPort>[0] = {}) {
  const { emu, clock } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
  const net = new SwarmNet().add(SWARM_A, "default", emu);
  const port = recordingPort(script);
  const log = recordingLogger();
  const deps = runnerDeps(net, port, functions, { log });
  return { emu, clock, net, port, log, deps };
}

describe("runEpisode: a train episode that ends", () => {
  it("a countdown episode ends with its reward: claimed → outcome(end) → reported(ended), and the step log has it", async () => {
    const { emu, net, port, deps } = await setup({ countdown });
    emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
    const task = countdownTask(0);
    const msg = episodeMessage(task, {}, deps.now());

    const result = await runEpisode(msg, deps);

    expect(methodsOf(port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeReported"]);
    const [claimed, recorded, reported] = port.calls;
    if (claimed?.method !== "episodeClaimed" || recorded?.method !== "episodeOutcomeRecorded" || reported?.method !== "episodeReported") throw new Error("order");
    expect(claimed.report).toMatchObject({ episodeKey: msg.episodeKey, attempt: 1, dispatchId: 1 });
    expect(claimed.report.claims).toHaveLength(1);
    const uuid = claimed.report.claims[0]!.episodeUuid;
    expect(claimed.report.claims[0]).toMatchObject({ swarm: "default", globalStep: emu.engine.globalStep });
    expect(recorded.report.outcome).toEqual({ kind: "end", reward: 1 });
    expect(recorded.report.outputs?.default).toMatchObject({ reward: 1, is_success: true });
    expect(reported.report).toMatchObject({ episodeKey: msg.episodeKey, attempt: 1, result: "ended" });
    expect(result).toEqual({ kind: "reported", result: "ended", outcome: { kind: "end", reward: 1 } });

    const logged = emu.stepLog.flatMap((s) => s.episodes).filter((e) => e.episodeUuid === uuid);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ taskId: task.task_id, reward: 1, clientUuid: msg.clientUuid, llmCallCount: 1, dropped: false });
    expect(net.to("/end_episode", uuid)).toHaveLength(1);
    expect(net.to("/abort_episode", uuid)).toHaveLength(0);
    expect(deps.limiter.active).toBe(0);
    expect(deps.budget!.reserved).toBe(0);
  });

  it("the claim carries the run's client uuid, episode type, discard timeout and throttle policy", async () => {
    const { net, deps } = await setup({ countdown });
    const policy = { ratio: 1.5, expected_batch_size: 8, expected_num_repeat: 4, current_task_id: "countdown:test:0" };
    const msg = episodeMessage(countdownTask(0), { throttlePolicy: policy as never, discardEpisodeTimeoutSeconds: 90 }, deps.now());
    await runEpisode(msg, deps);
    const [claim] = net.to("/claim_episode");
    expect(claim?.body).toMatchObject({ client_uuid: msg.clientUuid, episode_type: "train", discard_episode_timeout: 90, throttle_policy: { current_task_id: "countdown:test:0" } });
  });
});
