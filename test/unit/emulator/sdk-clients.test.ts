/**
 * The official SDKs as clients of the emulator over HTTP on 127.0.0.1 (issue 20 §1): the `openai` package's
 * `responses.create` (plain and streamed, `responses.stream`) and `@anthropic-ai/sdk`'s `messages.create` /
 * `messages.stream`, each bound the way an agent binds them to an episode (OpenAI: `base_url` with `/v1`, Bearer key;
 * Anthropic: `base_url` without `/v1`, the key as `x-api-key` or as a Bearer auth token). Both SDKs parse the
 * emulator's streams — keepalive comments, `ping`s and empty heartbeat deltas included — and see the tool calls.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type RunningEmulator } from "../../../src/emulator/index.ts";
import { yamlConfig } from "./helpers.ts";

let running: RunningEmulator;

async function post(path: string, body: unknown): Promise<any> {
  const res = await fetch(`${running.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return res.json();
}

/** Claims an episode; @returns its base URL (with /v1) and key. */
async function claimEpisode(): Promise<{ baseURL: string; apiKey: string; uuid: string }> {
  for (let i = 0; i < 200; i++) {
    const c = await post("/claim_episode", { client_uuid: "sdk-client", episode_type: "train", discard_episode_timeout: 120, throttle_policy: null });
    if (c.success) return { baseURL: c.openai_base_url, apiKey: c.openai_api_key, uuid: c.episode_uuid };
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("no episode could be claimed");
}

const calculator = {
  name: "calculator",
  description: "Evaluates an arithmetic expression.",
  schema: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] },
};

beforeAll(async () => {
  // toolCallRate 1: every episode offered a tool calls it first, so each SDK sees a tool call on its first turn
  running = await startEmulator({ port: 0, profile: "fast", seed: 3, policy: { toolCallRate: 1 }, manners: { resetAfter500: false } });
  await post("/sync_train_config", { yaml_as_string: yamlConfig({ batchSize: 8, numRepeat: 2, maxEnvWorker: 16 }) });
  await post("/start_engine", {});
  for (let i = 0; i < 400; i++) {
    const s = (await (await fetch(`${running.url}/get_engine_status`)).json()) as { engine_status: string };
    if (s.engine_status === "ENGINE.ROLLING") return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("the emulator never reached ENGINE.ROLLING");
});

afterAll(async () => {
  await running?.close();
});

describe("openai SDK: Responses API against the emulator", () => {
  const tools = [{ type: "function" as const, name: calculator.name, description: calculator.description, parameters: calculator.schema, strict: false }];

  it("responses.create (plain): a function_call first, then text after the function output", async () => {
    const ep = await claimEpisode();
    const openai = new OpenAI({ baseURL: ep.baseURL, apiKey: ep.apiKey, maxRetries: 0 });
    const first = await openai.responses.create({ model: "agent-model", instructions: "You are a careful math assistant.", input: "What is 17 + 25?", tools });
    expect(first.object).toBe("response");
    expect(first.status).toBe("completed");
    const call = first.output.find((o) => o.type === "function_call");
    expect(call).toMatchObject({ type: "function_call", name: "calculator", status: "completed" });
    if (call?.type !== "function_call") throw new Error("no function call");
    expect(JSON.parse(call.arguments)).toEqual({ expression: "17 + 25" });
    const second = await openai.responses.create({
      model: "agent-model",
      input: [
        { role: "user", content: "What is 17 + 25?" },
        { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: "function_call_output", call_id: call.call_id, output: "42" },
      ],
      tools,
    });
    expect(second.output_text).toMatch(/17 \+ 25/);
    expect(second.usage?.output_tokens).toBeGreaterThan(0);
    expect(running.emulator.engine.records.get(ep.uuid)?.llm_call_count).toBe(2);
  });

  it("responses.create (stream) and responses.stream: events parse, the tool call is in the final response", async () => {
    const ep = await claimEpisode();
    const openai = new OpenAI({ baseURL: ep.baseURL, apiKey: ep.apiKey, maxRetries: 0 });
    const types: string[] = [];
    const stream = await openai.responses.create({ model: "agent-model", input: "What is 3 + 4?", tools, stream: true });
    let completed: OpenAI.Responses.Response | null = null;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.completed") completed = event.response;
    }
    expect(types).toEqual(["response.created", "response.in_progress", "response.completed"]);
    expect(completed?.output).toEqual([expect.objectContaining({ type: "function_call", name: "calculator", arguments: '{"expression": "3 + 4"}' })]);

    const helper = openai.responses.stream({ model: "agent-model", input: [{ role: "user", content: "What is 3 + 4?" }, { type: "function_call_output", call_id: "c1", output: "7" }], tools });
    const deltas: string[] = [];
    helper.on("response.output_text.delta", (e) => deltas.push(e.delta));
    const final = await helper.finalResponse();
    expect(final.output_text).toMatch(/3 \+ 4/);
    expect(deltas.join("")).toBe(final.output_text);
  });
});

describe("@anthropic-ai/sdk: Messages API against the emulator", () => {
  const tools = [{ name: calculator.name, description: calculator.description, input_schema: calculator.schema as Anthropic.Tool.InputSchema }];
  /** The Anthropic base URL of an episode: the root, without /v1 (the SDK appends /v1/messages). */
  const rootOf = (baseURL: string) => baseURL.replace(/\/v1\/?$/, "");

  it("messages.create with x-api-key: a tool_use block, then text after the tool_result", async () => {
    const ep = await claimEpisode();
    const anthropic = new Anthropic({ baseURL: rootOf(ep.baseURL), apiKey: ep.apiKey, maxRetries: 0 });
    const first = await anthropic.messages.create({ model: "agent-model", max_tokens: 512, system: "You are a careful math assistant.", messages: [{ role: "user", content: "What is 8 + 5?" }], tools });
    expect(first).toMatchObject({ type: "message", role: "assistant", model: "agent-model", stop_sequence: null });
    const use = first.content.find((b) => b.type === "tool_use");
    expect(use).toMatchObject({ type: "tool_use", name: "calculator", input: { expression: "8 + 5" } });
    if (use?.type !== "tool_use") throw new Error("no tool_use");
    const second = await anthropic.messages.create({
      model: "agent-model",
      max_tokens: 512,
      messages: [
        { role: "user", content: "What is 8 + 5?" },
        { role: "assistant", content: [use] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "13" }] },
      ],
      tools,
    });
    expect(second.content[0]).toMatchObject({ type: "text", text: expect.stringMatching(/8 \+ 5/) });
    expect(second.stop_reason).toBe("end_turn");
    expect(second.usage.output_tokens).toBeGreaterThan(0);
  });

  it("messages.stream with a Bearer auth token: events parse, the tool_use input is assembled", async () => {
    const ep = await claimEpisode();
    const anthropic = new Anthropic({ baseURL: rootOf(ep.baseURL), authToken: ep.apiKey, apiKey: null, maxRetries: 0 });
    const events: string[] = [];
    const stream = anthropic.messages.stream({ model: "agent-model", max_tokens: 512, messages: [{ role: "user", content: "What is 6 + 7?" }], tools });
    stream.on("streamEvent", (e) => events.push(e.type));
    const final = await stream.finalMessage();
    expect(events.slice(0, 3)).toEqual(["message_start", "content_block_start", "content_block_delta"]);
    expect(events.at(-1)).toBe("message_stop");
    const use = final.content.find((b) => b.type === "tool_use");
    expect(use).toMatchObject({ name: "calculator", input: { expression: "6 + 7" } });

    const plain = await anthropic.messages.create({ model: "agent-model", max_tokens: 256, stream: true, messages: [{ role: "user", content: "Say hello." }] });
    const kinds: string[] = [];
    let text = "";
    for await (const event of plain) {
      kinds.push(event.type);
      if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text;
    }
    expect(kinds[0]).toBe("message_start");
    expect(kinds.at(-1)).toBe("message_stop");
    expect(text.length).toBeGreaterThan(0);
  });

  it("over a real socket the prologue is flushed while the engine still works (first bytes before the answer)", async () => {
    const ep = await claimEpisode();
    running.emulator.hooks.llmLatencyMs = 1_500;
    try {
      const res = await fetch(`${rootOf(ep.baseURL)}/v1/messages`, { method: "POST", headers: { "x-api-key": ep.apiKey, "content-type": "application/json" }, body: JSON.stringify({ max_tokens: 8, messages: [{ role: "user", content: "hi" }], stream: true }) });
      const reader = res.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(first).toMatch(/^event: message_start\n/);
      expect(first).not.toContain("message_stop");
      let rest = "";
      for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
      expect(rest).toContain("event: message_stop");
    } finally {
      running.emulator.hooks.llmLatencyMs = undefined;
    }
  });

  it("a base URL that keeps /v1 reaches /v1/v1/messages: FastAPI's 404, as upstream", async () => {
    const ep = await claimEpisode();
    const anthropic = new Anthropic({ baseURL: ep.baseURL, apiKey: ep.apiKey, maxRetries: 0 });
    await expect(anthropic.messages.create({ model: "m", max_tokens: 16, messages: [{ role: "user", content: "hi" }] })).rejects.toMatchObject({ status: 404 });
  });
});
