/**
 * `/v1/responses` and `/v1/messages` of the emulator (llm-routes §1, §3–§7): the exact answer objects and SSE event
 * order, keepalive frames every 5 s on a manual clock while a call is pending, the pre-flight with its 401 / 404 /
 * 500 answers, the 6 s wait slices (activity refreshed, episode gone → the stream ends without its terminal event),
 * the call budget, shielded generations (client gone: still recorded), `/replay_latest_llm_call` with `format`, the
 * request translation the model sees, the journal's `llm` events, and chat's opt-in keepalive stream.
 */
import { describe, expect, it } from "vitest";
import { ServerText, defaultEpisodeKey } from "../../../src/protocol/index.ts";
import type { ChatCallInfo, Emulator, EmulatorOptions, SimulatedPolicy } from "../../../src/emulator/index.ts";
import { stopReasonOf } from "../../../src/emulator/proxy/messages-api.ts";
import { responseObject, responsesSseEvents } from "../../../src/emulator/proxy/responses-api.ts";
import { createRng } from "../../../src/emulator/rng.ts";
import { bootToRolling, call, claim, makeEmulator } from "./helpers.ts";

const calculatorResponsesTool = { type: "function", name: "calculator", parameters: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] } };
const calculatorMessagesTool = { name: "calculator", description: "math", input_schema: calculatorResponsesTool.parameters };

async function rolling(options: EmulatorOptions = {}) {
  const { emu, clock } = makeEmulator(options);
  await bootToRolling(emu, clock, { batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
  return { emu, clock };
}

/** An SSE frame: `event` + parsed `data`, or a comment line. */
type Frame = { event: string; data: any } | { comment: string };

function frames(text: string): Frame[] {
  return text
    .split("\n\n")
    .filter(Boolean)
    .map((block) => {
      if (block.startsWith(":")) return { comment: block.slice(1).trim() };
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? "";
      const data = /^data: (.*)$/m.exec(block)?.[1] ?? "null";
      return { event, data: JSON.parse(data) };
    });
}
const names = (fs: Frame[]) => fs.map((f) => ("comment" in f ? `:${f.comment}` : f.event));

/** Reads a streamed response in the background; `out.text` grows as frames arrive. */
function reading(res: Response) {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const out = { text: "", done: false };
  const pump = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        out.done = true;
        return;
      }
      out.text += decoder.decode(value, { stream: true });
    }
  })();
  return { out, pump, cancel: () => reader.cancel() };
}

function post(emu: Emulator, path: string, body: unknown, headers: Record<string, string>) {
  return emu.app.fetch(new Request(`http://127.0.0.1:10086${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) }));
}

/** Captures what the model sees (the translated chat messages and tools) through the fault hook. */
function capture(emu: Emulator): ChatCallInfo[] {
  const seen: ChatCallInfo[] = [];
  emu.hooks.chatCompletion = (c) => void seen.push(c);
  return seen;
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe("POST /v1/responses (llm-routes §3)", () => {
  it("answers the response object: message then function_call items, usage, float times, instructions echoed", async () => {
    const { emu } = await rolling({ policy: { toolCallRate: 1 } });
    const c = await claim(emu);
    const res = await call(emu, "POST", "/v1/responses", { model: "agent-m", instructions: "Be brief.", input: "What is 2 + 3?", tools: [calculatorResponsesTool] }, bearer(c.openai_api_key));
    expect(res.status).toBe(200);
    expect(res.contentType).toBe("application/json");
    const r = res.json;
    expect(Object.keys(r)).toEqual(["id", "object", "created_at", "completed_at", "model", "status", "output", "parallel_tool_calls", "tool_choice", "tools", "usage", "instructions"]);
    expect(r).toMatchObject({ object: "response", model: "agent-m", status: "completed", parallel_tool_calls: true, tool_choice: "auto", tools: [], instructions: "Be brief." });
    expect(r.id).toMatch(/^resp_[0-9a-f]{24}$/);
    expect(res.text).toMatch(/"created_at":\d+\.0,/); // a Python float
    expect(r.output).toEqual([{ id: expect.any(String), type: "function_call", call_id: expect.any(String), name: "calculator", arguments: '{"expression": "2 + 3"}', status: "completed" }]);
    expect(r.output[0].id).toBe(r.output[0].call_id);
    expect(r.usage).toEqual({ input_tokens: expect.any(Number), input_tokens_details: { cached_tokens: 0 }, output_tokens: expect.any(Number), output_tokens_details: { reasoning_tokens: 0 }, total_tokens: r.usage.input_tokens + r.usage.output_tokens });
    expect(r.usage.input_tokens).toBeGreaterThan(0);

    const text = await call(emu, "POST", "/v1/responses", { input: [{ role: "user", content: "What is 2 + 3?" }, { type: "function_call_output", call_id: "x", output: "5" }] }, bearer(c.openai_api_key));
    expect(text.json.model).toBe("unknown");
    expect(text.json.output).toEqual([{ id: expect.stringMatching(/^msg_[0-9a-f]{24}$/), type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: expect.stringContaining("2 + 3"), annotations: [] }] }]);
    expect("instructions" in text.json).toBe(false);
    expect(emu.engine.records.get(c.episode_uuid)?.llm_call_count).toBe(2);
    const replay = await call(emu, "POST", "/replay_latest_llm_call");
    expect(replay.json).toEqual({ input: { input: [{ role: "user", content: "What is 2 + 3?" }, { type: "function_call_output", call_id: "x", output: "5" }] }, output: text.json, format: "responses" });
    emu.close();
  });

  it("translates the input the way the adapter does (what the model sees)", async () => {
    const { emu } = await rolling();
    const c = await claim(emu);
    const seen = capture(emu);
    const input = [
      { type: "message", role: "developer", content: [{ type: "input_text", text: "Rules." }] },
      { role: "user", content: [{ type: "input_text", text: "Look " }, { type: "input_image", image_url: "data:image/png;base64,AAAA" }, { type: "input_text", text: "here" }] },
      { type: "reasoning", summary: [] },
      { type: "function_call", id: "fc_1", name: "calc", arguments: { expression: "1+1" } },
      { type: "function_call_output", call_id: "fc_1", output: 2 },
      { role: "assistant", content: [] },
    ];
    const tools = [calculatorResponsesTool, { type: "web_search" }];
    await call(emu, "POST", "/v1/responses", { input, tools, tool_choice: { type: "function", name: "calculator" } }, bearer(c.openai_api_key));
    expect(seen[0]?.route).toBe("responses");
    expect(seen[0]?.messages).toEqual([
      { role: "system", content: "Rules." }, // a leading developer message is the system message: no default one
      { role: "user", content: "Look here" },
      { role: "assistant", content: null, tool_calls: [{ id: "fc_1", type: "function", function: { name: "calc", arguments: '{"expression": "1+1"}' } }] },
      { role: "tool", tool_call_id: "fc_1", content: "2" },
    ]);
    expect(seen[0]?.tools).toEqual([{ type: "function", function: { name: "calculator", parameters: calculatorResponsesTool.parameters } }]);
    await call(emu, "POST", "/v1/responses", { input: "", instructions: "only instructions" }, bearer(c.openai_api_key));
    expect(seen[1]?.messages).toEqual([{ role: "system", content: "only instructions" }]);
    emu.close();
  });

  it("streams: a keepalive at once and every 5 s while pending, then the events in the spec's order", async () => {
    const { emu, clock } = await rolling();
    const c = await claim(emu);
    emu.hooks.llmLatencyMs = 17_000;
    const res = await post(emu, "/v1/responses", { model: "m", input: "What is 2 + 3?", stream: true }, bearer(c.openai_api_key));
    expect(res.status).toBe(200);
    expect(Object.fromEntries(res.headers)).toMatchObject({ "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no" });
    const r = reading(res);
    await clock.flush();
    expect(r.out.text).toBe(": keepalive\n\n");
    const activity: number[] = [];
    for (let t = 0; t < 16_000; t += 1_000) {
      await clock.advance(1_000);
      activity.push(emu.engine.records.get(c.episode_uuid)!.latest_activity_timestamp);
    }
    expect(names(frames(r.out.text))).toEqual([":keepalive", ":keepalive", ":keepalive", ":keepalive"]); // t = 0, 5, 10, 15 s
    expect(new Set(activity).size).toBeGreaterThanOrEqual(3); // refreshed before each 6 s slice
    const running = emu.engine.poolInformation().running_episode_details?.[c.episode_uuid];
    expect(running).toMatchObject({ llm_call_count: "1", client_uuid: "client-a" });
    expect(Number.parseFloat(running!.time_since_last_activity!)).toBeLessThan(6); // a pending call is never idle
    await clock.advance(2_000);
    await r.pump;
    const fs = frames(r.out.text).filter((f) => !("comment" in f)) as Array<{ event: string; data: any }>;
    expect(fs.map((f) => f.event)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(fs.map((f) => f.data.sequence_number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(fs.every((f) => f.data.type === f.event)).toBe(true);
    const final = fs[8]!.data.response;
    expect(Object.keys(fs[0]!.data.response).at(-1)).toBe("output");
    expect(fs[0]!.data.response).toEqual({ ...final, output: [] });
    expect(fs[2]!.data).toEqual({ output_index: 0, item: { ...final.output[0], content: [] }, type: "response.output_item.added", sequence_number: 3 });
    expect(fs[3]!.data.part).toEqual({ type: "output_text", text: "", annotations: [] });
    expect(fs[4]!.data).toEqual({ output_index: 0, content_index: 0, delta: final.output[0].content[0].text, type: "response.output_text.delta", sequence_number: 5 });
    expect(fs[7]!.data.item).toEqual(final.output[0]);
    expect(r.out.text).not.toContain("[DONE]");
    expect((await call(emu, "POST", "/replay_latest_llm_call")).json.output).toEqual(final);
    emu.close();
  });

  it("streams a function call only in response.completed; the responsesToolCallEvents manner adds OpenAI's item events", async () => {
    for (const manner of [false, true]) {
      const { emu } = await rolling({ policy: { toolCallRate: 1 }, manners: { responsesToolCallEvents: manner } });
      const c = await claim(emu);
      const res = await post(emu, "/v1/responses", { input: "What is 4 + 4?", tools: [calculatorResponsesTool], stream: true }, bearer(c.openai_api_key));
      const fs = frames(await res.text()).filter((f) => !("comment" in f)) as Array<{ event: string; data: any }>;
      const fc = fs.at(-1)!.data.response.output[0];
      expect(fc).toMatchObject({ type: "function_call", name: "calculator" });
      if (!manner) expect(fs.map((f) => f.event)).toEqual(["response.created", "response.in_progress", "response.completed"]);
      else {
        expect(fs.map((f) => f.event)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done", "response.completed"]);
        expect(fs[2]!.data.item).toEqual({ ...fc, arguments: "", status: "in_progress" });
        expect(fs[3]!.data).toMatchObject({ item_id: fc.id, output_index: 0, delta: fc.arguments });
      }
      emu.close();
    }
  });

  it("an incomplete response (finish reason length) and the stop_reason mapping", () => {
    const answer = { id: "x", created: 100, content: "cut", toolCalls: null, usage: null, finishReason: "length" };
    const r = responseObject(answer, { model: "m", instructions: null }, createRng(1), 101.5);
    expect(r).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 } });
    expect(responsesSseEvents(r)).toContain('"created_at": 100.0, "completed_at": 101.5');
    expect([stopReasonOf("length"), stopReasonOf("tool_calls"), stopReasonOf("stop"), stopReasonOf("content_filter")]).toEqual(["max_tokens", "tool_use", "end_turn", "end_turn"]);
  });
});

describe("pre-flight and errors (llm-routes §1, §9.6)", () => {
  it.each(["/v1/responses", "/v1/messages"])("%s: 401s with detail, unparseable body → 500 before the swarm checks, the 404 texts", async (path) => {
    const offline = makeEmulator().emu;
    const garbage = await call(offline, "POST", path, "{not json", bearer(defaultEpisodeKey("a".repeat(32))));
    expect([garbage.status, garbage.text]).toEqual([500, "Internal Server Error"]);
    const off = await call(offline, "POST", path, { input: "hi", messages: [] }, bearer(defaultEpisodeKey("a".repeat(32))));
    expect([off.status, off.json]).toEqual([404, { detail: ServerText.proxyNotRolling }]);
    offline.close();

    const { emu } = await rolling();
    const missing = await call(emu, "POST", path, { input: "hi" });
    expect([missing.status, missing.json]).toEqual([401, { detail: ServerText.missingAuthorization }]);
    const bad = await call(emu, "POST", path, { input: "hi" }, { authorization: "Bearer sk-ajet-not-base64!!" });
    expect(bad.status).toBe(401);
    expect(bad.json.detail).toMatch(/^Invalid authorization header: /);
    expect((await call(emu, "POST", path, { input: "hi", temperature: "hot" }, bearer(defaultEpisodeKey("f".repeat(32))))).status).toBe(500);
    const ghost = "f".repeat(32);
    expect((await call(emu, "POST", path, { input: "hi" }, bearer(defaultEpisodeKey(ghost)))).json).toEqual({ detail: ServerText.episodeNotFound(ghost) });
    const registered = emu.engine.queue[0] as string;
    const notClaimed = await call(emu, "POST", path, { input: "hi", messages: [{ role: "user", content: "hi" }] }, bearer(defaultEpisodeKey(registered)));
    expect([notClaimed.status, notClaimed.json]).toEqual([404, { detail: ServerText.proxyNotClaimed(registered) }]);
    expect(emu.engine.records.get(registered)?.llm_call_count).toBe(1); // counted before the wait refused it
    emu.close();
  });

  it("Messages reads Authorization first, x-api-key only when Authorization is absent; Responses never reads x-api-key", async () => {
    const { emu } = await rolling();
    const c = await claim(emu);
    const body = { model: "m", max_tokens: 16, messages: [{ role: "user", content: "hi" }] };
    expect((await call(emu, "POST", "/v1/messages", body, { "x-api-key": c.openai_api_key })).status).toBe(200);
    expect((await call(emu, "POST", "/v1/messages", body, { authorization: c.openai_api_key })).status).toBe(200);
    const wins = await call(emu, "POST", "/v1/messages", body, { authorization: "Bearer sk-ajet-e30=", "x-api-key": c.openai_api_key });
    expect([wins.status, wins.json]).toEqual([401, { detail: ServerText.invalidAuthorizationData }]);
    const responses = await call(emu, "POST", "/v1/responses", { input: "hi" }, { "x-api-key": c.openai_api_key });
    expect([responses.status, responses.json]).toEqual([401, { detail: ServerText.missingAuthorization }]);
    emu.close();
  });

  it("a stream whose episode is wiped mid-call ends without its terminal event at the next 6 s slice", async () => {
    const { emu, clock } = await rolling({ timings: { weightSyncMs: 600_000 } });
    const c = await claim(emu);
    emu.hooks.llmLatencyMs = 120_000;
    const r = reading(await post(emu, "/v1/responses", { input: "hi", stream: true }, bearer(c.openai_api_key)));
    const m = reading(await post(emu, "/v1/messages", { max_tokens: 8, messages: [{ role: "user", content: "hi" }], stream: true }, { "x-api-key": c.openai_api_key }));
    await clock.advance(7_000);
    expect(r.out.done).toBe(false);
    expect((await call(emu, "POST", "/stop_engine", {})).status).toBe(200); // every record wiped, as at a weight sync
    await clock.advance(6_000);
    await Promise.all([r.pump, m.pump]);
    expect(names(frames(r.out.text))).toEqual([":keepalive", ":keepalive", ":keepalive"]);
    expect(names(frames(m.out.text))).toEqual(["message_start", "content_block_start", "ping", "content_block_delta", "ping", "content_block_delta", "ping", "content_block_delta"]);
    const llm = emu.journal.events.filter((e) => e.ev === "llm");
    expect(llm).toEqual([expect.objectContaining({ route: "responses", outcome: "error", status: 404, stream: true }), expect.objectContaining({ route: "messages", outcome: "error", status: 404 })]);
    emu.close();
  });

  it("a stream refused at the pre-flight still opens (200) and ends without its terminal event", async () => {
    const { emu } = await rolling();
    const ghost = "e".repeat(32);
    const res = await post(emu, "/v1/messages", { max_tokens: 8, messages: [{ role: "user", content: "hi" }], stream: true }, { "x-api-key": defaultEpisodeKey(ghost) });
    expect(res.status).toBe(200);
    expect(names(frames(await res.text()))).toEqual(["message_start", "content_block_start", "ping", "content_block_delta"]);
    emu.close();
  });

  it("gives up after the call budget: 500 for a plain call, a truncated stream for a streamed one", async () => {
    const { emu, clock } = await rolling({ timings: { llmCallBudgetMs: 30_000 } });
    const c = await claim(emu, "client-a", { discard_episode_timeout: 3600 });
    emu.hooks.llmLatencyMs = 90_000;
    let answered: { status: number; text: string } | null = null;
    void call(emu, "POST", "/v1/responses", { input: "hi" }, bearer(c.openai_api_key)).then((x) => (answered = x));
    const s = reading(await post(emu, "/v1/responses", { input: "hi", stream: true }, bearer(c.openai_api_key)));
    await clock.advance(29_000);
    expect(answered).toBeNull();
    await clock.advance(7_000);
    expect(answered).toEqual(expect.objectContaining({ status: 500, text: "Internal Server Error" }));
    await s.pump;
    expect(s.out.text).not.toContain("response.completed");
    emu.close();
  });

  it("a client that leaves mid-stream does not stop the generation: it is recorded (ghost-sample mechanism)", async () => {
    const { emu, clock } = await rolling();
    const c = await claim(emu);
    emu.hooks.llmLatencyMs = 30_000;
    const s = reading(await post(emu, "/v1/messages", { model: "cc", max_tokens: 8, messages: [{ role: "user", content: "What is 1 + 1?" }], stream: true }, { "x-api-key": c.openai_api_key }));
    await clock.advance(10_000);
    await s.cancel();
    expect(emu.engine.records.get(c.episode_uuid)?.llm_call_count).toBe(1);
    expect((await call(emu, "POST", "/replay_latest_llm_call")).status).toBe(404);
    await clock.advance(25_000);
    const replay = (await call(emu, "POST", "/replay_latest_llm_call")).json;
    expect(replay).toMatchObject({ format: "messages", output: { type: "message", model: "cc" } });
    expect(emu.journal.events.filter((e) => e.ev === "llm")).toEqual([
      expect.objectContaining({ route: "messages", episodeUuid: c.episode_uuid, clientUuid: "client-a", callIndex: 1, stream: true, outcome: "client_gone", status: 200, startMs: expect.any(Number) }),
    ]);
    emu.close();
  });

  it("closing the emulator stops pending generations: no timer is left to hold a stopping process", async () => {
    const { emu, clock } = await rolling();
    const c = await claim(emu, "client-a", { discard_episode_timeout: 3600 });
    emu.hooks.llmLatencyMs = 600_000;
    const plain = call(emu, "POST", "/v1/responses", { input: "hi" }, bearer(c.openai_api_key));
    const s = reading(await post(emu, "/v1/messages", { max_tokens: 8, messages: [{ role: "user", content: "hi" }], stream: true }, { "x-api-key": c.openai_api_key }));
    await clock.advance(10_000);
    emu.close();
    await clock.flush();
    expect((await plain).status).toBe(500);
    await s.pump;
    expect(s.out.text).not.toContain("message_stop");
    expect(clock.pendingTimers()).toBe(0);
  });

  it("twenty concurrent pending calls raise no MaxListenersExceededWarning (they share the emulator's shutdown signal)", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => void warnings.push(w.name);
    process.on("warning", onWarning);
    try {
      const { emu, clock } = makeEmulator();
      await bootToRolling(emu, clock, { batchSize: 8, numRepeat: 4, maxEnvWorker: 32 });
      emu.hooks.llmLatencyMs = 1_000;
      const pending: Array<Promise<unknown>> = [];
      for (let i = 0; i < 20; i++) pending.push(call(emu, "POST", "/v1/responses", { input: "hi" }, bearer((await claim(emu)).openai_api_key)));
      await clock.advance(2_000);
      expect((await Promise.all(pending)).every((r) => (r as { status: number }).status === 200)).toBe(true);
      await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
      expect(warnings).toEqual([]);
      emu.close();
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("fault hooks apply to every route: llm-500 fails a plain call with 500 and ends a stream without its terminal event", async () => {
    const { emu } = await rolling({ faults: [{ kind: "llm-500", rate: 1 }] });
    const c = await claim(emu);
    const plain = await call(emu, "POST", "/v1/messages", { max_tokens: 8, messages: [{ role: "user", content: "hi" }] }, { "x-api-key": c.openai_api_key });
    expect(plain.status).toBe(500);
    const stream = await post(emu, "/v1/responses", { input: "hi", stream: true }, bearer(c.openai_api_key));
    expect(await stream.text()).toBe(": keepalive\n\n");
    expect(emu.journal.events.filter((e) => e.ev === "fault").map((e) => (e as { path: string }).path)).toEqual(["chatCompletion", "chatCompletion"]);
    emu.close();
  });
});

describe("routes around them (llm-routes §1, §6)", () => {
  it("nothing else under /v1: count_tokens and models answer FastAPI's 404, GET on a proxy route its 405; /health is ok", async () => {
    const { emu } = await rolling();
    for (const path of ["/v1/messages/count_tokens", "/v1/models"]) {
      const res = path.endsWith("models") ? await call(emu, "GET", path) : await call(emu, "POST", path, {});
      expect([res.status, res.json]).toEqual([404, { detail: "Not Found" }]);
    }
    expect((await call(emu, "GET", "/v1/messages")).status).toBe(405);
    expect((await call(emu, "GET", "/v1/responses")).status).toBe(405);
    expect((await call(emu, "GET", "/health")).json).toEqual({ status: "ok" });
    expect(await call(emu, "POST", "/replay_latest_llm_call")).toMatchObject({ status: 404, json: { detail: ServerText.noLlmCallYet } });
    emu.close();
  });

  it("the slow profile makes coding-agent episodes last minutes: calls of ~20 s median, capped at 5 min", async () => {
    const { emu } = makeEmulator({ profile: "slow" });
    expect(emu.config.timings.llmLatency).toEqual({ kind: "lognormal", medianMs: 20_000, sigma: 0.8, maxMs: 300_000 });
    expect(emu.config.timings.llmCallBudgetMs).toBe(3_600_000);
    const policy = emu.policy as SimulatedPolicy;
    const latencies = Array.from({ length: 8 }, (_, i) => policy.respond({ messages: [{ role: "user", content: "hi" }], episodeUuid: "e", callIndex: i + 1 }).latencyMs);
    expect(latencies.reduce((a, b) => a + b, 0)).toBeGreaterThan(60_000); // an 8-call episode lasts minutes
    expect(Math.max(...latencies)).toBeLessThanOrEqual(300_000);
    emu.close();
  });
});

describe("POST /v1/messages (llm-routes §4)", () => {
  it("answers the message object: text or tool_use blocks, stop_reason end_turn (the converter says stop), usage", async () => {
    const { emu } = await rolling({ policy: { toolCallRate: 1 } });
    const c = await claim(emu);
    const res = await call(emu, "POST", "/v1/messages", { model: "claude-x", max_tokens: 64, messages: [{ role: "user", content: "What is 9 + 1?" }], tools: [calculatorMessagesTool] }, { "x-api-key": c.openai_api_key });
    expect(Object.keys(res.json)).toEqual(["id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"]);
    expect(res.json).toMatchObject({ type: "message", role: "assistant", model: "claude-x", stop_reason: "end_turn", stop_sequence: null });
    expect(res.json.id).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(res.json.content).toEqual([{ type: "tool_use", id: expect.any(String), name: "calculator", input: { expression: "9 + 1" } }]);
    expect(res.json.usage).toEqual({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
    expect((await call(emu, "POST", "/replay_latest_llm_call")).json.format).toBe("messages");
    emu.close();
  });

  it("translates system, text, tool_use and tool_result blocks and tools the way the adapter does", async () => {
    const { emu } = await rolling();
    const c = await claim(emu);
    const seen = capture(emu);
    await call(
      emu,
      "POST",
      "/v1/messages",
      {
        system: [{ type: "text", text: "You code." }, { type: "text", text: "Be safe." }],
        max_tokens: 100,
        stop_sequences: ["END"],
        messages: [
          { role: "system", content: "skipped" },
          { role: "user", content: [{ type: "text", text: "Fix " }, { type: "image", source: {} }, { type: "text", text: "it" }] },
          { role: "assistant", content: [{ type: "thinking", thinking: "hmm" }, { type: "tool_use", id: "toolu_1", name: "calculator", input: { expression: "2*3" } }] },
          { role: "user", content: [{ type: "text", text: "before" }, { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "6" }] }] },
        ],
        tools: [calculatorMessagesTool, { description: "no name" }],
        tool_choice: { type: "any" },
      },
      { "x-api-key": c.openai_api_key },
    );
    expect(seen[0]?.route).toBe("messages");
    expect(seen[0]?.messages).toEqual([
      { role: "system", content: "You code. Be safe." },
      { role: "user", content: "Fix it" },
      { role: "assistant", content: null, tool_calls: [{ id: "toolu_1", type: "custom", function: { name: "calculator", arguments: '{"expression": "2*3"}' } }] },
      { role: "user", content: "before" },
      { role: "tool", tool_call_id: "toolu_1", content: "6" },
    ]);
    expect(seen[0]?.tools).toEqual([{ type: "function", function: { name: "calculator", parameters: calculatorMessagesTool.input_schema, description: "math" } }]);
    await call(emu, "POST", "/v1/messages", { max_tokens: 1, messages: [] }, { "x-api-key": c.openai_api_key });
    expect(seen[1]?.messages).toEqual([{ role: "system", content: ServerText.defaultSystemPrompt }]); // unlike Responses
    emu.close();
  });

  it("streams: the prologue before the engine answers, ping + empty delta every 5 s, then the remainder", async () => {
    const { emu, clock } = await rolling({ policy: { toolCallRate: 1 } });
    const c = await claim(emu);
    emu.hooks.llmLatencyMs = 11_000;
    const res = await post(emu, "/v1/messages", { model: "claude-x", max_tokens: 64, messages: [{ role: "user", content: "What is 9 + 1?" }], tools: [calculatorMessagesTool], stream: true }, { "x-api-key": c.openai_api_key });
    const r = reading(res);
    await clock.flush();
    const prologue = frames(r.out.text) as Array<{ event: string; data: any }>;
    expect(prologue.map((f) => f.event)).toEqual(["message_start", "content_block_start", "ping", "content_block_delta"]);
    expect(prologue[0]!.data).toEqual({ message: { id: expect.stringMatching(/^[0-9a-f]{32}$/), type: "message", role: "assistant", model: "claude-x", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } }, type: "message_start" });
    expect(prologue[1]!.data).toEqual({ index: 0, content_block: { type: "text", text: "" }, type: "content_block_start" });
    expect(r.out.text).toContain('event: ping\ndata: {"type": "ping"}\n\nevent: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ""}}\n\n');
    await clock.advance(10_500);
    expect(names(frames(r.out.text)).filter((n) => n === "ping")).toHaveLength(3); // t = 0, 5, 10 s
    await clock.advance(1_000);
    await r.pump;
    const fs = frames(r.out.text) as Array<{ event: string; data: any }>;
    expect(fs.slice(8).map((f) => f.event)).toEqual(["content_block_delta", "content_block_stop", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
    const [textDelta, stop0, useStart, useDelta, stop1, messageDelta, messageStop] = fs.slice(8).map((f) => f.data);
    expect(textDelta).toEqual({ index: 0, delta: { type: "text_delta", text: "" }, type: "content_block_delta" });
    expect(stop0).toEqual({ index: 0, type: "content_block_stop" });
    expect(useStart).toEqual({ index: 1, content_block: { type: "tool_use", id: expect.any(String), name: "calculator", input: {} }, type: "content_block_start" });
    expect(useDelta).toEqual({ index: 1, delta: { type: "input_json_delta", partial_json: '{"expression": "9 + 1"}' }, type: "content_block_delta" });
    expect(stop1).toEqual({ index: 1, type: "content_block_stop" });
    expect(messageDelta).toEqual({ delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: expect.any(Number) }, type: "message_delta" });
    expect(messageStop).toEqual({ type: "message_stop" });
    const replay = (await call(emu, "POST", "/replay_latest_llm_call")).json;
    expect(replay.output.id).toBe(prologue[0]!.data.message.id);
    emu.close();
  });

  it("a call held open 10 minutes streams ~120 heartbeats and completes once, counted once (a long call on the slow path)", async () => {
    const { emu, clock } = await rolling({ timings: { tickMs: 1_000 } });
    const c = await claim(emu, "client-a", { discard_episode_timeout: 3600 });
    emu.hooks.llmLatencyMs = 600_000;
    const r = reading(await post(emu, "/v1/messages", { max_tokens: 8, messages: [{ role: "user", content: "What is 1 + 1?" }], stream: true }, { authorization: `Bearer ${c.openai_api_key}` }));
    for (let t = 0; t < 600_000; t += 60_000) await clock.advance(60_000);
    await r.pump;
    const ns = names(frames(r.out.text));
    expect(ns.filter((n) => n === "ping")).toHaveLength(120); // t = 0, 5, …, 595 s
    expect(ns.at(-1)).toBe("message_stop");
    expect(emu.engine.records.get(c.episode_uuid)?.llm_call_count).toBe(1);
    expect(emu.engine.records.get(c.episode_uuid)?.episode_status).toBe("claimed"); // the janitor never took it
    emu.close();
  });
});

describe("chat stream keepalives (manner chatStreamKeepalive, newest server)", () => {
  const ask = (emu: Emulator, key: string) => {
    return post(emu, "/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "What is 2 + 2?" }], stream: true }, bearer(key));
  };

  it("opens with `: keepalive`, repeats it every 5 s, then the three chunks and [DONE]; counted in the journal", async () => {
    const { emu, clock } = await rolling({ manners: { chatStreamKeepalive: true } });
    const c = await claim(emu);
    emu.hooks.llmLatencyMs = 12_000;
    const r = reading(await ask(emu, c.openai_api_key));
    await clock.advance(13_000);
    await r.pump;
    const blocks = r.out.text.split("\n\n").filter(Boolean);
    expect(blocks.slice(0, 3)).toEqual([": keepalive", ": keepalive", ": keepalive"]);
    expect(blocks.slice(3).map((b) => b.slice(0, 6))).toEqual(["data: ", "data: ", "data: ", "data: "]);
    expect(blocks.at(-1)).toBe("data: [DONE]");
    expect(emu.journal.events.filter((e) => e.ev === "llm")).toEqual([expect.objectContaining({ route: "chat", stream: true, outcome: "ok" })]);
    emu.close();
  });

  it("an error after the stream opened writes the stray content_block_stop frame and no [DONE]", async () => {
    const { emu, clock } = await rolling({ manners: { chatStreamKeepalive: true } });
    const c = await claim(emu);
    emu.hooks.llmLatencyMs = 60_000;
    const r = reading(await ask(emu, c.openai_api_key));
    await clock.advance(1_000);
    await call(emu, "POST", "/abort_episode", { client_uuid: "client-a", episode_uuid: c.episode_uuid, task_id: "", workflow_output: { reward: 0, metadata: {} } });
    await clock.advance(6_000);
    await r.pump;
    expect(r.out.text).toBe(': keepalive\n\n: keepalive\n\nevent: content_block_stop\ndata: {"index": 0, "type": "content_block_stop"}\n\n');
    emu.close();
  });

  it("off (default): the stream is sent whole after the generation, and a plain chat call is journaled too", async () => {
    const { emu } = await rolling();
    const c = await claim(emu);
    const res = await ask(emu, c.openai_api_key);
    expect((await res.text()).startsWith("data: ")).toBe(true);
    expect(emu.journal.events.filter((e) => e.ev === "llm")).toEqual([expect.objectContaining({ route: "chat", stream: true, outcome: "ok", status: 200, callIndex: 1 })]);
    emu.close();
  });
});
