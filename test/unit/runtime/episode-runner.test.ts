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

describe("runEpisode: the function starts while the claim is reported (a run without secrets)", () => {
  /** A port whose claim answer is held until `release(ack)`; records when the function first ran. */
  function heldClaimAnswer() {
    let release: (ack: { status: "applied" } | { status: "stale"; reason: string }) => void = () => {};
    const answer = new Promise<{ status: "applied" } | { status: "stale"; reason: string }>((resolve) => (release = resolve));
    return { release: (ack: Parameters<typeof release>[0]) => release(ack), script: { episodeClaimed: () => answer } };
  }

  it("the function's first LLM call goes out before the claim report is answered, and the outcome is recorded only after it", async () => {
    const held = heldClaimAnswer();
    const events: string[] = [];
    const fn: RolloutFunction = {
      ...countdown,
      name: "early",
      async run(task, ctx) {
        events.push("function started");
        const out = await countdown.run(task, ctx);
        events.push("function done");
        held.release({ status: "applied" });
        return out;
      },
    };
    const { emu, port, deps } = await setup({ early: fn }, held.script);
    emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
    const msg = episodeMessage(countdownTask(0), { functionName: "early", runHasSecrets: false }, deps.now());
    const result = await runEpisode(msg, deps);
    expect(events).toEqual(["function started", "function done"]);
    expect(methodsOf(port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeReported"]);
    expect(result).toEqual({ kind: "reported", result: "ended", outcome: { kind: "end", reward: 1 } });
  });

  it("a stale claim answer stops the running function, gives the claim back and records no outcome", async () => {
    const held = heldClaimAnswer();
    let sawStop = false;
    const fn: RolloutFunction = {
      ...countdown,
      name: "early",
      async run(_task, ctx) {
        held.release({ status: "stale", reason: "dispatch 2 is current" });
        await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
        sawStop = true;
        return { reward: 0 };
      },
    };
    const { net, port, deps } = await setup({ early: fn }, held.script);
    const msg = episodeMessage(countdownTask(0), { functionName: "early", runHasSecrets: false }, deps.now());
    const result = await runEpisode(msg, deps);
    expect(sawStop).toBe(true);
    expect(result).toEqual({ kind: "stale", reason: "dispatch 2 is current" });
    expect(methodsOf(port.calls)).toEqual(["episodeClaimed"]);
    const [claim] = port.calls;
    const uuid = claim?.method === "episodeClaimed" ? claim.report.claims[0]!.episodeUuid : "";
    expect(net.to("/abort_episode", uuid)).toHaveLength(1);
    expect(net.to("/end_episode", uuid)).toHaveLength(0);
  });

  it("a redelivered message waits for the claim answer before the function starts (its attempt is likely stale)", async () => {
    let answered = false;
    let startedBeforeAnswer = false;
    const fn: RolloutFunction = { ...countdown, name: "early", async run(task, ctx) { startedBeforeAnswer = !answered; return countdown.run(task, ctx); } };
    const { emu, deps } = await setup({ early: fn }, { episodeClaimed: async () => { const ack = await new Promise<{ status: "applied" }>((r) => setTimeout(() => r({ status: "applied" }), 20)); answered = true; return ack; } });
    emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
    const msg = episodeMessage(countdownTask(0), { functionName: "early", runHasSecrets: false }, deps.now());
    await runEpisode(msg, { ...deps, redelivery: true });
    expect(startedBeforeAnswer).toBe(false);
  });

  it("a run with secrets waits for the claim answer before the function starts (the secrets come with it)", async () => {
    let answered = false;
    let startedBeforeAnswer = false;
    const fn: RolloutFunction = { ...countdown, name: "early", async run(task, ctx) { startedBeforeAnswer = !answered; return countdown.run(task, ctx); } };
    const { emu, deps } = await setup({ early: fn }, { episodeClaimed: async () => { const ack = await new Promise<{ status: "applied" }>((r) => setTimeout(() => r({ status: "applied" }), 20)); answered = true; return ack; } });
    emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
    const msg = episodeMessage(countdownTask(0), { functionName: "early", runHasSecrets: true }, deps.now());
    await runEpisode(msg, deps);
    expect(startedBeforeAnswer).toBe(false);
  });
});
