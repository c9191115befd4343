/**
 * The idle watchdog (BC-23): `ctx.signal` fires before the server's idle deadline (the discard timeout since the
 * last LLM activity, less a margin); from then on no request with the episode's key leaves the runtime — for
 * `defineRolloutFunction` and `fromAgentRun` functions alike — and `ctx.canContinue()` answers false without asking.
 */
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { defineRolloutFunction, fromAgentRun, type RolloutContext, type RolloutFunction } from "../../../src/sdk/contract.ts";
import { idleMarginMs } from "../../../src/runtime/episode-stop.ts";
import { runEpisode } from "../../../src/runtime/episode-runner.ts";
import { KeyFence } from "../../../src/runtime/key-fence.ts";
import { countdownTask, episodeMessage, recordingPort, rollingEmulator, runnerDeps, SWARM_A, SwarmNet, type PortCall } from "./_harness.ts";

const ask = (ctx: RolloutContext) => ctx.llm.chat.completions.create({ model: ctx.model, messages: [{ role: "user", content: "What is 2 + 3?" }] });
const named = (run: RolloutFunction["run"]): Record<string, RolloutFunction> => ({ countdown: defineRolloutFunction({ name: "countdown", run }) });

async function rig(functions: Record<string, RolloutFunction>, discardEpisodeTimeoutSeconds: number, withFence = false) {
  const { emu } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
  emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
  const net = new SwarmNet().add(SWARM_A, "default", emu);
  const fence = withFence ? new KeyFence(net.fetch) : undefined;
  const port = recordingPort();
  const deps = runnerDeps(net, port, functions, fence ? { fetch: fence.original, keyFence: fence } : {});
  const msg = episodeMessage(countdownTask(0), { discardEpisodeTimeoutSeconds }, deps.now());
  return { emu, net, port, deps, msg, fence };
}

const uuidOf = (calls: PortCall[]) => (calls[0] as Extract<PortCall, { method: "episodeClaimed" }>).report.claims[0]!.episodeUuid;

describe("idle watchdog (BC-23)", () => {
  it("the margin is 10 % of the discard timeout, at least 1 s and at most 15 s", () => {
    expect(idleMarginMs(2)).toBe(1_000);
    expect(idleMarginMs(60)).toBe(6_000);
    expect(idleMarginMs(240)).toBe(15_000);
  });

  it("ctx.signal fires with idle_deadline before the server's idle deadline; the claim is aborted while still ours", async () => {
    let reason: unknown;
    const r = await rig(
      named(async (_t, ctx) => {
        await ask(ctx);
        await new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject((reason = ctx.signal.reason)), { once: true }));
        return { reward: 1 };
      }),
      2, // margin 1 s: the watchdog fires 1 s after the last activity
    );
    const result = await runEpisode(r.msg, r.deps);
    expect(reason).toMatchObject({ name: "EpisodeAbortError", reason: "idle_deadline" });
    expect(result).toEqual({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: "idle_deadline" } });
    const uuid = uuidOf(r.port.calls);
    expect(r.net.to("/abort_episode", uuid)).toHaveLength(1);
    expect(r.net.to("/end_episode")).toHaveLength(0);
    expect(r.emu.engine.records.get(uuid)?.episode_status).toBe("registered");
  });

  it("past the local deadline the next LLM call is refused before it is sent and canContinue() is false without asking", async () => {
    let advance = (_ms: number) => undefined as void;
    let secondCall: unknown;
    let canContinue: boolean | undefined;
    const r = await rig(
      named(async (_t, ctx) => {
        await ask(ctx);
        advance(55_000); // 60 s discard timeout, 6 s margin: past the local deadline (54 s), before the server's (60 s)
        canContinue = await ctx.canContinue();
        secondCall = await ask(ctx).then(() => "sent", (err: unknown) => err);
        return { reward: 1 };
      }),
      60,
    );
    advance = r.deps.time.advance;
    const result = await runEpisode(r.msg, r.deps);
    expect(canContinue).toBe(false);
    expect(r.net.to("/can_continue_episode")).toHaveLength(0);
    expect(secondCall).not.toBe("sent");
    expect(r.net.chatCalls()).toHaveLength(1);
    // the function returned a reward after its stop: the claim is about to be reverted, so aborted, never ended
    expect(result).toEqual({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: "idle_deadline" } });
    expect(r.net.to("/end_episode")).toHaveLength(0);
    expect(r.net.to("/abort_episode")).toHaveLength(1);
  });

  it("fromAgentRun: the seed's own client (global fetch with the episode key) is watched, and refused once the episode is over", async () => {
    let fenceFetch: KeyFence["fetch"] = () => Promise.reject(new Error("unset"));
    let late: Promise<unknown> = Promise.resolve();
    let seedKey = "";
    let seedUrl = "";
    const seed = fromAgentRun("countdown", async (_task, baseUrl, apiKey) => {
      seedKey = apiKey;
      seedUrl = baseUrl;
      const client = new OpenAI({ baseURL: baseUrl, apiKey, maxRetries: 0, fetch: ((i: string | URL | Request, init?: RequestInit) => fenceFetch(i, init)) as typeof fetch });
      await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "What is 2 + 3?" }] });
      return { reward: 1 };
    });
    const r = await rig({ countdown: seed }, 60, true);
    fenceFetch = r.fence!.fetch;
    const result = await runEpisode(r.msg, r.deps);
    // the seed's call counted as LLM activity (no no_llm_call) and the episode ended
    expect(result).toEqual({ kind: "reported", result: "ended", outcome: { kind: "end", reward: 1 } });
    expect(r.net.chatCalls()).toHaveLength(1);
    // a late call with the same key (the episode is over, the key may be another client's now) never leaves
    late = new OpenAI({ baseURL: seedUrl, apiKey: seedKey, maxRetries: 0, fetch: r.fence!.fetch as typeof fetch }).chat.completions.create({ model: "m", messages: [{ role: "user", content: "late" }] });
    await expect(late).rejects.toThrow();
    expect(r.net.chatCalls()).toHaveLength(1);
    expect(r.fence!.isOpen(seedKey)).toBe(false);
  });

  it("fromAgentRun: a seed that ignores the stop gets its late call refused after the watchdog fired", async () => {
    let fenceFetch: KeyFence["fetch"] = () => Promise.reject(new Error("unset"));
    let resume = () => undefined as void;
    let lateOutcome: Promise<unknown> = Promise.resolve();
    const seed = fromAgentRun("countdown", async (_task, baseUrl, apiKey) => {
      const client = new OpenAI({ baseURL: baseUrl, apiKey, maxRetries: 0, fetch: ((i: string | URL | Request, init?: RequestInit) => fenceFetch(i, init)) as typeof fetch });
      await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "What is 2 + 3?" }] });
      await new Promise<void>((resolve) => (resume = resolve)); // a long tool call that never looks at any signal
      lateOutcome = client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "late" }] }).then(() => "sent", (e: unknown) => e);
      return { reward: 1 };
    });
    const r = await rig({ countdown: seed }, 2, true);
    fenceFetch = r.fence!.fetch;
    const result = await runEpisode(r.msg, r.deps);
    expect(result).toEqual({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: "idle_deadline" } });
    resume();
    await new Promise((res) => setTimeout(res, 10));
    expect(await lateOutcome).not.toBe("sent");
    expect(r.net.chatCalls()).toHaveLength(1);
  });
});
