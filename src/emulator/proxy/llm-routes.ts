/**
 * @module emulator/proxy/llm-routes — `POST /v1/responses` and `POST /v1/messages` as the newest proxy serves them
 * (llm-routes §1, §3, §4): the key (`Authorization`; Messages also `x-api-key` when `Authorization` is absent) with
 * proper 401s, the body translated into one chat request (unparseable or rejected → 500, before the swarm checks),
 * then either a JSON answer after the shared pre-flight and wait, or an SSE stream opened at once whose pre-flight,
 * wait and errors happen inside it. Every answered call becomes `latest_llm_call` with its `format`.
 */
import type { EmulatorHooks } from "../hooks.ts";
import { httpException, internalServerError } from "../http/fastapi.ts";
import { fastApiJsonText } from "../python/json-dumps.ts";
import { pyJsonLoads } from "../python/json-parse.ts";
import type { Rng } from "../rng.ts";
import { decodeEpisodeKey } from "./auth.ts";
import { journalLlmCall, preflight, runEngineCall, streamCall, type EngineAnswer, type LlmCallDeps } from "./llm-call.ts";
import { MESSAGES_HEARTBEAT, messageObject, messagesPrologue, messagesRemainder, translateMessagesRequest } from "./messages-api.ts";
import { RESPONSES_FLOAT_KEYS, responseObject, responsesSseEvents, translateResponsesRequest, type TranslatedRequest } from "./responses-api.ts";

/** What the two routes need: the shared call deps plus the stream manners. */
export interface LlmRouteDeps extends LlmCallDeps {
  hooks: EmulatorHooks;
  /** Responses streams announce function_call items too (OpenAI's shape; upstream does not). */
  responsesToolCallEvents?: boolean;
}

type Obj = Record<string, unknown>;

/** One route's format: where the key is read, how bodies translate, what the answer and its stream look like. */
interface RouteFormat {
  route: "responses" | "messages";
  keyOf(req: Request): string | null;
  translate(body: unknown, ids: Rng): TranslatedRequest | null;
  /** The answer object; `streamId` is the id the stream already announced (Messages), if any. */
  answer(answer: EngineAnswer, t: TranslatedRequest, body: Obj, deps: LlmRouteDeps, streamId?: string): Obj;
  floatKeys: ReadonlySet<string>;
  /** Frames written at once when a stream opens (the heartbeat is written at once too when `heartbeatAtOnce`). */
  prologue(t: TranslatedRequest, streamId: string): string;
  heartbeat: string;
  heartbeatAtOnce: boolean;
  events(answer: Obj, deps: LlmRouteDeps): string;
}

const KEEPALIVE_COMMENT = ": keepalive\n\n";

const RESPONSES: RouteFormat = {
  route: "responses",
  keyOf: (req) => req.headers.get("authorization"),
  translate: translateResponsesRequest,
  answer: (answer, t, body, deps) => responseObject(answer, { model: t.model, instructions: body["instructions"] }, deps.ids, deps.state.nowSeconds()),
  floatKeys: RESPONSES_FLOAT_KEYS,
  prologue: () => KEEPALIVE_COMMENT,
  heartbeat: KEEPALIVE_COMMENT,
  heartbeatAtOnce: false,
  events: (answer, deps) => responsesSseEvents(answer, deps.responsesToolCallEvents ?? false),
};

const MESSAGES: RouteFormat = {
  route: "messages",
  // Authorization wins; x-api-key (what stock Anthropic SDKs send) only when Authorization is absent
  keyOf: (req) => req.headers.get("authorization") ?? req.headers.get("x-api-key"),
  translate: translateMessagesRequest,
  answer: (answer, t, _body, deps, streamId) => {
    const message = messageObject(answer, t.model, deps.ids);
    return streamId ? { ...message, id: streamId } : message;
  },
  floatKeys: new Set(),
  prologue: (t, streamId) => messagesPrologue(streamId, t.model),
  heartbeat: MESSAGES_HEARTBEAT,
  heartbeatAtOnce: true,
  events: (answer) => messagesRemainder(answer),
};

function jsonAnswer(body: unknown, floatKeys: ReadonlySet<string>): Response {
  return new Response(fastApiJsonText(body, floatKeys), { status: 200, headers: { "content-type": "application/json" } });
}

async function handle(req: Request, deps: LlmRouteDeps, format: RouteFormat): Promise<Response> {
  const key = decodeEpisodeKey(format.keyOf(req));
  if (!key.ok) return httpException(401, key.detail);
  let body: unknown;
  try {
    body = pyJsonLoads(await req.text());
  } catch {
    return internalServerError();
  }
  const t = format.translate(body, deps.ids);
  if (!t) return internalServerError();
  const raw = body as Obj;
  const admit = () => preflight(deps, format.route, key.episodeUuid, raw, t.messages, t.tools.length ? t.tools : undefined);
  const record = (answer: Obj) => {
    deps.state.latestLlmCall = { input: raw, output: answer, format: format.route };
  };

  if (t.stream) {
    const streamId = deps.ids.hex32();
    return streamCall(deps, {
      prologue: format.prologue(t, streamId),
      heartbeat: format.heartbeat,
      heartbeatAtOnce: format.heartbeatAtOnce,
      admit,
      finish: (engine) => {
        const answer = format.answer(engine, t, raw, deps, format.route === "messages" ? streamId : undefined);
        record(answer);
        return format.events(answer, deps);
      },
      errorTail: "",
    });
  }

  const admission = admit();
  if (!admission.ok) return admission.response;
  const result = await runEngineCall(deps, admission.admitted.call);
  if (!result.ok) {
    journalLlmCall(deps, admission.admitted, false, req.signal?.aborted ? "client_gone" : "error", result.response.status);
    return result.response;
  }
  const answer = format.answer(result.answer, t, raw, deps);
  record(answer);
  journalLlmCall(deps, admission.admitted, false, req.signal?.aborted ? "client_gone" : "ok", 200);
  return jsonAnswer(answer, format.floatKeys);
}

/** Serves one `POST /v1/responses` (OpenAI Responses API). */
export function handleResponses(req: Request, deps: LlmRouteDeps): Promise<Response> {
  return handle(req, deps, RESPONSES);
}

/** Serves one `POST /v1/messages` (Anthropic Messages API). */
export function handleMessages(req: Request, deps: LlmRouteDeps): Promise<Response> {
  return handle(req, deps, MESSAGES);
}
