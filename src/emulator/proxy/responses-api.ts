/**
 * @module emulator/proxy/responses-api — the newest proxy's OpenAI Responses adapter (llm-routes §3): a Responses
 * request → the chat request the engine sees (instructions, input items, function tools, tool_choice, sampling
 * fields), and the engine's completion → the `response` object and its synthetic SSE events
 * (`response.created` … `response.completed`, each `event:` + `data:` with `type` and `sequence_number`).
 */
import { ServerText } from "../../protocol/index.ts";
import type { ChatMessage, ToolCall } from "../policy/chat-shapes.ts";
import { pyJsonDumps } from "../python/json-dumps.ts";
import type { Rng } from "../rng.ts";
import type { EngineAnswer } from "./llm-call.ts";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** A chat function tool as the engine gets it. */
export interface ChatFunctionTool {
  type: "function";
  function: Record<string, unknown> & { name: unknown };
}

/** The chat request a Responses (or Messages) body becomes. */
export interface TranslatedRequest {
  messages: ChatMessage[];
  tools: ChatFunctionTool[];
  /** chat `tool_choice` (only set when tools survived) */
  toolChoice?: unknown;
  /** `model` as echoed back: the request's, else "unknown" */
  model: string;
  stream: boolean;
  /** forwarded sampling fields, chat names (`max_tokens`, `stop`, …) */
  sampling: Obj;
}

/** Python `str(x)` for the values a text field may carry. */
function pyStr(v: unknown): string {
  if (typeof v === "string") return v;
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  return typeof v === "object" ? pyJsonDumps(v) : String(v);
}

/** Text of a Responses content value: a string, or the `input_text` / `output_text` / `text` parts (images skipped). */
function contentText(content: unknown): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .filter((p): p is Obj => isObj(p) && (p["type"] === "input_text" || p["type"] === "output_text" || p["type"] === "text") && typeof p["text"] === "string")
      .map((p) => p["text"] as string)
      .join("");
  }
  if (isObj(content)) return contentText([content]);
  return pyStr(content);
}

function coerceRole(role: unknown): string {
  const r = (typeof role === "string" && role ? role : "user").toLowerCase();
  if (r === "user" || r === "assistant" || r === "system" || r === "tool") return r;
  return r === "developer" ? "system" : "user";
}

const newId = (ids: Rng, prefix: string) => `${prefix}_${ids.hex32().slice(0, 24)}`;

function inputItem(item: unknown, ids: Rng): ChatMessage[] {
  if (typeof item === "string") return [{ role: "user", content: item }];
  if (!isObj(item)) return [];
  const type = item["type"];
  if (type === "message" || (type === undefined && "role" in item && "content" in item)) {
    const text = contentText(item["content"]);
    return text ? [{ role: coerceRole(item["role"]), content: text }] : [];
  }
  if (type === "function_call") {
    const callId = (item["call_id"] || item["id"] || newId(ids, "call")) as string;
    const args = item["arguments"] ?? "";
    const argumentsText = Array.isArray(args) || isObj(args) ? pyJsonDumps(args, { ensureAscii: false }) : args;
    return [{ role: "assistant", content: null, tool_calls: [{ id: callId, type: "function", function: { name: item["name"] ?? "", arguments: argumentsText } }] }];
  }
  if (type === "function_call_output") {
    const out = item["output"] ?? "";
    const text = Array.isArray(out) || isObj(out) ? pyJsonDumps(out, { ensureAscii: false }) : pyStr(out);
    return [{ role: "tool", tool_call_id: (item["call_id"] || "") as string, content: text }];
  }
  return []; // reasoning items, item references, …: ignored
}

/** Responses `tools` → chat tools: only `type: "function"` survives. */
function functionTools(tools: unknown): ChatFunctionTool[] {
  if (!Array.isArray(tools)) return [];
  const out: ChatFunctionTool[] = [];
  for (const t of tools) {
    if (!isObj(t) || t["type"] !== "function") continue;
    const fn: ChatFunctionTool["function"] = { name: t["name"], parameters: t["parameters"] || { type: "object", properties: {} } };
    if ("description" in t) fn["description"] = t["description"];
    if ("strict" in t) fn["strict"] = t["strict"];
    out.push({ type: "function", function: fn });
  }
  return out;
}

function toolChoice(tc: unknown): unknown {
  if (tc === null || tc === undefined) return "auto";
  if (typeof tc === "string") return tc;
  if (isObj(tc)) {
    if (tc["type"] === "function" && "name" in tc) return { type: "function", function: { name: tc["name"] } };
    if (tc["type"] === "auto" || tc["type"] === "none" || tc["type"] === "required") return tc["type"];
  }
  return "auto";
}

const SAMPLING: Array<[string, string]> = [
  ["temperature", "temperature"],
  ["top_p", "top_p"],
  ["max_output_tokens", "max_tokens"],
  ["stop", "stop"],
  ["seed", "seed"],
  ["presence_penalty", "presence_penalty"],
  ["frequency_penalty", "frequency_penalty"],
];

/** True when `sampling` has a value vLLM's request model would reject (the proxy then answers 500). */
export function rejectsSampling(sampling: Obj): boolean {
  const num = (k: string) => k in sampling && (typeof sampling[k] !== "number" || !Number.isFinite(sampling[k] as number));
  if (["temperature", "top_p", "presence_penalty", "frequency_penalty"].some(num)) return true;
  const int = (k: string) => k in sampling && !Number.isInteger(sampling[k]);
  if (["max_tokens", "seed", "top_k"].some(int)) return true;
  const stop = sampling["stop"];
  return stop !== undefined && typeof stop !== "string" && !(Array.isArray(stop) && stop.every((s) => typeof s === "string"));
}

/**
 * Translates a Responses body (llm-routes §3.1).
 * @returns the chat request, or null when the real proxy answers 500 (not an object, a non-string `model`, sampling
 * fields of the wrong type)
 */
export function translateResponsesRequest(body: unknown, ids: Rng): TranslatedRequest | null {
  if (!isObj(body)) return null;
  if (body["model"] !== undefined && body["model"] !== null && typeof body["model"] !== "string") return null;
  const messages: ChatMessage[] = [];
  const instructions = body["instructions"];
  if (instructions) messages.push({ role: "system", content: typeof instructions === "string" ? instructions : pyStr(instructions) });
  const input = body["input"];
  if (typeof input === "string") {
    if (input) messages.push({ role: "user", content: input });
  } else if (Array.isArray(input)) {
    for (const item of input) messages.push(...inputItem(item, ids));
  } else if (input !== null && input !== undefined) {
    messages.push({ role: "user", content: pyStr(input) });
  }
  if (messages.length > 0 && messages[0]?.role !== "system") messages.unshift({ role: "system", content: ServerText.defaultSystemPrompt });
  const tools = functionTools(body["tools"]);
  const sampling: Obj = {};
  for (const [from, to] of SAMPLING) if (body[from] !== null && body[from] !== undefined) sampling[to] = body[from];
  if (rejectsSampling(sampling)) return null;
  return {
    messages,
    tools,
    ...(tools.length ? { toolChoice: toolChoice(body["tool_choice"]) } : {}),
    model: (body["model"] as string | undefined) || "unknown",
    stream: pyTruthyFlag(body["stream"]),
    sampling,
  };
}

/** Python `bool(x)` of a JSON value. */
export function pyTruthyFlag(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === "") return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isObj(v)) return Object.keys(v).length > 0;
  return true;
}

/** Float fields of the Response object (Python floats: `1795944934.0`). */
export const RESPONSES_FLOAT_KEYS: ReadonlySet<string> = new Set(["created_at", "completed_at"]);

function functionCallItem(c: ToolCall, ids: Rng): Obj {
  return { id: c.id || newId(ids, "fc"), type: "function_call", call_id: c.id || newId(ids, "call"), name: c.function.name, arguments: c.function.arguments, status: "completed" };
}

/**
 * The `response` object (llm-routes §3.2) for the engine's answer. `status` is `incomplete` (with
 * `incomplete_details.reason: "max_output_tokens"`) only for finish reason `length`; the text message item exists
 * only for non-empty text; each tool call is a `function_call` item.
 * @param nowSeconds `completed_at`, unix seconds
 */
export function responseObject(answer: EngineAnswer, request: { model: string; instructions: unknown }, ids: Rng, nowSeconds: number): Obj {
  const output: Obj[] = [];
  if (answer.content) {
    output.push({ id: newId(ids, "msg"), type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: answer.content, annotations: [] }] });
  }
  for (const c of answer.toolCalls ?? []) output.push(functionCallItem(c, ids));
  const input = answer.usage?.prompt_tokens ?? 0;
  const outputTokens = answer.usage?.completion_tokens ?? 0;
  const incomplete = answer.finishReason === "length";
  const response: Obj = {
    id: newId(ids, "resp"),
    object: "response",
    created_at: answer.created,
    completed_at: nowSeconds,
    model: request.model,
    status: incomplete ? "incomplete" : "completed",
    output,
    parallel_tool_calls: true,
    tool_choice: "auto",
    tools: [],
    usage: {
      input_tokens: input,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: answer.usage?.total_tokens ?? input + outputTokens,
    },
  };
  if (typeof request.instructions === "string") response["instructions"] = request.instructions;
  if (incomplete) response["incomplete_details"] = { reason: "max_output_tokens" };
  return response;
}

/** One SSE event: `event: <type>` and `data:` = payload + `type` + `sequence_number` (Python `json.dumps`, UTF-8 kept). */
function sse(type: string, payload: Obj, sequence: number): string {
  const data = pyJsonDumps({ ...payload, type, sequence_number: sequence }, { ensureAscii: false, floatKeys: RESPONSES_FLOAT_KEYS });
  return `event: ${type}\ndata: ${data}\n\n`;
}

/**
 * The events after the keepalives (llm-routes §3.3): `response.created` and `response.in_progress` (the final object
 * with `output: []`, moved last as upstream's dict copy does), the text message's item / part / one delta / done
 * events, then `response.completed`. Function calls appear only in `response.completed`, unless `toolCallEvents`
 * (OpenAI's own shape: `output_item.added`, `function_call_arguments.delta` / `.done`, `output_item.done` per call).
 */
export function responsesSseEvents(response: Obj, toolCallEvents = false): string {
  let seq = 0;
  const events: string[] = [];
  const emit = (type: string, payload: Obj) => events.push(sse(type, payload, ++seq));
  const { output, ...rest } = response as Obj & { output: Obj[] };
  const snapshot = { ...rest, output: [] };
  emit("response.created", { response: snapshot });
  emit("response.in_progress", { response: snapshot });
  const message = output.find((i) => i["type"] === "message" && Array.isArray(i["content"]) && (i["content"] as unknown[]).length > 0);
  if (message) {
    const part = (message["content"] as Obj[])[0] as Obj;
    const text = typeof part["text"] === "string" ? part["text"] : "";
    emit("response.output_item.added", { output_index: 0, item: { ...message, content: [] } });
    emit("response.content_part.added", { output_index: 0, content_index: 0, part: { ...part, text: "" } });
    emit("response.output_text.delta", { output_index: 0, content_index: 0, delta: text });
    emit("response.output_text.done", { output_index: 0, content_index: 0, text });
    emit("response.content_part.done", { output_index: 0, content_index: 0, part });
    emit("response.output_item.done", { output_index: 0, item: message });
  }
  if (toolCallEvents) {
    output.forEach((item, index) => {
      if (item["type"] !== "function_call") return;
      emit("response.output_item.added", { output_index: index, item: { ...item, arguments: "", status: "in_progress" } });
      emit("response.function_call_arguments.delta", { item_id: item["id"], output_index: index, delta: item["arguments"] });
      emit("response.function_call_arguments.done", { item_id: item["id"], output_index: index, arguments: item["arguments"] });
      emit("response.output_item.done", { output_index: index, item });
    });
  }
  emit("response.completed", { response });
  return events.join("");
}
