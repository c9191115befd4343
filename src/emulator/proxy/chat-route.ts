/**
 * @module emulator/proxy/chat-route — `POST /v1/chat/completions` as the real proxy serves it (spec §9, BC-38,
 * BC-44, transcript): key errors answered as HTTP 200 `{"status_code": 401, "detail", "headers": null}`; an
 * unparseable body → 500; default system prompt injected; swarm checks with the exact 404 texts; the call is
 * counted and refreshes activity; the simulated policy (or the upstream) generates; non-streaming JSON or the
 * 3-chunk SSE stream. With `chatStreamKeepalive` (the newest server) a `stream: true` call opens its SSE at once
 * with `: keepalive` frames every 5 s, and an error after that ends the stream with the stray `content_block_stop`
 * frame and no `[DONE]` (llm-routes §1, §2). Every counted call is journaled when it ends.
 */
import { LLM_CALL_BUDGET_SECONDS, ServerText, isRollingState } from "../../protocol/index.ts";
import { applyFault, type ChatCallInfo } from "../hooks.ts";
import { httpException, internalServerError, jsonResponse } from "../http/fastapi.ts";
import type { ChatMessage } from "../policy/chat-shapes.ts";
import { pyJsonLoads } from "../python/json-parse.ts";
import { refreshClientActivity } from "../server/pool.ts";
import type { ServerState } from "../server/state.ts";
import { decodeEpisodeKey } from "./auth.ts";
import { chatCompletionBody, chatCompletionSse, SSE_HEADERS, type EngineCompletion } from "./completion.ts";
import { generate, journalLlmCall, preflight, streamCall, type LlmCallDeps } from "./llm-call.ts";

/** What the proxy needs from the emulator (the LLM routes' deps; the budget only matters for the keepalive stream). */
export interface ProxyDeps extends Omit<LlmCallDeps, "llmCallBudgetMs"> {
  /** newest server: stream:true opens the SSE at once with keepalives (default false: the recorded server) */
  chatStreamKeepalive?: boolean;
  /** with `chatStreamKeepalive`: how long a streamed call waits for its generation, ms (default 1 h) */
  llmCallBudgetMs?: number;
}

/** The stray frame the newest proxy writes when a chat stream fails after it opened (llm-routes §1). */
const CHAT_STREAM_ERROR_TAIL = 'event: content_block_stop\ndata: {"index": 0, "type": "content_block_stop"}\n\n';

/** The parsed body, or null when the vLLM request model would reject it (the proxy then answers 500). */
function parseChatBody(text: string): { body: Record<string, unknown>; messages: ChatMessage[] } | null {
  let body: unknown;
  try {
    body = pyJsonLoads(text);
  } catch {
    return null;
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return null;
  const messages = (body as { messages?: unknown }).messages;
  if (!Array.isArray(messages) || !messages.every((m) => m && typeof m === "object" && typeof (m as ChatMessage).role === "string")) {
    return null;
  }
  return { body: body as Record<string, unknown>, messages: messages as ChatMessage[] };
}

/** Checks the real proxy repeats while waiting for the engine (spec §9.2 step 6). Null when the call may proceed. */
function waitCheck(state: ServerState, uuid: string): Response | null {
  if (!isRollingState(state.engineStatus)) return httpException(404, ServerText.proxyNotRolling);
  const record = state.records.get(uuid);
  if (!record) return httpException(404, ServerText.episodeNotFound(uuid));
  if (record.episode_status !== "claimed") return httpException(404, ServerText.proxyNotClaimed(uuid));
  return null;
}

/** Serves one `/v1/chat/completions` request. */
export async function handleChatCompletion(req: Request, deps: ProxyDeps): Promise<Response> {
  const { state } = deps;
  const key = decodeEpisodeKey(req.headers.get("authorization"));
  if (!key.ok) return jsonResponse({ status_code: 401, detail: key.detail, headers: null });
  const parsed = parseChatBody(await req.text());
  if (!parsed) return internalServerError();
  const messages = [...parsed.messages];
  if (messages.length > 0 && messages[0]?.role !== "system") messages.unshift({ role: "system", content: ServerText.defaultSystemPrompt });

  const uuid = key.episodeUuid;
  if (deps.chatStreamKeepalive && parsed.body["stream"] === true) return newestStream(deps, uuid, parsed.body, messages);
  if (!isRollingState(state.engineStatus)) return httpException(404, ServerText.proxyNotRolling);
  const record = state.records.get(uuid);
  if (!record) return httpException(404, ServerText.episodeNotFound(uuid));
  record.latest_activity_timestamp = state.nowSeconds();
  record.llm_call_count += 1;
  refreshClientActivity(state, record.client_uuid);
  const call: ChatCallInfo = { episodeUuid: uuid, callIndex: record.llm_call_count, body: parsed.body, messages };
  const admitted = { call, clientUuid: record.client_uuid, startMs: deps.clock.nowMs() };
  const stream = parsed.body["stream"] === true;
  const res = await applyFault(deps.hooks.chatCompletion?.(call), deps.clock, async () => {
    const before = waitCheck(state, uuid);
    if (before) return before;
    state.inFlightCalls.set(uuid, (state.inFlightCalls.get(uuid) ?? 0) + 1);
    let generated: Awaited<ReturnType<typeof generate>>;
    try {
      generated = await generate(deps, call);
    } catch {
      return internalServerError();
    } finally {
      state.inFlightCalls.set(uuid, (state.inFlightCalls.get(uuid) ?? 1) - 1);
    }
    const after = waitCheck(state, uuid);
    if (after) return after;
    const current = state.records.get(uuid);
    if (current) current.latest_activity_timestamp = state.nowSeconds();
    const completion: EngineCompletion = { id: deps.ids.hex32(), created: Math.floor(state.nowSeconds()), ...generated };
    const output = chatCompletionBody(completion);
    state.latestLlmCall = { input: parsed.body, output };
    if (stream) {
      return new Response(chatCompletionSse(completion, parsed.body["model"]), { status: 200, headers: SSE_HEADERS });
    }
    return jsonResponse(output);
  });
  const outcome = req.signal?.aborted ? "client_gone" : res.status === 200 ? "ok" : "error";
  journalLlmCall(deps, admitted, stream, outcome, res.status);
  return res;
}

/** A `stream: true` chat call as the newest server serves it (`chatStreamKeepalive`). */
function newestStream(deps: ProxyDeps, uuid: string, body: Record<string, unknown>, messages: ChatMessage[]): Response {
  return streamCall(
    { ...deps, llmCallBudgetMs: deps.llmCallBudgetMs ?? LLM_CALL_BUDGET_SECONDS * 1000 },
    {
      prologue: ": keepalive\n\n",
      heartbeat: ": keepalive\n\n",
      heartbeatAtOnce: false,
      admit: () => preflight(deps, "chat", uuid, body, messages, undefined),
      finish: (answer) => {
        deps.state.latestLlmCall = { input: body, output: chatCompletionBody(answer) };
        return chatCompletionSse(answer, body["model"]);
      },
      errorTail: CHAT_STREAM_ERROR_TAIL,
    },
  );
}
