/**
 * @module runtime/llm-answer — reads one LLM answer body of any route a swarm endpoint serves (spec llm-routes.md):
 * a chat completion (`/chat/completions`, JSON or SSE), a Responses object (`/responses`, JSON or SSE events) or an
 * Anthropic message (`/messages`, JSON or SSE events). What the transcript shows (the reply as a chat message) and
 * what the run's learning signals count (answer characters, tool calls, tokens where the server reports `usage`,
 * and whether the length limit cut it) come from this one reader. Pure.
 */

/** What one answer body says. */
export interface LlmAnswer {
  /** the reply as a chat message `{role, content, tool_calls?}`, or the raw body when no route's shape matched */
  reply: unknown;
  /** the body's `usage` object as sent, when there was one */
  usage?: unknown;
  /** characters of the model's output: its text plus every tool call's arguments */
  chars: number;
  /** tool calls the model asked for */
  toolCalls: number;
  /** prompt (input) tokens, null when the server did not report them (a 0 next to output tokens counts as not reported) */
  promptTokens: number | null;
  /** completion (output) tokens, null when the server did not report them */
  completionTokens: number | null;
  /** the length limit cut the answer: `finish_reason: "length"`, `stop_reason: "max_tokens"`, or an `incomplete` response */
  cut: boolean;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : null);
const str = (v: unknown): string => (typeof v === "string" ? v : "");

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Tokens of a usage object in any route's names; a prompt count of 0 beside output tokens is "not reported" (the converters send 0). */
function tokensOf(usage: unknown): Pick<LlmAnswer, "promptTokens" | "completionTokens"> {
  if (!isObj(usage)) return { promptTokens: null, completionTokens: null };
  const completion = num(usage["completion_tokens"]) ?? num(usage["output_tokens"]);
  const prompt = num(usage["prompt_tokens"]) ?? num(usage["input_tokens"]);
  return { promptTokens: prompt === 0 && (completion ?? 0) > 0 ? null : prompt, completionTokens: completion };
}

/** The text of a chat message's content (a string, or a list of parts with `text`). */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (isObj(p) ? str(p["text"]) : "")).join("");
  return "";
}

interface ToolCallShape {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

function answer(text: string, calls: ToolCallShape[], usage: unknown, cut: boolean): LlmAnswer {
  const reply = { role: "assistant", content: text, ...(calls.length ? { tool_calls: calls } : {}) };
  const chars = text.length + calls.reduce((n, c) => n + c.function.arguments.length, 0);
  return { reply, ...(usage !== undefined ? { usage } : {}), chars, toolCalls: calls.length, ...tokensOf(usage), cut };
}

function chatCompletion(body: Obj): LlmAnswer {
  const choice = Array.isArray(body["choices"]) && isObj(body["choices"][0]) ? body["choices"][0] : {};
  const message = isObj(choice["message"]) ? choice["message"] : {};
  const calls = Array.isArray(message["tool_calls"]) ? message["tool_calls"].filter(isObj) : [];
  const args = calls.reduce((n, c) => n + (isObj(c["function"]) ? str(c["function"]["arguments"]).length : 0), 0);
  const text = contentText(message["content"]);
  return {
    reply: body["choices"] && isObj(choice["message"]) ? choice["message"] : null,
    ...(body["usage"] !== undefined ? { usage: body["usage"] } : {}),
    chars: text.length + args,
    toolCalls: calls.length,
    ...tokensOf(body["usage"]),
    cut: choice["finish_reason"] === "length",
  };
}

function responsesObject(body: Obj): LlmAnswer {
  let text = "";
  const calls: ToolCallShape[] = [];
  for (const item of Array.isArray(body["output"]) ? body["output"].filter(isObj) : []) {
    if (item["type"] === "message") text += contentText(item["content"]);
    else if (item["type"] === "function_call") calls.push({ id: str(item["call_id"]) || str(item["id"]), type: "function", function: { name: str(item["name"]), arguments: str(item["arguments"]) } });
  }
  const details = isObj(body["incomplete_details"]) ? body["incomplete_details"] : {};
  return answer(text, calls, body["usage"], body["status"] === "incomplete" && details["reason"] === "max_output_tokens");
}

function anthropicMessage(body: Obj): LlmAnswer {
  let text = "";
  const calls: ToolCallShape[] = [];
  for (const block of Array.isArray(body["content"]) ? body["content"].filter(isObj) : []) {
    if (block["type"] === "text") text += str(block["text"]);
    else if (block["type"] === "tool_use") calls.push({ id: str(block["id"]), type: "function", function: { name: str(block["name"]), arguments: JSON.stringify(block["input"] ?? {}) } });
  }
  return answer(text, calls, body["usage"], body["stop_reason"] === "max_tokens");
}

/** The data lines of an event stream, parsed (comments, `event:` lines and `[DONE]` skipped). */
function events(body: string): Obj[] {
  const out: Obj[] = [];
  for (const line of body.split(/\r?\n/)) {
    if (!line.startsWith("data:")) continue;
    const data = line.slice(5).trim();
    if (data === "" || data === "[DONE]") continue;
    const json = parseJson(data);
    if (isObj(json)) out.push(json);
  }
  return out;
}

/** A chat completion stream: deltas joined, tool calls by index, the last finish reason and usage chunk. */
function chatStream(chunks: readonly Obj[]): LlmAnswer {
  let text = "";
  let usage: unknown;
  let cut = false;
  const calls = new Map<number, ToolCallShape>();
  for (const c of chunks) {
    if (c["usage"] != null) usage = c["usage"];
    const choice = Array.isArray(c["choices"]) && isObj(c["choices"][0]) ? c["choices"][0] : null;
    if (!choice) continue;
    if (choice["finish_reason"] === "length") cut = true;
    const delta = isObj(choice["delta"]) ? choice["delta"] : {};
    text += contentText(delta["content"]);
    for (const tc of Array.isArray(delta["tool_calls"]) ? delta["tool_calls"].filter(isObj) : []) {
      const index = num(tc["index"]) ?? calls.size;
      const call = calls.get(index) ?? { id: "", type: "function" as const, function: { name: "", arguments: "" } };
      const fn = isObj(tc["function"]) ? tc["function"] : {};
      call.id ||= str(tc["id"]);
      call.function.name ||= str(fn["name"]);
      call.function.arguments += str(fn["arguments"]);
      calls.set(index, call);
    }
  }
  return answer(text, [...calls.values()], usage, cut);
}

/** An Anthropic Messages stream: text and input-JSON deltas per block, the stop reason and the usage of start and delta. */
function anthropicStream(chunks: readonly Obj[]): LlmAnswer {
  let text = "";
  let cut = false;
  const usage: Obj = {};
  const calls = new Map<number, ToolCallShape>();
  for (const c of chunks) {
    const index = num(c["index"]) ?? 0;
    if (c["type"] === "message_start" && isObj(c["message"]) && isObj(c["message"]["usage"])) Object.assign(usage, c["message"]["usage"]);
    else if (c["type"] === "content_block_start" && isObj(c["content_block"]) && c["content_block"]["type"] === "tool_use") {
      calls.set(index, { id: str(c["content_block"]["id"]), type: "function", function: { name: str(c["content_block"]["name"]), arguments: "" } });
    } else if (c["type"] === "content_block_delta" && isObj(c["delta"])) {
      if (c["delta"]["type"] === "input_json_delta" && calls.has(index)) calls.get(index)!.function.arguments += str(c["delta"]["partial_json"]);
      else text += str(c["delta"]["text"]);
    } else if (c["type"] === "message_delta") {
      if (isObj(c["delta"]) && c["delta"]["stop_reason"] === "max_tokens") cut = true;
      if (isObj(c["usage"])) Object.assign(usage, c["usage"]);
    }
  }
  return answer(text, [...calls.values()], Object.keys(usage).length ? usage : undefined, cut);
}

/** A Responses stream: the final object of `response.completed` / `response.incomplete` when sent, else the text deltas. */
function responsesStream(chunks: readonly Obj[]): LlmAnswer {
  const done = [...chunks].reverse().find((c) => (c["type"] === "response.completed" || c["type"] === "response.incomplete") && isObj(c["response"]));
  if (done) return responsesObject(done["response"] as Obj);
  const text = chunks.filter((c) => c["type"] === "response.output_text.delta").map((c) => str(c["delta"])).join("");
  return answer(text, [], undefined, false);
}

/** Reads an answer body of any route (JSON or event stream). Never throws: an unknown body is the reply as text. */
export function parseLlmAnswer(body: string): LlmAnswer {
  const raw: LlmAnswer = { reply: body, chars: 0, toolCalls: 0, promptTokens: null, completionTokens: null, cut: false };
  const trimmed = body.trimStart();
  if (trimmed.startsWith("{")) {
    const json = parseJson(body);
    if (!isObj(json)) return raw;
    if (Array.isArray(json["choices"])) return chatCompletion(json);
    if (json["object"] === "response" || Array.isArray(json["output"])) return responsesObject(json);
    if (json["type"] === "message" && Array.isArray(json["content"])) return anthropicMessage(json);
    return raw;
  }
  const chunks = events(body);
  if (chunks.length === 0) return raw;
  if (chunks.some((c) => typeof c["type"] === "string" && (c["type"] as string).startsWith("response."))) return responsesStream(chunks);
  if (chunks.some((c) => c["type"] === "message_start" || c["type"] === "content_block_delta")) return anthropicStream(chunks);
  return chatStream(chunks);
}
