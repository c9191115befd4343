/**
 * @module emulator/proxy/llm-call — the pipeline the newest proxy shares between its LLM routes (llm-routes §1):
 * the pre-flight (status and record checks with the exact 404 texts, `llm_call_count + 1`, activity of the episode
 * and of its client), the fault hook, the wait for the engine in 6 s slices (record gone → 404, activity refreshed,
 * not claimed → 404; engine out of ROLLING → 404; budget spent → 500), a generation that is shielded from the
 * client (it finishes and is recorded when the client went away: the ghost-sample mechanism, llm-routes §1 step 7,
 * §5), and the SSE machinery: a stream opened at once, a prologue, a heartbeat every 5 s while the engine works,
 * then the format's events — or, on an error after the stream opened, an end without the terminal event.
 */
import { LLM_STREAM_KEEPALIVE_SECONDS, ServerText, isRollingState } from "../../protocol/index.ts";
import type { Clock, TimerHandle } from "../clock.ts";
import { applyFault, DROP_HEADER, type ChatCallInfo, type EmulatorHooks, type LlmRoute } from "../hooks.ts";
import { httpException, internalServerError } from "../http/fastapi.ts";
import type { Journal } from "../journal.ts";
import { chatUsage, type ChatMessage } from "../policy/chat-shapes.ts";
import type { SimulatedPolicy } from "../policy/policy.ts";
import type { Rng } from "../rng.ts";
import { refreshClientActivity } from "../server/pool.ts";
import type { ServerState } from "../server/state.ts";
import type { EngineCompletion } from "./completion.ts";
import { callUpstream, type ResolvedUpstream } from "./upstream.ts";

/** Interval of the keepalive frames of a pending streamed call (`STREAM_KEEPALIVE_INTERVAL_SEC`), ms. */
export const STREAM_KEEPALIVE_MS = LLM_STREAM_KEEPALIVE_SECONDS * 1000;
/** One receive slice of the proxy's wait for the engine; activity and the record are checked before each, ms. */
export const PROXY_WAIT_SLICE_MS = 6_000;

/** What the LLM routes need from the emulator. */
export interface LlmCallDeps {
  state: ServerState;
  policy: SimulatedPolicy;
  hooks: EmulatorHooks;
  clock: Clock;
  /** Stream for timeline uuids and the ids the adapters mint. */
  ids: Rng;
  upstream?: ResolvedUpstream;
  journal?: Journal;
  /** How long one call may wait for its generation before the proxy gives up (500), ms. */
  llmCallBudgetMs: number;
  /** Aborted when the emulator closes: pending generations stop (a 10-minute call must not hold a stopping process). */
  shutdown?: AbortSignal;
}

/** The engine's answer to one call, as the stored converter reports it. */
export interface EngineAnswer extends EngineCompletion {
  /** The chat `finish_reason` the adapters map (`length`, `tool_calls`, else stop). The stored converter says `stop`. */
  finishReason: string;
}

/** Outcome of a call: the engine's answer, or the HTTP answer a non-streaming client gets. */
export type EngineCallResult = { ok: true; answer: EngineAnswer } | { ok: false; response: Response };

/** Generates one reply: the upstream forwarder or the simulated policy, after its (hook-overridable) latency. */
export async function generate(deps: Pick<LlmCallDeps, "upstream" | "policy" | "hooks" | "clock" | "shutdown">, call: ChatCallInfo): Promise<Omit<EngineCompletion, "id" | "created">> {
  const body = call.body as { tools?: unknown; model?: unknown };
  const tools = call.tools ?? body.tools;
  if (deps.upstream) return callUpstream(deps.upstream, call.messages.map(asFunctionToolCalls), tools, body.model);
  const reply = deps.policy.respond({ messages: call.messages, tools, episodeUuid: call.episodeUuid, callIndex: call.callIndex });
  const override = deps.hooks.llmLatencyMs;
  const latencyMs = (typeof override === "function" ? override(call) : override) ?? reply.latencyMs;
  if (latencyMs > 0) await deps.clock.sleep(latencyMs, deps.shutdown);
  return { content: reply.content, toolCalls: reply.toolCalls, usage: chatUsage(call.messages, reply.content, reply.toolCalls) };
}

/**
 * The Messages adapter marks replayed tool calls `type: "custom"` (what verl's engine wants); an OpenAI-compatible
 * upstream wants `function`, so the forwarder sends them as function calls.
 */
function asFunctionToolCalls(m: ChatMessage): ChatMessage {
  if (!Array.isArray(m.tool_calls)) return m;
  return { ...m, tool_calls: (m.tool_calls as Array<Record<string, unknown>>).map((c) => (c?.["type"] === "custom" ? { ...c, type: "function" } : c)) };
}

/** A call that passed the pre-flight: counted, activity refreshed. */
export interface AdmittedCall {
  call: ChatCallInfo;
  clientUuid: string;
  startMs: number;
}

/**
 * The pre-flight (llm-routes §1 step 3): engine not ROLLING/ROLLING_POST → 404, no record → 404; else the call is
 * counted, the episode's activity and its client's active-list entry refreshed. It does not require `claimed`.
 */
export function preflight(
  deps: Pick<LlmCallDeps, "state" | "clock">,
  route: LlmRoute,
  episodeUuid: string,
  body: unknown,
  messages: ChatMessage[],
  tools: unknown,
): { ok: true; admitted: AdmittedCall } | { ok: false; response: Response } {
  const { state } = deps;
  if (!isRollingState(state.engineStatus)) return { ok: false, response: httpException(404, ServerText.proxyNotRolling) };
  const record = state.records.get(episodeUuid);
  if (!record) return { ok: false, response: httpException(404, ServerText.episodeNotFound(episodeUuid)) };
  record.latest_activity_timestamp = state.nowSeconds();
  record.llm_call_count += 1;
  refreshClientActivity(state, record.client_uuid);
  const call: ChatCallInfo = { episodeUuid, callIndex: record.llm_call_count, body, messages, route, tools };
  return { ok: true, admitted: { call, clientUuid: record.client_uuid, startMs: deps.clock.nowMs() } };
}

/** The check the proxy makes before each receive slice; refreshes the episode's activity. Null: keep waiting. */
function beforeSlice(state: ServerState, uuid: string): Response | null {
  const record = state.records.get(uuid);
  if (!record) return httpException(404, ServerText.episodeNotFound(uuid));
  record.latest_activity_timestamp = state.nowSeconds();
  if (record.episode_status !== "claimed") return httpException(404, ServerText.proxyNotClaimed(uuid));
  return null;
}

/**
 * Waits for the generation in {@link PROXY_WAIT_SLICE_MS} slices (llm-routes §1 step 5). The generation itself is
 * not cancelled by any outcome here: a real engine finishes what it started.
 */
async function awaitEngine(deps: LlmCallDeps, call: ChatCallInfo): Promise<EngineCallResult> {
  const { state, clock } = deps;
  const uuid = call.episodeUuid;
  const startMs = clock.nowMs();
  state.inFlightCalls.set(uuid, (state.inFlightCalls.get(uuid) ?? 0) + 1);
  let settled = false;
  const generation = generate(deps, call).then(
    (g) => ({ ok: true as const, g }),
    () => ({ ok: false as const }),
  );
  void generation.finally(() => {
    settled = true;
    state.inFlightCalls.set(uuid, (state.inFlightCalls.get(uuid) ?? 1) - 1);
  });
  for (;;) {
    const refused = beforeSlice(state, uuid);
    if (refused) return { ok: false, response: refused };
    const slice = new AbortController();
    const timedOut = clock.sleep(PROXY_WAIT_SLICE_MS, slice.signal).then(
      () => true,
      () => false,
    );
    const outcome = await Promise.race([generation, timedOut]);
    if (typeof outcome !== "boolean") {
      slice.abort();
      if (!outcome.ok) return { ok: false, response: internalServerError() };
      const current = state.records.get(uuid);
      if (current) current.latest_activity_timestamp = state.nowSeconds();
      const answer: EngineAnswer = { id: deps.ids.hex32(), created: Math.floor(state.nowSeconds()), finishReason: "stop", ...outcome.g };
      return { ok: true, answer };
    }
    if (settled) continue; // finished on the slice boundary: the next race takes it
    if (!isRollingState(state.engineStatus)) return { ok: false, response: httpException(404, ServerText.proxyNotRolling) };
    if (clock.nowMs() - startMs >= deps.llmCallBudgetMs) return { ok: false, response: internalServerError() };
  }
}

/**
 * Runs an admitted call through the fault hook (delay, fail before or after handling, drop) and the wait.
 * @returns the engine's answer, or the HTTP answer a non-streaming client gets (a drop carries {@link DROP_HEADER})
 */
export async function runEngineCall(deps: LlmCallDeps, call: ChatCallInfo): Promise<EngineCallResult> {
  let result: EngineCallResult | null = null;
  const response = await applyFault(deps.hooks.chatCompletion?.(call), deps.clock, async () => {
    result = await awaitEngine(deps, call);
    return result.ok ? OK_MARKER : result.response;
  });
  if (response === OK_MARKER && result) return result;
  return { ok: false, response };
}
const OK_MARKER = new Response(null, { status: 299 });

/** Journals one counted LLM call when it ends (`outcome`: answered, the client went away first, or an error answer). */
export function journalLlmCall(deps: Pick<LlmCallDeps, "journal" | "clock">, admitted: AdmittedCall, stream: boolean, outcome: "ok" | "client_gone" | "error", status: number): void {
  deps.journal?.add({
    ev: "llm",
    atMs: deps.clock.nowMs(),
    startMs: admitted.startMs,
    route: admitted.call.route ?? "chat",
    episodeUuid: admitted.call.episodeUuid,
    clientUuid: admitted.clientUuid,
    callIndex: admitted.call.callIndex,
    stream,
    outcome,
    status,
  });
}

/** SSE response headers of the newest proxy (llm-routes §3.3). */
export const STREAM_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no" } as const;

/** How a streamed route writes its frames. */
export interface StreamPlan {
  /** Written at once when the stream opens (before the pre-flight). */
  prologue: string;
  /** Written every {@link STREAM_KEEPALIVE_MS} while the engine works (and once right after the prologue when `heartbeatAtOnce`). */
  heartbeat: string;
  heartbeatAtOnce: boolean;
  /** Admits the call (pre-flight); a refusal ends the stream without its terminal event. */
  admit(): { ok: true; admitted: AdmittedCall } | { ok: false; response: Response };
  /** The rest of the stream for the engine's answer (and records the call as the latest). */
  finish(answer: EngineAnswer): string;
  /** A frame written before closing after an error (chat's stray `content_block_stop`), or "". */
  errorTail: string;
}

/**
 * A streamed call: the SSE opens at once with `plan.prologue`, heartbeats follow every 5 s on the emulator's clock
 * while the engine works, then `plan.finish(answer)`. Any error after the stream opened (pre-flight refusal, fault,
 * episode gone, budget spent) ends the stream without its terminal event (llm-routes §1); a dropped connection
 * (fault) errors the stream. A client that goes away stops the frames, not the generation.
 */
export function streamCall(deps: LlmCallDeps, plan: StreamPlan): Response {
  const encoder = new TextEncoder();
  let gone = false;
  let heartbeat: TimerHandle | null = null;
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | null = null;
  const write = (text: string) => {
    if (gone || !controllerRef || !text) return;
    try {
      controllerRef.enqueue(encoder.encode(text));
    } catch {
      gone = true;
    }
  };
  const stopBeat = () => {
    if (heartbeat) deps.clock.clearTimer(heartbeat);
    heartbeat = null;
  };
  const beat = () => {
    heartbeat = deps.clock.setTimer(() => {
      if (gone) return;
      write(plan.heartbeat);
      beat();
    }, STREAM_KEEPALIVE_MS);
  };
  const close = () => {
    stopBeat();
    if (gone || !controllerRef) return;
    gone = true;
    try {
      controllerRef.close();
    } catch {
      // already closed by the client
    }
  };
  const run = async () => {
    write(plan.prologue);
    if (plan.heartbeatAtOnce) write(plan.heartbeat);
    beat();
    const admission = plan.admit();
    if (!admission.ok) {
      write(plan.errorTail);
      close();
      return;
    }
    const { admitted } = admission;
    const result = await runEngineCall(deps, admitted.call);
    stopBeat();
    const clientGone = gone;
    if (result.ok) {
      write(plan.finish(result.answer));
      journalLlmCall(deps, admitted, true, clientGone ? "client_gone" : "ok", 200);
      close();
      return;
    }
    journalLlmCall(deps, admitted, true, clientGone ? "client_gone" : "error", result.response.status);
    if (result.response.headers.has(DROP_HEADER) && !gone) {
      gone = true;
      controllerRef?.error(new Error("connection dropped (injected fault)"));
      return;
    }
    write(plan.errorTail);
    close();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controllerRef = controller;
      void run().catch(() => close());
    },
    cancel() {
      gone = true;
      stopBeat();
    },
  });
  return new Response(body, { status: 200, headers: STREAM_HEADERS });
}
