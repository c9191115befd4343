/**
 * A transient LLM failure inside an episode (the proxy answers 429 or 500) is sent again by the runtime and the
 * episode ends with its reward, instead of burning an attempt; a failure that persists is bounded.
 */
import { describe, expect, it } from "vitest";
import countdown from "../../../functions/countdown.ts";
import { runEpisode } from "../../../src/runtime/episode-runner.ts";
import { countdownTask, episodeMessage, recordingPort, rollingEmulator, runnerDeps, SWARM_A, SwarmNet } from "./_harness.ts";

async function run(failFirst: number, status: number) {
  const { emu } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
  emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
  emu.hooks.chatCompletion = (call) => (call.callIndex <= failFirst ? { status, body: { error: { message: "busy" } } } : undefined);
  const net = new SwarmNet().add(SWARM_A, "default", emu);
  const deps = runnerDeps(net, recordingPort(), { countdown });
  const result = await runEpisode(episodeMessage(countdownTask(0), {}, deps.now()), deps);
  return { emu, net, deps, result };
}

describe("LLM retries inside the episode", () => {
  for (const status of [429, 500, 503]) {
    it(`an LLM ${status} on the first call is sent again and the episode ends with its reward`, async () => {
      const { net, result, deps } = await run(1, status);
      expect(result).toEqual({ kind: "reported", result: "ended", outcome: { kind: "end", reward: 1 } });
      expect(net.chatCalls().map((c) => c.status)).toEqual([status, 200]);
      expect(deps.time.sleeps.length).toBeGreaterThan(0); // it waited its back-off before the second send
      expect(deps.limiter.active).toBe(0);
    });
  }

  it("a 500 that persists is sent at most 3 times, then the episode aborts (never ends)", async () => {
    const { net, result } = await run(99, 500);
    expect(net.chatCalls()).toHaveLength(3);
    expect(result).toMatchObject({ kind: "reported", result: "aborted" });
    expect(net.to("/end_episode")).toHaveLength(0);
  });
});
