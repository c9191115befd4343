/**
 * @module emulator/hooks — fault injection points of the emulator: delay or fail `/claim_episode`,
 * `/end_episode`, `/abort_episode` and the chat proxy, before or after the server acted, and override the LLM
 * latency. Tests set them on `emulator.hooks` at any time; an unset hook means normal behaviour.
 */
import type { ClaimEpisodeRequest, EndEpisodeRequest } from "../protocol/index.ts";
import type { Clock } from "./clock.ts";
import { httpException, internalServerError, jsonResponse } from "./http/fastapi.ts";
import type { ChatMessage } from "./policy/chat-shapes.ts";

/** What a hook asks for. With nothing set, the request is handled normally. */
export interface FaultAction {
  /** Wait this long first, milliseconds on the emulator's clock (e.g. BC-26: a 45 s end_episode ack). */
  delayMs?: number;
  /**
   * Answer with this HTTP status. A 500 without `body` is the plain-text `Internal Server Error`; another status
   * without `body` is `{"detail": "injected fault"}`.
   */
  status?: number;
  /** Body for `status`: a string is sent as text/plain, anything else as JSON. */
  body?: unknown;
  /** Handle the request normally, THEN answer with `status` (the server acted; the client sees an error). */
  afterHandling?: boolean;
  /** Extra response headers for `status` (e.g. `retry-after`). */
  headers?: Record<string, string>;
  /**
   * Drop the connection without an answer (after handling, with `afterHandling`). Over a socket the connection is
   * destroyed; in process (`app.fetch`) the answer is a bodiless 500 carrying {@link DROP_HEADER}.
   */
  drop?: boolean;
  /**
   * With `afterHandling`: asked once the request was handled; false answers it normally (the fault only hits requests
   * whose handling did something, e.g. the end that closed the batch).
   */
  onlyIf?: () => boolean;
}

/** Header of an in-process answer that stands for a dropped connection; the socket server destroys the socket on it. */
export const DROP_HEADER = "x-ajet-emulator-drop";

/** The proxy's LLM routes: `/v1/chat/completions`, `/v1/responses`, `/v1/messages`. */
export type LlmRoute = "chat" | "responses" | "messages";

/**
 * An LLM call as hooks see it (any of the three routes). `callIndex` is the episode's 1-based LLM call number.
 */
export interface ChatCallInfo {
  episodeUuid: string;
  callIndex: number;
  /** The request body as received. */
  body: unknown;
  /** The chat messages the model sees (translated from Responses / Messages input; default system prompt injected). */
  messages: readonly ChatMessage[];
  /** The route the call came in on; absent means chat. */
  route?: LlmRoute;
  /** The chat-format function tools the model is offered (translated for Responses / Messages); absent: `body.tools`. */
  tools?: unknown;
}

/** The hooks. Each returns a FaultAction, or nothing for normal behaviour. */
export interface EmulatorHooks {
  claimEpisode?: (req: ClaimEpisodeRequest) => FaultAction | undefined | void;
  endEpisode?: (req: EndEpisodeRequest) => FaultAction | undefined | void;
  abortEpisode?: (req: EndEpisodeRequest) => FaultAction | undefined | void;
  /**
   * Called for every LLM call (chat, Responses, Messages; `call.route` says which) after the swarm checks passed and
   * the call was counted (the real proxy counts before generating). In a stream that is already open, a failure
   * status ends the stream without its terminal event and `drop` errors it.
   */
  chatCompletion?: (call: ChatCallInfo) => FaultAction | undefined | void;
  /** Replaces the simulated generation latency, milliseconds (a function may return undefined: the policy's own). */
  llmLatencyMs?: number | ((call: ChatCallInfo) => number | undefined);
  /** Observer (no fault): a `/claim_episode` handed out an episode, at `atMs` on the emulator's clock. */
  onClaimed?: (claim: { episodeUuid: string; clientUuid: string; atMs: number }) => void;
}

function faultResponse(action: FaultAction): Response {
  if (action.drop) return new Response(null, { status: 500, headers: { [DROP_HEADER]: "1" } });
  const status = action.status ?? 500;
  const res =
    action.body === undefined
      ? status === 500
        ? internalServerError()
        : httpException(status, "injected fault")
      : typeof action.body === "string"
        ? new Response(action.body, { status, headers: { "content-type": "text/plain; charset=utf-8" } })
        : jsonResponse(action.body, status);
  for (const [k, v] of Object.entries(action.headers ?? {})) res.headers.set(k, v);
  return res;
}

/**
 * Applies a hook's action around `handle`: delay, then either the fault instead of handling, or handling then
 * the fault (`afterHandling`), or plain handling.
 */
export async function applyFault(action: FaultAction | undefined | void, clock: Clock, handle: () => Promise<Response>): Promise<Response> {
  if (!action) return handle();
  if (action.delayMs) await clock.sleep(action.delayMs);
  if (action.status === undefined && !action.drop) return handle();
  if (action.afterHandling) {
    const answer = await handle();
    if (action.onlyIf && !action.onlyIf()) return answer;
  }
  return faultResponse(action);
}
