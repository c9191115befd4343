/**
 * An `/end_episode` whose two sends both fail after the server accepted the first is not left to the report lease:
 * the server's completed tasks list the episode, so it is reported ended at once — and only then.
 */
import { describe, expect, it } from "vitest";
import countdown from "../../../functions/countdown.ts";
import { runEpisode } from "../../../src/runtime/episode-runner.ts";
import { countdownTask, episodeMessage, methodsOf, recordingPort, rollingEmulator, runnerDeps, SWARM_A, SwarmNet } from "./_harness.ts";

async function run(hook: (n: number) => { status: number; afterHandling?: boolean } | undefined) {
  const { emu } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
  emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
  let n = 0;
  emu.hooks.endEpisode = () => hook(n++);
  const net = new SwarmNet().add(SWARM_A, "default", emu);
  const port = recordingPort();
  const deps = runnerDeps(net, port, { countdown });
  const result = await runEpisode(episodeMessage(countdownTask(0), {}, deps.now()), deps);
  return { emu, net, port, result };
}

describe("an end whose outcome is unknown", () => {
  it("accepted, then both answers lost: the server's completed tasks confirm it, reported ended at once (one end accepted)", async () => {
    const r = await run((n) => (n === 0 ? { status: 500, afterHandling: true } : { status: 500 }));
    expect(r.result).toEqual({ kind: "reported", result: "ended", outcome: { kind: "end", reward: 1 } });
    expect(r.net.to("/end_episode")).toHaveLength(2);
    expect(r.emu.stepLog.flatMap((s) => s.episodes)).toHaveLength(1);
    expect(methodsOf(r.port.calls).at(-1)).toBe("episodeReported");
  });

  it("never accepted and both sends failed: still unknown, reported unknown at once (the run resolves it from the server's record), never ended or lost", async () => {
    const r = await run(() => ({ status: 500 }));
    expect(r.result).toMatchObject({ kind: "unresolved" });
    const reports = r.port.calls.filter((c) => c.method === "episodeReported").map((c) => (c.report as { result: string }).result);
    expect(reports).toEqual(["unknown"]);
    expect(r.emu.stepLog.flatMap((s) => s.episodes)).toHaveLength(0);
  });
});
