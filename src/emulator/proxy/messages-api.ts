/**
 * @module emulator/proxy/messages-api — the newest proxy's Anthropic Messages adapter (llm-routes §4): a Messages
 * request → the chat request the engine sees (system, text / tool_use / tool_result blocks, tools, tool_choice,
 * sampling fields), and the engine's completion → the `message` object and its SSE stream: the prologue sent at
 * once (`message_start`, text `content_block_start` 0), the `ping` + empty `content_block_delta` heartbeat, and the
 * remainder (text delta, `content_block_stop`, one `tool_use` block per call, `message_delta`, `message_stop`).
 */
import { ServerText } from "../../protocol/index.ts";
import type { ChatMessage } from "../policy/chat-shapes.ts";
import { pyJsonDumps } from "../python/json-dumps.ts";
import { pyJsonLoads } from "../python/json-parse.ts";
import type { Rng } from "../rng.ts";
import type { EngineAnswer } from "./llm-call.ts";
import { pyTruthyFlag, rejectsSampling, type ChatFunctionTool, type TranslatedRequest } from "./responses-api.ts";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const newId = (ids: Rng, prefix: string) => `${prefix}_${ids.hex32().slice(0, 24)}`;
const dumps = (v: unknown) => pyJsonDumps(v, { ensureAscii: false });

function pyStr(v: unknown): string {
  if (typeof v === "string") return v;
  if (v === null || v === undefined) return "None";
  if (typeof v === "boolean") return v ? "True" : "False";
  return typeof v === "object" ? pyJsonDumps(v) : String(v);
}

/** Text of a content value: a string, or its `text` blocks concatenated (no separator). */
function blocksText(content: unknown): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.filter((b): b is Obj => isObj(b) && b["type"] === "text" && typeof b["text"] === "string").map((b) => b["text"] as string).join("");
  if (isObj(content)) return blocksText([content]);
  return pyStr(content);
}

/** `system`: a string, or its `text` blocks joined with one space. */
function systemText(system: unknown): string {
  if (system === null || system === undefined) return "";
  if (typeof system === "string") return system;
  if (Array.isArray(system)) return system.filter((b): b is Obj => isObj(b) && b["type"] === "text").map((b) => (typeof b["text"] === "string" ? b["text"] : "")).join(" ");
  return pyStr(system);
}

function translateMessages(messages: unknown, system: unknown, ids: Rng): ChatMessage[] {
  const out: ChatMessage[] = [];
  const sys = systemText(system);
  if (sys) out.push({ role: "system", content: sys });
  if (!Array.isArray(messages)) return out;
  for (const msg of messages) {
    if (!isObj(msg)) continue;
    const role = (typeof msg["role"] === "string" && msg["role"] ? msg["role"] : "user").toLowerCase();
    if (role === "system") continue; // one leading system only (Qwen/verl template)
    const content = msg["content"];
    if (typeof content === "string") {
      out.push({ role, content });
      continue;
    }
    if (!Array.isArray(content)) {
      out.push({ role, content: blocksText(content) });
      continue;
    }
    let text: string[] = [];
    const toolCalls: Obj[] = [];
    for (const block of content) {
      if (!isObj(block)) continue;
      const type = block["type"];
      if (type === "text" && typeof block["text"] === "string") text.push(block["text"]);
      else if (type === "tool_use" && role === "assistant") {
        const input = block["input"] ?? "";
        const args = Array.isArray(input) || isObj(input) ? dumps(input) : pyStr(input);
        toolCalls.push({ id: block["id"] || newId(ids, "call"), type: "custom", function: { name: block["name"] ?? "", arguments: args } });
      } else if (type === "tool_result" && role === "user") {
        if (text.length) out.push({ role: "user", content: text.join("") });
        text = [];
        const result = block["content"] ?? "";
        const resultText = Array.isArray(result) ? blocksText(result) : typeof result === "string" ? result : dumps(result);
        out.push({ role: "tool", tool_call_id: (block["tool_use_id"] ?? "") as string, content: resultText });
      }
      // image / document blocks are dropped; thinking and misplaced tool blocks ignored
    }
    if (role === "assistant") {
      const joined = text.length ? text.join("") : null;
      if (joined || toolCalls.length) out.push({ role: "assistant", content: joined, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) });
    } else if (text.length) {
      out.push({ role: "user", content: text.join("") });
    }
  }
  return out;
}

function messagesTools(tools: unknown): ChatFunctionTool[] {
  if (!Array.isArray(tools)) return [];
  const out: ChatFunctionTool[] = [];
  for (const t of tools) {
    if (!isObj(t) || !t["name"]) continue;
    const fn: ChatFunctionTool["function"] = { name: t["name"], parameters: t["input_schema"] || { type: "object", properties: {} } };
    if ("description" in t) fn["description"] = t["description"];
    out.push({ type: "function", function: fn });
  }
  return out;
}

function toolChoice(tc: unknown, names: readonly unknown[]): unknown {
  const kind = typeof tc === "string" ? tc.toLowerCase() : isObj(tc) ? tc["type"] : undefined;
  if (tc === null || tc === undefined || kind === undefined) return "auto";
  if (kind === "auto") return "auto";
  if (kind === "none") return "none";
  if (kind === "any") return names.length ? { type: "function", function: { name: names[0] } } : "auto";
  if (kind === "tool" && isObj(tc) && tc["name"]) return { type: "function", function: { name: tc["name"] } };
  return "auto";
}

/**
 * Translates a Messages body (llm-routes §4.2).
 * @returns the chat request, or null when the real proxy answers 500 (not an object, a non-string `model`, sampling
 * fields of the wrong type)
 */
export function translateMessagesRequest(body: unknown, ids: Rng): TranslatedRequest | null {
  if (!isObj(body)) return null;
  if (body["model"] !== undefined && body["model"] !== null && typeof body["model"] !== "string") return null;
  const messages = translateMessages(body["messages"], body["system"], ids);
  if (messages[0]?.role !== "system") messages.unshift({ role: "system", content: ServerText.defaultSystemPrompt });
  const sampling: Obj = {};
  for (const key of ["max_tokens", "temperature", "top_p", "top_k"]) if (body[key] !== null && body[key] !== undefined) sampling[key] = body[key];
  if (pyTruthyFlag(body["stop_sequences"])) sampling["stop"] = body["stop_sequences"];
  if (rejectsSampling(sampling)) return null;
  const tools = messagesTools(body["tools"]);
  return {
    messages,
    tools,
    ...(tools.length ? { toolChoice: toolChoice(body["tool_choice"], tools.map((t) => t.function.name)) } : {}),
    model: (body["model"] as string | undefined) || "unknown",
    stream: pyTruthyFlag(body["stream"]),
    sampling,
  };
}

/** Messages `stop_reason` of a chat finish reason: `length` → `max_tokens`, `tool_calls` → `tool_use`, else `end_turn`. */
export function stopReasonOf(finishReason: string): "max_tokens" | "tool_use" | "end_turn" {
  if (finishReason === "length") return "max_tokens";
  return finishReason === "tool_calls" ? "tool_use" : "end_turn";
}

/** Tool-call arguments as an object: the parsed JSON when it is an object or a list, else `{}`. */
function parseArguments(args: string): unknown {
  try {
    const parsed = pyJsonLoads(args);
    return typeof parsed === "object" && parsed !== null ? parsed : {};
  } catch {
    return {};
  }
}

/**
 * The `message` object (llm-routes §4.3): a `text` block for non-empty text, then one `tool_use` block per call;
 * `stop_reason` from the engine's finish reason (the stored converter always says `stop`, so `end_turn` even with
 * tool_use blocks); `usage` input and output tokens from the engine's usage.
 */
export function messageObject(answer: EngineAnswer, model: string, ids: Rng): Obj {
  const content: Obj[] = [];
  if (answer.content) content.push({ type: "text", text: answer.content });
  for (const c of answer.toolCalls ?? []) content.push({ type: "tool_use", id: c.id || newId(ids, "toolu"), name: c.function.name, input: parseArguments(c.function.arguments) });
  return {
    id: newId(ids, "msg"),
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: stopReasonOf(answer.finishReason),
    stop_sequence: null,
    usage: { input_tokens: answer.usage?.prompt_tokens ?? 0, output_tokens: answer.usage?.completion_tokens ?? 0 },
  };
}

/** One event: `event: <type>` and `data:` = payload with `type` appended (the adapter's `_sse`). */
function sse(type: string, payload: Obj): string {
  return `event: ${type}\ndata: ${dumps({ ...payload, type })}\n\n`;
}

/**
 * The frames sent at once, before the engine answers (llm-routes §4.4): `message_start` (id = the timeline uuid,
 * 32 hex without `msg_`, empty content, zero usage) and `content_block_start` index 0 (empty text).
 */
export function messagesPrologue(timelineUuid: string, model: string): string {
  const message = { id: timelineUuid, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } };
  return sse("message_start", { message }) + sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
}

/** The heartbeat (at once, then every 5 s): `ping`, then an EMPTY text delta on block 0 (what resets Claude Code's watchdog). */
export const MESSAGES_HEARTBEAT =
  'event: ping\ndata: {"type": "ping"}\n\n' + 'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ""}}\n\n';

/**
 * The rest of the stream for the final message (llm-routes §4.4, inferred there): the whole text as one delta on
 * block 0, its stop, then per tool_use block (index 1, 2, …) start with `input: {}`, one `input_json_delta` with the
 * whole input, stop; `message_delta` (stop_reason, stop_sequence, output_tokens) and `message_stop`.
 */
export function messagesRemainder(message: Obj): string {
  const blocks = (message["content"] as Obj[]) ?? [];
  const text = blocks.filter((b) => b["type"] === "text").map((b) => b["text"] as string).join("");
  let out = sse("content_block_delta", { index: 0, delta: { type: "text_delta", text } }) + sse("content_block_stop", { index: 0 });
  let index = 1;
  for (const b of blocks) {
    if (b["type"] !== "tool_use") continue;
    out += sse("content_block_start", { index, content_block: { type: "tool_use", id: b["id"], name: b["name"], input: {} } });
    out += sse("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: dumps(b["input"] ?? {}) } });
    out += sse("content_block_stop", { index });
    index++;
  }
  const usage = message["usage"] as { output_tokens: number };
  out += sse("message_delta", { delta: { stop_reason: message["stop_reason"], stop_sequence: message["stop_sequence"] }, usage: { output_tokens: usage.output_tokens } });
  return out + sse("message_stop", {});
}
