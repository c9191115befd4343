/**
 * The emulator's LLM proxy (spec §9, BC-25, BC-38, BC-44): key decoding with the real error texts, the 404
 * texts, counting and activity, the default system prompt, the 3-chunk SSE stream, tool calls, fault hooks
 * and the upstream forwarder (a fake OpenAI server on 127.0.0.1).
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { ENGINE, ServerText, defaultEpisodeKey, encodeEpisodeKey } from "../../../src/protocol/index.ts";
import type { ChatCallInfo } from "../../../src/emulator/index.ts";
import { bootToRolling, call, chat, claim, makeEmulator } from "./helpers.ts";

const rolling = async (options = {}) => {
  const { emu, clock } = makeEmulator(options);
  await bootToRolling(emu, clock, { batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
  return { emu, clock };
};
const authError = (detail: string) => ({ status_code: 401, detail, headers: null });
const b64 = (s: string) => Buffer.from(s).toString("base64");

describe("key decoding (spec §5.3, BC-38, transcript)", () => {
  it.each([
    ["missing header", undefined, ServerText.missingAuthorization],
    ["garbage", "Bearer sk-ajet-not-base64!!", "Invalid authorization header: Invalid base64-encoded string: number of data characters (9) cannot be 1 more than a multiple of 4"],
    ["missing padding", "Bearer sk-ajet-YWJj" + "ZA", "Invalid authorization header: Incorrect padding"],
    ["not UTF-8", "Bearer sk-ajet-/w==", "Invalid authorization header: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"],
    ["not JSON", `Bearer sk-ajet-${b64("hello")}`, "Invalid authorization header: Expecting value: line 1 column 1 (char 0)"],
    ["a JSON list", `Bearer sk-ajet-${b64("[1]")}`, "Invalid authorization header: 'list' object has no attribute 'get'"],
    ["an empty episode_uuid", `Bearer sk-ajet-${b64('{"agent_name": "a", "target_tag": "t", "episode_uuid": ""}')}`, ServerText.invalidAuthorizationData],
  ])("BC-38 %s → HTTP 200 with the 401 error body", async (_name, authorization, detail) => {
    const { emu } = await rolling();
    const res = await call(emu, "POST", "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }] }, authorization ? { authorization } : {});
    expect(res.status).toBe(200);
    expect(res.json).toEqual(authError(detail));
    emu.close();
  });

  it("accepts the key with or without Bearer / bearer", async () => {
    const { emu } = await rolling();
    const c = await claim(emu);
    for (const authorization of [`Bearer ${c.openai_api_key}`, `bearer ${c.openai_api_key}`, c.openai_api_key]) {
      const res = await call(emu, "POST", "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }] }, { authorization });
      expect(res.json.object).toBe("chat.completion");
    }
    expect(emu.engine.records.get(c.episode_uuid)?.llm_call_count).toBe(3);
    emu.close();
  });
});

describe("episode checks (spec §9.2, §9.6)", () => {
  it("404 texts: not rolling, episode not found, not claimed (counted first)", async () => {
    const offline = makeEmulator().emu;
    const offRes = await call(offline, "POST", "/v1/chat/completions", { messages: [] }, { authorization: `Bearer ${defaultEpisodeKey("a".repeat(32))}` });
    expect([offRes.status, offRes.json]).toEqual([404, { detail: ServerText.proxyNotRolling }]);

    const { emu } = await rolling();
    const ghost = "f".repeat(32);
    expect((await chat(emu, defaultEpisodeKey(ghost))).json).toEqual({ detail: ServerText.episodeNotFound(ghost) });
    const registered = emu.engine.queue[0] as string;
    const res = await chat(emu, defaultEpisodeKey(registered));
    expect([res.status, res.json]).toEqual([404, { detail: ServerText.proxyNotClaimed(registered) }]);
    expect(emu.engine.records.get(registered)?.llm_call_count).toBe(1);
    offline.close();
    emu.close();
  });

  it("an unparseable body is a plain-text 500", async () => {
    const { emu } = await rolling();
    const c = await claim(emu);
    const res = await call(emu, "POST", "/v1/chat/completions", "{not json", { authorization: `Bearer ${c.openai_api_key}` });
    expect([res.status, res.contentType, res.text]).toEqual([500, "text/plain; charset=utf-8", "Internal Server Error"]);
    emu.close();
  });

  it("BC-25 a call in flight when the weight sync wipes the records answers 404 not rolling", async () => {
    const { emu, clock } = makeEmulator({ simulateEngine: false });
    await call(emu, "POST", "/update_engine_status", { engine_status: ENGINE.ROLLING, global_step: 1 });
    const uuid = "1".repeat(32);
    await call(emu, "POST", "/register_episode", { episode_uuid: uuid, openai_api_key: defaultEpisodeKey(uuid) });
    await claim(emu);
    emu.hooks.llmLatencyMs = 5_000;
    const pending = chat(emu, defaultEpisodeKey(uuid));
    await clock.advance(1_000);
    await call(emu, "POST", "/update_engine_status", { engine_status: ENGINE.WEIGHT_SYNCING });
    await clock.advance(5_000);
    const res = await pending;
    expect([res.status, res.json]).toEqual([404, { detail: ServerText.proxyNotRolling }]);
    emu.close();
  });
});

describe("generation", () => {
  it("BC-44 injects the default system prompt when the first message is not system, counts and refreshes activity", async () => {
    const { emu, clock } = await rolling();
    const seen: ChatCallInfo[] = [];
    emu.hooks.chatCompletion = (info) => void seen.push(info);
    const c = await claim(emu);
    await clock.advance(3_000);
    const body = { model: "m", messages: [{ role: "user", content: "What is 2 + 3?" }] };
    const res = await call(emu, "POST", "/v1/chat/completions", body, { authorization: `Bearer ${c.openai_api_key}` });
    expect(seen[0]?.messages[0]).toEqual({ role: "system", content: ServerText.defaultSystemPrompt });
    expect(seen[0]?.callIndex).toBe(1);
    // usage counts what the model saw: 9 + 5 words, + 4 per message
    expect(res.json.usage.prompt_tokens).toBe(9 + 5 + 4 + 4);
    expect(emu.engine.records.get(c.episode_uuid)?.latest_activity_timestamp).toBe(clock.nowMs() / 1000);
    expect((await call(emu, "POST", "/replay_latest_llm_call")).json.input).toEqual(body);
    emu.close();
  });

  it("answers non-streaming in the real proxy's shape", async () => {
    const { emu } = await rolling({ policy: { initialAccuracy: 1 } });
    const c = await claim(emu);
    const res = await chat(emu, c.openai_api_key);
    expect(res.json).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{32}$/),
      choices: [{ finish_reason: "stop", index: 0, logprobs: null, message: { content: "Let me compute 2 + 3. The result is 5. Final answer: \\boxed{5}", refusal: null, role: "assistant", annotations: null, audio: null, function_call: null, tool_calls: null } }],
      created: expect.any(Number),
      model: "unknown",
      object: "chat.completion",
      service_tier: null,
      system_fingerprint: null,
      usage: { completion_tokens: 13, prompt_tokens: 26, total_tokens: 39, completion_tokens_details: null, prompt_tokens_details: null },
    });
    emu.close();
  });

  it("streams three chunks and [DONE] with Python json.dumps separators; model falls back to unknown_model", async () => {
    const { emu } = await rolling();
    const c = await claim(emu);
    const res = await chat(emu, c.openai_api_key, { stream: true, model: "" });
    expect(res.contentType).toBe("text/event-stream; charset=utf-8");
    const frames = res.text.split("\n\n").filter(Boolean);
    expect(frames).toHaveLength(4);
    expect(frames[3]).toBe("data: [DONE]");
    expect(frames[0]).toMatch(/^data: \{"id": "chatcmpl-[0-9a-f]{32}", "choices": \[\{"delta": \{"content": "", "role": "assistant"\}, "finish_reason": null, "index": 0, "logprobs": null\}\], "created": \d+, "model": "unknown_model", "object": "chat.completion.chunk"\}$/);
    const chunks = frames.slice(0, 3).map((f) => JSON.parse(f.slice("data: ".length)));
    expect(new Set(chunks.map((k) => k.id)).size).toBe(1);
    expect(chunks[1].choices[0].delta).toEqual({ content: expect.stringContaining("Let me compute 2 + 3.") });
    expect(chunks[2].choices[0]).toEqual({ delta: { content: "" }, finish_reason: "stop", index: 0, logprobs: null });
    expect(chunks[2].usage.prompt_tokens).toBe(26);
    expect("usage" in chunks[0]).toBe(false);
    emu.close();
  });

  it("calls an offered calculator tool, then answers normally after the tool result", async () => {
    const { emu } = await rolling({ policy: { toolCallRate: 1, initialAccuracy: 1 } });
    const c = await claim(emu);
    const tools = [{ type: "function", function: { name: "calculator", description: "evaluate", parameters: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] } } }];
    const first = await chat(emu, c.openai_api_key, { tools });
    const message = first.json.choices[0].message;
    expect(message.content).toBe("");
    expect(message.tool_calls).toEqual([{ id: expect.stringMatching(/^chatcmpl-tool-[0-9a-f]{32}$/), function: { arguments: '{"expression": "2 + 3"}', name: "calculator" }, type: "function" }]);
    const streamed = await chat(emu, c.openai_api_key, { tools, stream: true });
    const contentChunk = JSON.parse(streamed.text.split("\n\n")[1]!.slice(6));
    expect(contentChunk.choices[0].delta.tool_calls[0]).toMatchObject({ index: 0, type: "function", function: { name: "calculator" } });
    const followUp = await chat(emu, c.openai_api_key, {
      tools,
      messages: [
        { role: "user", content: "What is 2 + 3? Put the final integer answer in \\boxed{}." },
        { role: "assistant", content: "", tool_calls: message.tool_calls },
        { role: "tool", tool_call_id: message.tool_calls[0].id, content: "5" },
      ],
    });
    expect(followUp.json.choices[0].message).toMatchObject({ content: "Let me compute 2 + 3. The result is 5. Final answer: \\boxed{5}", tool_calls: null });
    emu.close();
  });

  it("a chat hook can force a 500 after the call was counted", async () => {
    const { emu } = await rolling();
    emu.hooks.chatCompletion = () => ({ status: 500 });
    const c = await claim(emu);
    expect((await chat(emu, c.openai_api_key)).text).toBe("Internal Server Error");
    expect(emu.engine.records.get(c.episode_uuid)?.llm_call_count).toBe(1);
    emu.close();
  });
});

describe("upstream forwarding", () => {
  it("forwards messages (system prompt injected) and tools with the upstream key; keeps the swarm checks", async () => {
    const received: Array<{ auth: string | undefined; body: any }> = [];
    let fail = false;
    const server = createServer((req: IncomingMessage, res) => {
      let data = "";
      req.on("data", (d) => (data += d));
      req.on("end", () => {
        received.push({ auth: req.headers.authorization, body: JSON.parse(data) });
        res.writeHead(fail ? 503 : 200, { "content-type": "application/json" });
        res.end(JSON.stringify({ choices: [{ message: { role: "assistant", content: "upstream says 5" } }], usage: { prompt_tokens: 11, completion_tokens: 3 } }));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    try {
      const { emu } = await rolling({ upstream: { baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: "up-key", model: "real-model" } });
      const c = await claim(emu);
      const res = await call(emu, "POST", "/v1/chat/completions", { model: "m", temperature: 0.1, messages: [{ role: "user", content: "2+3?" }] }, { authorization: `Bearer ${c.openai_api_key}` });
      expect(res.json.choices[0].message.content).toBe("upstream says 5");
      expect(res.json.model).toBe("unknown");
      expect(res.json.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 });
      expect(received[0]?.auth).toBe("Bearer up-key");
      expect(received[0]?.body).toEqual({ model: "real-model", stream: false, messages: [{ role: "system", content: ServerText.defaultSystemPrompt }, { role: "user", content: "2+3?" }] });
      fail = true;
      expect((await chat(emu, c.openai_api_key)).text).toBe("Internal Server Error");
      const ghost = encodeEpisodeKey({ agent_name: "a", target_tag: "t", episode_uuid: "0".repeat(32), episode_address: "" });
      expect((await chat(emu, ghost)).status).toBe(404);
      expect(received).toHaveLength(2);
      emu.close();
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
