/**
 * The outcome rules of `runEpisode` against the in-process emulator: every way a function's result or failure
 * becomes an abort (BC-22, BC-29, BC-43, EpisodeAbortError, lifetime BC-24, idle expiry BC-23) sends exactly one
 * abort — or nothing for `expired` — and never an end; eval episodes are scored, then aborted (spec §5.8).
 */
import { describe, expect, it } from "vitest";
import countdown from "../../../functions/countdown.ts";
import { defineRolloutFunction, EpisodeAbortError, type RolloutContext, type RolloutFunction } from "../../../src/sdk/contract.ts";
import { runEpisode, type EpisodeRunResult } from "../../../src/runtime/episode-runner.ts";
import { countdownTask, episodeMessage, methodsOf, recordingPort, rollingEmulator, runnerDeps, SWARM_A, SwarmNet, type PortCall } from "./_harness.ts";

/** One LLM call through the context (the engine keeps a timeline for it). */
const askOnce = (ctx: RolloutContext) => ctx.llm.chat.completions.create({ model: ctx.model, messages: [{ role: "user", content: "What is 2 + 3?" }] });

/** A function named `countdown` that runs `body` (so the default message finds it). */
const fn = (body: (ctx: RolloutContext) => Promise<unknown>): Record<string, RolloutFunction> => ({
  countdown: defineRolloutFunction({ name: "countdown", run: (_task, ctx) => body(ctx) as Promise<{ reward: number }> }),
});

async function run(functions: Record<string, RolloutFunction>, hook?: (deps: ReturnType<typeof runnerDeps>) => void) {
  const { emu, clock } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
  emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
  const net = new SwarmNet().add(SWARM_A, "default", emu);
  const port = recordingPort();
  const deps = runnerDeps(net, port, functions);
  hook?.(deps);
  const msg = episodeMessage(countdownTask(0), {}, deps.now());
  const result = await runEpisode(msg, deps);
  const uuid = (port.calls[0] as Extract<PortCall, { method: "episodeClaimed" }>).report.claims[0]!.episodeUuid;
  return { emu, clock, net, port, deps, msg, result, uuid };
}

/** The episode was aborted with `cause`: recorded, one abort on the wire, no end, reported aborted, nothing accepted. */
function expectAborted(r: Awaited<ReturnType<typeof run>>, cause: string) {
  expect(r.result).toMatchObject<EpisodeRunResult>({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause } });
  expect(methodsOf(r.port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeReported"]);
  expect(r.port.calls[1]?.report).toMatchObject({ outcome: { kind: "abort", cause } });
  expect((r.port.calls[1]?.report as { outputs?: unknown } | undefined)?.outputs).toBeUndefined();
  expect(r.port.calls[2]?.report).toMatchObject({ result: "aborted", cause });
  expect(r.net.to("/abort_episode", r.uuid)).toHaveLength(1);
  expect(r.net.to("/end_episode")).toHaveLength(0);
  expect(r.emu.stepLog.flatMap((s) => s.episodes)).toHaveLength(0);
  expect(r.emu.engine.records.get(r.uuid)?.episode_status).toBe("registered"); // back in the pool
}

describe("outcome rules", () => {
  it("BC-29 a function that makes zero LLM calls is aborted as no_llm_call, never ended", async () => {
    expectAborted(await run(fn(async () => ({ reward: 1, is_success: true }))), "no_llm_call");
  });

  it("BC-29 an LLM call the proxy refused (HTTP 404) is not a call: no_llm_call", async () => {
    const failed = await run(
      fn(async (ctx) => {
        await askOnce(ctx).catch(() => undefined);
        return { reward: 1 };
      }),
      (deps) => {
        const inner = deps.fetch;
        deps.fetch = async (input, init) => {
          const url = String(input instanceof Request ? input.url : input);
          if (url.endsWith("/chat/completions")) return new Response(JSON.stringify({ detail: "Episode x not found." }), { status: 404 });
          return inner(input, init);
        };
      },
    );
    expectAborted(failed, "no_llm_call");
  });

  for (const [label, reward] of [
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["null", null],
    ["a list", [0.2, 1.0]],
    ["a string", "1"],
  ] as const) {
    it(`BC-22 a reward of ${label} is aborted as invalid_reward, never ended`, async () => {
      expectAborted(await run(fn(async (ctx) => (await askOnce(ctx), { reward }))), "invalid_reward");
    });
  }

  it("BC-22 a result without a reward (or not an object) is invalid_reward", async () => {
    expectAborted(await run(fn(async (ctx) => (await askOnce(ctx), { is_success: true }))), "invalid_reward");
    expectAborted(await run(fn(async (ctx) => (await askOnce(ctx), 1))), "invalid_reward");
  });

  it("EpisodeAbortError(reason) aborts with that reason, also when wrapped as the cause of another error", async () => {
    expectAborted(await run(fn(async (ctx) => { await askOnce(ctx); throw new EpisodeAbortError("judge_unparseable", "the judge said 'maybe'"); })), "judge_unparseable");
    expectAborted(
      await run(fn(async (ctx) => { await askOnce(ctx); throw new Error("wrapped", { cause: new EpisodeAbortError("infra_error") }); })),
      "infra_error",
    );
  });

  it("any other throw is function_error, recorded with the error and where it was thrown (file:line)", async () => {
    const r = await run(fn(async (ctx) => { await askOnce(ctx); throw new TypeError("x is undefined"); }));
    expectAborted(r, "function_error");
    expect((r.port.calls[1]!.report as { outcome: { detail?: string } }).outcome.detail).toMatch(/^TypeError: x is undefined @ .*outcomes\.test\.ts:\d+:\d+/);
  });

  it('BC-43 an LLM answer with finish_reason "abort" aborts the episode as llm_aborted', async () => {
    const { emu } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 });
    emu.hooks.chatCompletion = () => ({
      status: 200,
      body: { id: "c1", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "Let me compute 3" }, finish_reason: "abort" }] },
    });
    const net = new SwarmNet().add(SWARM_A, "default", emu);
    const port = recordingPort();
    const deps = runnerDeps(net, port, { countdown });
    const result = await runEpisode(episodeMessage(countdownTask(0), {}, deps.now()), deps);
    expect(result).toEqual({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: "llm_aborted" } });
    expect(net.to("/abort_episode")).toHaveLength(1);
    expect(net.to("/end_episode")).toHaveLength(0);
  });

  it("BC-24 a function that returns past 8 × the discard timeout is aborted as lifetime_exceeded", async () => {
    let advance = (_ms: number) => undefined as void;
    const r = await run(
      fn(async (ctx) => {
        // busy all along (a call every 50 s, within the 60 s idle budget), only too old: 10 × 50 s > 8 × 60 s
        for (let i = 0; i < 10; i++) {
          await askOnce(ctx);
          advance(50_000);
        }
        await askOnce(ctx);
        return { reward: 1 };
      }),
      (deps) => (advance = deps.time.advance),
    );
    expectAborted(r, "lifetime_exceeded");
  });

  it("BC-23 a slow step after the last LLM call beyond the discard timeout: outcome expired, no end and no abort sent, reported expired", async () => {
    let advance = (_ms: number) => undefined as void;
    const r = await run(
      fn(async (ctx) => {
        await askOnce(ctx);
        advance(60_000 + 1); // a slow judge: 60 s + 1 ms idle with a 60 s discard timeout
        return { reward: 1 };
      }),
      (deps) => (advance = deps.time.advance),
    );
    expect(r.result).toEqual({ kind: "reported", result: "expired", outcome: { kind: "abort", cause: "expired" } });
    expect(methodsOf(r.port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeReported"]);
    expect(r.port.calls[2]?.report).toMatchObject({ result: "expired" });
    expect(r.net.to("/end_episode")).toHaveLength(0);
    expect(r.net.to("/abort_episode")).toHaveLength(0);
  });

  it("BC-23 a streamed generation longer than the discard timeout is activity, not idle time: the episode ends", async () => {
    const r = await run(
      fn(async (ctx) => {
        const stream = await ctx.llm.chat.completions.create({ model: ctx.model, stream: true, messages: [{ role: "user", content: "What is 2 + 3?" }] });
        for await (const _chunk of stream); // the proxy's keepalives hold the stream open while the model generates
        return { reward: 1 };
      }),
      (deps) => {
        const inner = deps.fetch;
        deps.fetch = async (input, init) => {
          const res = await inner(input, init);
          if (!String(input instanceof Request ? input.url : input).endsWith("/chat/completions") || !res.body) return res;
          // like the proxy: headers and a keepalive at once, the answer 60 s + 1 ms later (the discard timeout is 60 s)
          const reader = res.body.getReader();
          let sent = 0;
          const body = new ReadableStream<Uint8Array>({
            async pull(controller) {
              if (sent++ === 0) return controller.enqueue(new TextEncoder().encode(": keepalive\n\n"));
              if (sent === 2) deps.time.advance(60_000 + 1);
              const { done, value } = await reader.read();
              if (done) controller.close();
              else controller.enqueue(value);
            },
            cancel: (reason) => reader.cancel(reason),
          });
          return new Response(body, { status: res.status, headers: res.headers });
        };
      },
    );
    expect(r.result).toEqual({ kind: "reported", result: "ended", outcome: { kind: "end", reward: 1 } });
    expect(r.net.to("/end_episode", r.uuid)).toHaveLength(1);
    expect(r.net.to("/abort_episode")).toHaveLength(0);
  });

  it("an eval episode is scored, then aborted (never ended), and reported aborted with its score", async () => {
    const { emu } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
    emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
    const net = new SwarmNet().add(SWARM_A, "default", emu);
    const port = recordingPort();
    const deps = runnerDeps(net, port, { countdown });
    const result = await runEpisode(episodeMessage(countdownTask(0), { episodeType: "eval" }, deps.now()), deps);
    expect(result).toEqual({ kind: "reported", result: "aborted", outcome: { kind: "score", reward: 1 } });
    expect(net.to("/claim_episode")[0]?.body).toMatchObject({ episode_type: "eval" });
    expect(net.to("/abort_episode")).toHaveLength(1);
    expect(net.to("/end_episode")).toHaveLength(0);
    expect(port.calls[1]?.report).toMatchObject({ outcome: { kind: "score", reward: 1 }, outputs: { default: { reward: 1 } } });
  });
});

describe("the runtime's time limit (invocation wall limit, BC-24)", () => {
  /** Deps whose invocation deadline leaves no time for the function: the stop fires on the next timer turn. */
  const noTimeLeft = (deps: ReturnType<typeof runnerDeps>) => {
    deps.reportReserveMs = 20_000;
    deps.invocationDeadlineAtMs = deps.now() + 20_000;
  };

  it("a function that honours ctx.signal is stopped and aborted with a time cause, not function_error", async () => {
    const r = await run(
      fn(async (ctx) => {
        await askOnce(ctx);
        await new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true }));
        return { reward: 1 };
      }),
      noTimeLeft,
    );
    expectAborted(r, "time_limit");
  });

  it("a function that ignores ctx.signal and never settles is still aborted and reported before the wall limit", async () => {
    const r = await run(
      fn(async (ctx) => {
        await askOnce(ctx);
        return new Promise(() => undefined);
      }),
      noTimeLeft,
    );
    expectAborted(r, "time_limit");
  });
});
