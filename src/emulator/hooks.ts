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
}

/** A chat call as hooks see it. `callIndex` is the episode's 1-based LLM call number. */
export interface ChatCallInfo {
  episodeUuid: string;
  callIndex: number;
  /** The request body as received. */
  body: unknown;
  /** The messages the model sees (default system prompt injected). */
  messages: readonly ChatMessage[];
}

/** The hooks. Each returns a FaultAction, or nothing for normal behaviour. */
export interface EmulatorHooks {
  claimEpisode?: (req: ClaimEpisodeRequest) => FaultAction | undefined | void;
  endEpisode?: (req: EndEpisodeRequest) => FaultAction | undefined | void;
  abortEpisode?: (req: EndEpisodeRequest) => FaultAction | undefined | void;
  /** Called after the swarm checks passed and the call was counted (the real proxy counts before generating). */
  chatCompletion?: (call: ChatCallInfo) => FaultAction | undefined | void;
  /** Replaces the simulated generation latency, milliseconds. */
  llmLatencyMs?: number | ((call: ChatCallInfo) => number);
  /** Observer (no fault): a `/claim_episode` handed out an episode, at `atMs` on the emulator's clock. */
  onClaimed?: (claim: { episodeUuid: string; clientUuid: string; atMs: number }) => void;
}

function faultResponse(action: FaultAction): Response {
  const status = action.status ?? 500;
  if (action.body === undefined) return status === 500 ? internalServerError() : httpException(status, "injected fault");
  if (typeof action.body === "string") return new Response(action.body, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
  return jsonResponse(action.body, status);
}

/**
 * Applies a hook's action around `handle`: delay, then either the fault instead of handling, or handling then
 * the fault (`afterHandling`), or plain handling.
 */
export async function applyFault(action: FaultAction | undefined | void, clock: Clock, handle: () => Promise<Response>): Promise<Response> {
  if (!action) return handle();
  if (action.delayMs) await clock.sleep(action.delayMs);
  if (action.status === undefined) return handle();
  if (action.afterHandling) await handle();
  return faultResponse(action);
}
