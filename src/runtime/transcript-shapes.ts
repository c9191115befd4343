/**
 * @module runtime/transcript-shapes — what a transcript keeps of one LLM call, per route (issue 20 §1): the
 * conversation sent (chat `messages`; the Responses API's `instructions` and `input` items; the Messages API's
 * `system` and `messages` with their content blocks), and the answer (the chat message; the Responses `output`
 * items; the Anthropic `content` blocks), from a JSON body or from an event stream, tool calls and tool use
 * included. Inline images are kept as stubs (sdk/llm-request-limits). Pure.
 */
import { stubImages } from "../sdk/llm-request-limits.ts";
import type { LlmRoute } from "../sdk/llm-routes.ts";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The request side of a call: the conversation in the route's own shape, and the tools offered. */
export function requestOf(route: LlmRoute, body: unknown): { messages: unknown[]; tools?: unknown[] } {
  if (!isObj(body)) return { messages: [] };
  const tools = Array.isArray(body["tools"]) ? { tools: body["tools"] as unknown[] } : {};
  let messages: unknown[] = [];
  if (route === "chat") messages = Array.isArray(body["messages"]) ? body["messages"] : [];
  else if (route === "responses") {
    const input = body["input"];
    const items = typeof input === "string" ? [{ role: "user", content: input }] : Array.isArray(input) ? input : [];
    messages = typeof body["instructions"] === "string" ? [{ role: "system", content: body["instructions"] }, ...items] : items;
  } else {
    const system = body["system"];
    const list = Array.isArray(body["messages"]) ? body["messages"] : [];
    messages = system !== undefined && system !== null && system !== "" ? [{ role: "system", content: system }, ...list] : list;
  }
  return { messages: stubImages(messages) as unknown[], ...tools };
}

/** The `data:` JSON objects of an event stream, in order (comments, `event:` lines and `[DONE]` skipped). */
function streamEvents(body: string): Obj[] {
  const events: Obj[] = [];
  for (const line of body.split(/\r?\n/)) {
    if (!line.startsWith("data:")) continue;
    const data = parseJson(line.slice(5).trim());
    if (isObj(data)) events.push(data);
  }
  return events;
}

/** A chat stream's joined deltas. */
function chatStreamReply(events: Obj[]): { reply: unknown } {
  let content = "";
  for (const e of events) {
    const choice = Array.isArray(e["choices"]) ? (e["choices"][0] as Obj | undefined) : undefined;
    const delta = isObj(choice?.["delta"]) ? choice["delta"] : undefined;
    if (typeof delta?.["content"] === "string") content += delta["content"];
  }
  return { reply: { role: "assistant", content } };
}

/** A Responses stream: the final `response` of its terminal event, else the text deltas seen. */
function responsesStreamReply(events: Obj[]): { reply: unknown; usage?: unknown } {
  const final = [...events].reverse().find((e) => (e["type"] === "response.completed" || e["type"] === "response.incomplete") && isObj(e["response"]));
  if (final) {
    const response = final["response"] as Obj;
    return { reply: response["output"] ?? [], usage: response["usage"] };
  }
  const text = events.filter((e) => e["type"] === "response.output_text.delta").map((e) => String(e["delta"] ?? "")).join("");
  return { reply: [{ type: "message", role: "assistant", content: [{ type: "output_text", text }] }] };
}

/** A Messages stream, put back together: content blocks by index (text deltas joined, tool input JSON parsed). */
function messagesStreamReply(events: Obj[]): { reply: unknown; usage?: unknown } {
  const blocks: Obj[] = [];
  const partialJson: string[] = [];
  let stopReason: unknown = null;
  let usage: unknown;
  for (const e of events) {
    const index = typeof e["index"] === "number" ? e["index"] : -1;
    if (e["type"] === "content_block_start" && isObj(e["content_block"]) && index >= 0) blocks[index] = { ...e["content_block"] };
    else if (e["type"] === "content_block_delta" && isObj(e["delta"]) && blocks[index]) {
      const delta = e["delta"];
      if (delta["type"] === "text_delta") blocks[index]["text"] = String(blocks[index]["text"] ?? "") + String(delta["text"] ?? "");
      else if (delta["type"] === "input_json_delta") partialJson[index] = (partialJson[index] ?? "") + String(delta["partial_json"] ?? "");
    } else if (e["type"] === "content_block_stop" && blocks[index] && partialJson[index] !== undefined) {
      blocks[index]["input"] = parseJson(partialJson[index]!) ?? partialJson[index];
    } else if (e["type"] === "message_delta") {
      if (isObj(e["delta"])) stopReason = e["delta"]["stop_reason"] ?? stopReason;
      usage = e["usage"] ?? usage;
    }
  }
  // the server opens an empty text block at once (llm-routes §4.4): an empty one carries nothing
  const content = blocks.filter((b) => b && !(b["type"] === "text" && b["text"] === ""));
  return { reply: { role: "assistant", content, stop_reason: stopReason }, ...(usage ? { usage } : {}) };
}

/** The answer side of a call (JSON body or event stream) in the route's shape, else the raw text. */
export function replyOf(route: LlmRoute, body: string): { reply: unknown; usage?: unknown } {
  const json = parseJson(body);
  if (isObj(json)) {
    if (route === "chat" && Array.isArray(json["choices"])) return { reply: (json["choices"][0] as Obj | undefined)?.["message"] ?? null, usage: json["usage"] };
    if (route === "responses" && Array.isArray(json["output"])) return { reply: json["output"], usage: json["usage"] };
    if (route === "messages" && Array.isArray(json["content"])) return { reply: { role: json["role"] ?? "assistant", content: json["content"], stop_reason: json["stop_reason"] ?? null }, usage: json["usage"] };
  }
  const events = /^(data:|event:|:)/m.test(body) ? streamEvents(body) : [];
  if (events.length > 0) {
    if (route === "responses") return responsesStreamReply(events);
    if (route === "messages") return messagesStreamReply(events);
    return chatStreamReply(events);
  }
  return { reply: body };
}
