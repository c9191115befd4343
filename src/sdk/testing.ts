/**
 * @module sdk/testing — runs a rollout function without a server: real `openai` clients (`maxRetries: 0`)
 * whose `fetch` answers locally from a script, with every request recorded. Used by our unit tests and by the
 * scaffolds `ajet-edge new` writes. Platform-free (no `node:*`), so it also runs inside workerd.
 */
import OpenAI from "openai";
import type { ChatCompletionCreateParams } from "openai/resources/chat/completions";
import { DEFAULT_SWARM, type EpisodeEndpoint, type RolloutContext, type RolloutLogger } from "./contract.ts";
import { type ChatFetch, withChatCompletionGuards } from "./llm-guards.ts";
import { SandboxError } from "../sandbox/types.ts";

/**
 * One tool call of a scripted assistant message, flat: `{ name: "calculator", arguments: { expression: "1+1" } }`
 * (rendered as the wire's `{id, type: "function", function: {name, arguments}}`). `name` is required (`""` scripts
 * a malformed call on purpose), so the wire shape itself — `{ type: "function", function: {…} }` — does not compile.
 * `id: null` omits the id (a malformed call); default `call_N_i`.
 */
export interface ScriptedToolCall {
  id?: string | null;
  /** the tool's name (`""`: a malformed call on purpose) */
  name: string;
  /** a JSON string as the wire carries it (may be invalid on purpose), or an object to stringify; default `{}` */
  arguments?: string | Record<string, unknown>;
  /** not the wire shape: give `name` and `arguments` at the top level */
  type?: never;
  /** not the wire shape: give `name` and `arguments` at the top level */
  function?: never;
}

/** A scripted assistant message; `finishReason` defaults to `tool_calls` with tool calls, else `stop`. */
export interface ScriptedMessage {
  content?: string | null;
  toolCalls?: readonly ScriptedToolCall[];
  finishReason?: string;
}

/** A raw HTTP answer: any status and JSON body (e.g. BC-38's 200 `{status_code, detail}`, or a 500). */
export interface ScriptedHttp {
  status: number;
  body?: unknown;
}

/** A raw event stream: each entry becomes one `data: <entry>` event (include `"[DONE]"` yourself). */
export interface ScriptedStream {
  sse: readonly string[];
}

/** What a script answers to one request: a string is the assistant's content with `finish_reason: "stop"`. */
export type ScriptedReply = string | ScriptedMessage | ScriptedHttp | ScriptedStream;

/** A request the fake endpoint received. `body` is the parsed JSON the SDK sent. */
export interface RecordedRequest {
  swarm: string;
  url: string;
  method: string;
  headers: Record<string, string>;
  body: ChatCompletionCreateParams;
}

/** A line the context's logger received. */
export interface LoggedLine {
  level: "debug" | "info" | "warn" | "error";
  msg: string;
  fields?: Record<string, unknown>;
}

/** Options of {@link createTestContext}. */
export interface TestContextOptions {
  /** answers each `/chat/completions` request; `index` counts requests across all swarms from 0 */
  reply: (
    request: ChatCompletionCreateParams,
    info: { swarm: string; index: number },
  ) => ScriptedReply | Promise<ScriptedReply>;
  /** swarm names; default `["default"]` */
  swarms?: readonly string[];
  secrets?: Record<string, string>;
  /** default `"test-model"` */
  model?: string;
  /** default `"train"` */
  episodeType?: "train" | "eval";
  /** what `ctx.canContinue()` answers; default true */
  canContinue?: () => boolean | Promise<boolean>;
  /** apply {@link withChatCompletionGuards} like the production runtime; default true */
  guards?: boolean;
  /** what `ctx.fetch` calls (a judge's or tool's endpoint); default the global fetch */
  fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** what `ctx.sandbox()` gives; default: it refuses (no sandbox) */
  sandbox?: RolloutContext["sandbox"];
}

/** What {@link createTestContext} returns. */
export interface TestContext {
  ctx: RolloutContext;
  /** every request in arrival order (all swarms) */
  requests: RecordedRequest[];
  logs: LoggedLine[];
  /** the local fetch behind the clients; stub the global fetch with it to test seed-style functions */
  fetch: ChatFetch;
  /** fires `ctx.signal` */
  abort(reason?: unknown): void;
  /** requests received, for one swarm or all */
  callCount(swarm?: string): number;
}

/** A `reply` that answers requests in order and fails loudly (HTTP 500) when the script runs out. */
export function scriptedReplies(...replies: ScriptedReply[]): TestContextOptions["reply"] {
  return (_request, { index }) =>
    replies[index] ?? { status: 500, body: { detail: `createTestContext: no scripted reply for request #${index}` } };
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

function sse(events: readonly string[]): Response {
  const text = events.map((e) => `data: ${e}\n\n`).join("");
  return new Response(text, { status: 200, headers: { "content-type": "text/event-stream" } });
}

function toolCallsOf(message: ScriptedMessage, index: number): Record<string, unknown>[] | undefined {
  return message.toolCalls?.map((call, i) => ({
    ...(call.id === null ? {} : { id: call.id ?? `call_${index}_${i}` }),
    type: "function",
    function: {
      name: call.name,
      arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {}),
    },
  }));
}

/** Renders a scripted reply as the swarm proxy would (spec §9.4 non-stream, §9.5 stream). */
function render(reply: ScriptedReply, stream: boolean, index: number, model: string): Response {
  if (typeof reply !== "string" && "sse" in reply) return sse(reply.sse);
  if (typeof reply !== "string" && "status" in reply) return json(reply.status, reply.body ?? {});
  const message: ScriptedMessage = typeof reply === "string" ? { content: reply } : reply;
  const toolCalls = toolCallsOf(message, index);
  const finishReason = message.finishReason ?? (toolCalls?.length ? "tool_calls" : "stop");
  const id = `chatcmpl-test-${index}`;
  const head = { id, created: 0, model };
  if (!stream) {
    const toolField = toolCalls ? { tool_calls: toolCalls } : {};
    const msg = { role: "assistant", content: message.content ?? null, ...toolField };
    return json(200, {
      ...head,
      object: "chat.completion",
      choices: [{ index: 0, message: msg, finish_reason: finishReason, logprobs: null }],
      usage: { prompt_tokens: 0, completion_tokens: 1, total_tokens: 1 },
    });
  }
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    JSON.stringify({ ...head, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] });
  const tools = toolCalls?.map((call, i) => ({ index: i, ...call }));
  return sse([
    chunk({ role: "assistant", content: "" }, null),
    chunk({ content: message.content ?? "", ...(tools ? { tool_calls: tools } : {}) }, null),
    chunk({ content: "" }, finishReason),
    "[DONE]",
  ]);
}

/**
 * Builds a {@link RolloutContext} whose OpenAI clients talk to a local script instead of a swarm server.
 * Each swarm gets a fake claimed episode (`http://<swarm>.swarm.test/v1`, key `sk-ajet-test-<swarm>`); requests to
 * other URLs, or to paths other than `/chat/completions`, get a 404 like the swarm proxy's.
 * @example
 * const { ctx, requests } = createTestContext({ reply: () => "The answer is \\boxed{4}." });
 * const out = await mathAgent.run(task, ctx);
 */
export function createTestContext(options: TestContextOptions): TestContext {
  const swarms = options.swarms?.length ? options.swarms : [DEFAULT_SWARM];
  const model = options.model ?? "test-model";
  const episodes: Record<string, EpisodeEndpoint> = {};
  swarms.forEach((swarm, i) => {
    const episodeUuid = (i + 1).toString(16).padStart(32, "0");
    episodes[swarm] = { swarm, episodeUuid, baseUrl: `http://${swarm}.swarm.test/v1`, apiKey: `sk-ajet-test-${swarm}` };
  });
  const requests: RecordedRequest[] = [];
  const logs: LoggedLine[] = [];
  const controller = new AbortController();

  const local: ChatFetch = async (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const swarm = swarms.find((s) => url.startsWith(episodes[s]!.baseUrl + "/"));
    if (!swarm || !url.endsWith("/chat/completions")) return json(404, { detail: "Not Found" });
    const text = typeof init?.body === "string" ? init.body : input instanceof Request ? await input.text() : "";
    const body = JSON.parse(text || "{}") as ChatCompletionCreateParams;
    const headers = Object.fromEntries(new Headers(init?.headers ?? (input instanceof Request ? input.headers : {})));
    const index = requests.length;
    requests.push({ swarm, url, method: (init?.method ?? "POST").toUpperCase(), headers, body });
    const reply = await options.reply(body, { swarm, index });
    return render(reply, body.stream === true, index, model);
  };
  const fetch = options.guards === false ? local : withChatCompletionGuards(local);

  const openai: Record<string, OpenAI> = {};
  for (const swarm of swarms) {
    const ep = episodes[swarm]!;
    openai[swarm] = new OpenAI({ apiKey: ep.apiKey, baseURL: ep.baseUrl, maxRetries: 0, fetch });
  }
  const logAt =
    (level: LoggedLine["level"]) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      logs.push(fields ? { level, msg, fields } : { level, msg });
    };
  const log: RolloutLogger = { debug: logAt("debug"), info: logAt("info"), warn: logAt("warn"), error: logAt("error") };
  const ctx: RolloutContext = {
    openai,
    llm: openai[swarms[0]!]!,
    episodes,
    episodeType: options.episodeType ?? "train",
    signal: controller.signal,
    canContinue: async () => (options.canContinue ? options.canContinue() : true),
    fetch: (input, init) => (options.fetch ?? globalThis.fetch)(input, init),
    log,
    secrets: options.secrets ?? {},
    model,
    sandbox: options.sandbox ?? (() => Promise.reject(new SandboxError("disabled", "ctx.sandbox(): this test context has no sandbox; pass createTestContext({ sandbox }) (e.g. a local sandbox server's attempt scope)"))),
  };
  return {
    ctx,
    requests,
    logs,
    fetch,
    abort: (reason) => controller.abort(reason),
    callCount: (swarm) => requests.filter((r) => swarm === undefined || r.swarm === swarm).length,
  };
}
