/**
 * A failing `/abort_episode` is sent again; one the server never confirms is reported as what it is
 * (`abort_unconfirmed`, so the scheduler releases the claim), never as a plain abort.
 */
import { describe, expect, it } from "vitest";
import { defineRolloutFunction, type RolloutFunction } from "../../../src/sdk/contract.ts";
import { runEpisode } from "../../../src/runtime/episode-runner.ts";
import { ABORT_RETRY_DELAYS_MS } from "../../../src/port/index.ts";
import { countdownTask, episodeMessage, recordingPort, rollingEmulator, runnerDeps, SWARM_A, SwarmNet } from "./_harness.ts";

const failing: Record<string, RolloutFunction> = {
  countdown: defineRolloutFunction({
    name: "countdown",
    async run(_t, ctx) {
      await ctx.llm.chat.completions.create({ model: ctx.model, messages: [{ role: "user", content: "hi" }] });
      throw new Error("boom");
    },
  }),
};

async function run(abortFailures: number) {
  const { emu } = await rollingEmulator();
  let n = 0;
  emu.hooks.abortEpisode = () => (n++ < abortFailures ? { status: 500 } : undefined);
  const net = new SwarmNet().add(SWARM_A, "default", emu);
  const port = recordingPort();
  const deps = runnerDeps(net, port, failing);
  const result = await runEpisode(episodeMessage(countdownTask(0), {}, deps.now()), deps);
  const uuid = (port.calls[0] as { report: { claims: { episodeUuid: string }[] } }).report.claims[0]!.episodeUuid;
  return { emu, net, port, deps, result, uuid };
}

describe("abort retries", () => {
  it("an abort that fails once is sent again and the claim is given back; reported aborted with the function's cause", async () => {
    const r = await run(1);
    expect(r.net.to("/abort_episode", r.uuid).map((q) => q.status)).toEqual([500, 200]);
    expect(r.emu.engine.records.get(r.uuid)?.episode_status).toBe("registered");
    expect(r.result).toMatchObject({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: "function_error" } });
    expect(r.port.calls.at(-1)?.report).toMatchObject({ result: "aborted", cause: "function_error" });
  });

  it("an abort the server never confirms is tried 3 times and reported abort_unconfirmed (the claim is still held)", async () => {
    const r = await run(99);
    expect(r.net.to("/abort_episode", r.uuid)).toHaveLength(ABORT_RETRY_DELAYS_MS.length + 1);
    expect(r.deps.time.sleeps).toEqual(expect.arrayContaining([...ABORT_RETRY_DELAYS_MS]));
    expect(r.emu.engine.records.get(r.uuid)?.episode_status).toBe("claimed");
    expect(r.port.calls.at(-1)?.report).toMatchObject({ result: "aborted", cause: "abort_unconfirmed" });
  });
});
