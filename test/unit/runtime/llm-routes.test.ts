/**
 * The Responses and Anthropic Messages routes through the runtime (issue 20 §1): the shipped `coding-agent`
 * (Anthropic SDK, streamed tool loop) and `coding-agent-responses` (OpenAI Responses API, streamed) against the
 * in-process emulator, plain calls of both SDKs, and what the episode's transcript keeps of each (content blocks,
 * Responses items, tool use, image stubs). The guards' stream checks for both routes on cut streams.
 */
import { describe, expect, it } from "vitest";
import codingAgent from "../../../functions/coding-agent.ts";
import codingAgentResponses from "../../../functions/coding-agent-responses.ts";
import { runEpisode } from "../../../src/runtime/episode-runner.ts";
import type { EpisodeTranscript } from "../../../src/runtime/transcript.ts";
import { defineRolloutFunction, type RolloutContext, type RolloutFunction } from "../../../src/sdk/contract.ts";
import { findEpisodeAbortError, withLlmGuards } from "../../../src/sdk/llm-guards.ts";
import { anthropicBaseUrl, episodeAnthropic } from "../../../src/sdk/anthropic.ts";
import { MAX_IMAGE_BYTES } from "../../../src/sdk/llm-request-limits.ts";
import { countdownTask, episodeMessage, methodsOf, recordingPort, rollingEmulator, runnerDeps, SWARM_A, SwarmNet } from "./_harness.ts";

async function run(functionName: string, fn: RolloutFunction, policy: Record<string, number> = {}) {
  const { emu } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0, ...policy } });
  emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
  const net = new SwarmNet().add(SWARM_A, "default", emu);
  const port = recordingPort();
  const saved: EpisodeTranscript[] = [];
  const deps = runnerDeps(net, port, { [functionName]: fn }, { transcripts: { save: async (t) => void saved.push(t) } });
  const result = await runEpisode(episodeMessage(countdownTask(0), { functionName }, deps.now()), deps);
  return { emu, net, port, result, transcript: saved[0] };
}

describe("LLM routes through ctx", () => {
  it("coding-agent: streamed Anthropic tool loop (tool_use → tool_result → answer) ends with reward 1, each call in the transcript as content blocks", async () => {
    const r = await run("coding-agent", codingAgent, { toolCallRate: 1 });
    expect(r.result).toMatchObject({ kind: "reported", result: "ended" });
    expect(methodsOf(r.port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeReported"]);
    const calls = r.net.requests.filter((q) => q.path === "/v1/messages");
    expect(calls).toHaveLength(2);
    expect(calls.every((q) => q.body.stream === true)).toBe(true);
    expect(r.net.to("/end_episode")).toHaveLength(1);
    expect(r.port.calls[1]?.report).toMatchObject({ outputs: { default: { reward: 1, metadata: { turns: 2, tool_calls: 1 } } } });
    const llm = r.transcript!.llm;
    expect(llm.map((c) => [c.route, c.status])).toEqual([["messages", 200], ["messages", 200]]);
    expect(llm[0]!.messages[0]).toMatchObject({ role: "system" });
    const firstReply = llm[0]!.reply as { content: Array<{ type: string; name?: string; input?: unknown }> };
    expect(firstReply.content.find((b) => b.type === "tool_use")).toMatchObject({ name: "calculate", input: { expression: expect.any(String) } });
    // the second call sends the tool_use back and its tool_result
    const second = llm[1]!.messages as Array<{ role: string; content: unknown }>;
    expect(JSON.stringify(second)).toContain('"tool_result"');
    expect(JSON.stringify(llm[1]!.reply)).toContain("<answer>");
  });

  it("coding-agent-responses: streamed Responses tool loop (function_call → function_call_output → answer) ends with reward 1; transcript keeps output items", async () => {
    const r = await run("coding-agent-responses", codingAgentResponses, { toolCallRate: 1 });
    expect(r.result).toMatchObject({ kind: "reported", result: "ended" });
    const calls = r.net.requests.filter((q) => q.path === "/v1/responses");
    expect(calls).toHaveLength(2);
    expect(r.port.calls[1]?.report).toMatchObject({ outputs: { default: { reward: 1, metadata: { turns: 2, tool_calls: 1 } } } });
    const llm = r.transcript!.llm;
    expect(llm.map((c) => c.route)).toEqual(["responses", "responses"]);
    expect(llm[0]!.reply).toEqual([expect.objectContaining({ type: "function_call", name: "calculate" })]);
    expect(llm[1]!.messages).toContainEqual(expect.objectContaining({ type: "function_call_output" }));
    expect(llm[1]!.reply).toEqual([expect.objectContaining({ type: "message", content: [expect.objectContaining({ type: "output_text", text: expect.stringContaining("<answer>") })] })]);
  });

  it("plain (non-streamed) calls of both SDKs, and a chat call with a data-URL image: the image reaches the server, the transcript keeps a stub", async () => {
    const png = `data:image/png;base64,${"A".repeat(4000)}`;
    const fn = defineRolloutFunction({
      name: "plain",
      async run(_task, ctx: RolloutContext) {
        const msg = await ctx.anthropicLlm.messages.create({ model: ctx.model, max_tokens: 64, system: "s", messages: [{ role: "user", content: "What is 2 + 3?" }] });
        const resp = await ctx.llm.responses.create({ model: ctx.model, instructions: "s", input: "What is 2 + 3?" });
        await ctx.llm.chat.completions.create({ model: ctx.model, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: png } }, { type: "text", text: "What is 2 + 3?" }] }] });
        return { reward: msg.content.length > 0 && resp.output.length > 0 ? 1 : 0 };
      },
    });
    const r = await run("plain", fn);
    expect(r.result).toMatchObject({ kind: "reported", result: "ended" });
    expect(r.port.calls[1]?.report).toMatchObject({ outputs: { default: { reward: 1 } } });
    const chat = r.net.requests.find((q) => q.path === "/v1/chat/completions")!;
    expect(JSON.stringify(chat.body)).toContain(png); // passed through unchanged
    const llm = r.transcript!.llm;
    expect(llm.map((c) => c.route)).toEqual(["messages", "responses", "chat"]);
    expect(llm[0]!.reply).toMatchObject({ role: "assistant", content: [{ type: "text" }] });
    expect(JSON.stringify(llm[2]!.messages)).not.toContain("AAAA");
    expect(JSON.stringify(llm[2]!.messages)).toContain("[image image/png, 2.9 KiB, not kept]");
  });

  it("an image over the limit is refused before it is sent, naming the limit; the attempt aborts as request_too_large", async () => {
    const big = `data:image/png;base64,${"A".repeat(Math.ceil(((MAX_IMAGE_BYTES + 1024) * 4) / 3))}`;
    const fn = defineRolloutFunction({
      name: "big",
      async run(_task, ctx) {
        await ctx.llm.chat.completions.create({ model: ctx.model, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: big } }] }] }).catch((e: unknown) => Promise.reject(findEpisodeAbortError(e) ?? e));
        return { reward: 1 };
      },
    });
    const r = await run("big", fn);
    expect(r.result).toMatchObject({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: "request_too_large" } });
    expect(r.net.requests.filter((q) => q.path === "/v1/chat/completions")).toHaveLength(0);
  });
});

describe("route guards", () => {
  const sse = (frames: string[]) => async () => new Response(frames.join(""), { status: 200, headers: { "content-type": "text/event-stream" } });

  it("a Messages stream that ends without message_stop, and a Responses stream without response.completed, fail the call", async () => {
    const cut = episodeAnthropic({
      baseUrl: "http://gpu:10086/v1",
      apiKey: "sk-ajet-x",
      timeoutMs: 1000,
      fetch: withLlmGuards(sse(['event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}\n\n', "event: ping\ndata: {\"type\":\"ping\"}\n\n"])) as typeof fetch,
    });
    const err = await cut.messages.stream({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "q" }] }).finalMessage().catch((e: unknown) => e);
    expect(findEpisodeAbortError(err)?.message).toMatch(/without its message_stop event/);

    const guarded = withLlmGuards(sse([": keepalive\n\n", 'event: response.created\ndata: {"type":"response.created","sequence_number":1}\n\n']));
    const res = await guarded("http://gpu:10086/v1/responses", { method: "POST", body: "{}" });
    await expect(res.text()).rejects.toThrow(/without its response.completed event/);
  });

  it("the Anthropic client is bound the way that SDK expects: root URL without /v1, the key as x-api-key", async () => {
    expect(anthropicBaseUrl("http://gpu:10086/v1")).toBe("http://gpu:10086");
    expect(anthropicBaseUrl("https://gw.example/swarm/v1/")).toBe("https://gw.example/swarm");
    const seen: Array<{ url: string; headers: Headers }> = [];
    const client = episodeAnthropic({
      baseUrl: "http://gpu:10086/v1",
      apiKey: "sk-ajet-k",
      timeoutMs: 1000,
      fetch: (async (input: string, init: RequestInit) => {
        seen.push({ url: String(input), headers: new Headers(init.headers) });
        return new Response(JSON.stringify({ id: "m", type: "message", role: "assistant", model: "m", content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 0, output_tokens: 1 } }), { headers: { "content-type": "application/json" } });
      }) as unknown as typeof fetch,
    });
    await client.messages.create({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "q" }] });
    expect(seen[0]!.url).toBe("http://gpu:10086/v1/messages");
    expect(seen[0]!.headers.get("x-api-key")).toBe("sk-ajet-k");
  });
});

describe("long calls", () => {
  it("a streamed Anthropic call held open 10 minutes (discard timeout 3600 s) completes on its keepalive frames, sent once, and the episode ends", async () => {
    const { emu, clock } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
    emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
    emu.hooks.llmLatencyMs = 600_000;
    const net = new SwarmNet().add(SWARM_A, "default", emu);
    const port = recordingPort();
    let bytesSeen = 0;
    const fn = defineRolloutFunction({
      name: "long",
      async run(_task, ctx) {
        const stream = ctx.anthropicLlm.messages.stream({ model: ctx.model, max_tokens: 64, messages: [{ role: "user", content: "What is 2 + 3?" }] });
        stream.on("streamEvent", () => void bytesSeen++);
        const msg = await stream.finalMessage();
        return { reward: msg.content.some((b) => b.type === "text" && b.text.length > 0) ? 1 : 0 };
      },
    });
    const deps = runnerDeps(net, port, { long: fn });
    const running = runEpisode(episodeMessage(countdownTask(0), { functionName: "long", discardEpisodeTimeoutSeconds: 3600 }, deps.now()), deps);
    let done = false;
    void running.finally(() => (done = true));
    let advancedMs = 0;
    while (!done && advancedMs < 700_000) {
      await new Promise((r) => setImmediate(r));
      await clock.advance(15_000); // the emulator writes a keepalive every 5 s while the engine works
      deps.time.advance(15_000); // the runner's clock moves with it
      advancedMs += 15_000;
    }
    const result = await running;
    expect(result).toMatchObject({ kind: "reported", result: "ended" });
    expect(advancedMs).toBeGreaterThanOrEqual(600_000);
    expect(net.requests.filter((q) => q.path === "/v1/messages")).toHaveLength(1); // never re-issued
    expect(bytesSeen).toBeGreaterThan(100); // ~120 ping + empty-delta pairs kept the stream alive
    expect(port.calls[1]?.report).toMatchObject({ outputs: { default: { reward: 1 } } });
  }, 120_000);
});

describe("ghost samples", () => {
  const ask = { model: "agentjet-policy", max_tokens: 64, messages: [{ role: "user" as const, content: "What is 2 + 3?" }] };

  it("a harness that gives up a pending streamed call and re-issues it is refused: one call reaches the server, the attempt aborts ghost_sample", async () => {
    const { emu, clock } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
    emu.hooks.llmLatencyMs = 60_000; // the engine is still generating when the harness gives up
    const net = new SwarmNet().add(SWARM_A, "default", emu);
    const port = recordingPort();
    let reissueError: unknown;
    const fn = defineRolloutFunction({
      name: "reissue",
      async run(_task, ctx) {
        const first = ctx.anthropicLlm.messages.stream(ask);
        await new Promise<void>((resolve) => first.on("streamEvent", () => resolve()));
        first.abort(); // an inactivity watchdog fired (Claude Code's ~300 s, llm-routes §5)
        await first.finalMessage().catch(() => undefined);
        reissueError = await ctx.anthropicLlm.messages.stream(ask).finalMessage().catch((e: unknown) => e);
        return { reward: 1 }; // the harness carries on; the stop decides the outcome
      },
    });
    const deps = runnerDeps(net, port, { reissue: fn });
    const running = runEpisode(episodeMessage(countdownTask(0), { functionName: "reissue", discardEpisodeTimeoutSeconds: 3600 }, deps.now()), deps);
    let done = false;
    void running.finally(() => (done = true));
    // the first generation finishes on the server (it is shielded from its client), then the abort is sent
    for (let i = 0; !done && i < 40; i++) {
      await new Promise((r) => setImmediate(r));
      await clock.advance(5_000);
      deps.time.advance(5_000);
    }
    const result = await running;
    expect(findEpisodeAbortError(reissueError)?.reason).toBe("ghost_sample");
    expect(findEpisodeAbortError(reissueError)?.message).toMatch(/sent again \d+ s after the same request, which its client gave up/);
    expect(findEpisodeAbortError(reissueError)?.message).not.toMatch(/timed? ?out/i); // the SDK would drop the cause
    expect(net.requests.filter((q) => q.path === "/v1/messages")).toHaveLength(1);
    expect(result).toMatchObject({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: "ghost_sample" } });
    expect(net.to("/end_episode")).toHaveLength(0);
  });

  it("the same request again after the first answer was read is a new turn: both are sent and the episode ends", async () => {
    const fn = defineRolloutFunction({
      name: "twice",
      async run(_task, ctx) {
        await ctx.anthropicLlm.messages.create(ask);
        await ctx.anthropicLlm.messages.create(ask);
        return { reward: 1 };
      },
    });
    const r = await run("twice", fn);
    expect(r.result).toMatchObject({ kind: "reported", result: "ended" });
    expect(r.net.requests.filter((q) => q.path === "/v1/messages")).toHaveLength(2);
  });
});
