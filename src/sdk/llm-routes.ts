/**
 * @module sdk/llm-routes — the three LLM routes of a swarm episode (llm-routes.md §1): `/chat/completions` (OpenAI
 * chat), `/responses` (OpenAI Responses API) and `/messages` (Anthropic Messages API). Which route a request takes,
 * and what a good answer of each looks like: a JSON body of the route's shape, or an event stream that ends with the
 * route's terminal event (a stream that ends without it is a failed call, llm-routes §1). Pure.
 */
import { AbortCause, EpisodeAbortError } from "../port/index.ts";

/** The LLM routes a swarm server serves under `/v1`. */
export type LlmRoute = "chat" | "responses" | "messages";

/** The route of a request URL (by its path's last segments), or null for any other request. */
export function llmRouteOf(url: string): LlmRoute | null {
  let path: string;
  try {
    path = new URL(url).pathname.replace(/\/+$/, "");
  } catch {
    return null; // a relative or malformed URL is not a swarm call
  }
  if (path.endsWith("/chat/completions")) return "chat";
  if (path.endsWith("/responses")) return "responses";
  if (path.endsWith("/messages")) return "messages";
  return null;
}

/** The URL of a fetch input. */
export function urlOf(input: string | URL | Request): string {
  return typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
}

/** The method of a fetch call (upper case). */
export function methodOf(input: string | URL | Request, init: RequestInit | undefined): string {
  return (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
}

/** The LLM route of a POST, or null when it is not an LLM call. */
export function llmCallRoute(input: string | URL | Request, init: RequestInit | undefined): LlmRoute | null {
  return methodOf(input, init) === "POST" ? llmRouteOf(urlOf(input)) : null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Short printable form of a server value for an error message. "timeout"/"timed out" are hyphenated because the
 * openai SDK classifies a fetch error whose text matches `/timed? ?out/i` as APIConnectionTimeoutError and drops
 * its `cause`, which would hide the abort reason.
 */
export function brief(value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return (text ?? String(value)).slice(0, 300).replace(/(timed?) ?(out)/gi, "$1-$2");
}

/** A key refusal the server sent as a 200 body (`{status_code, detail}` without the route's fields, BC-38). */
function authRefusal(body: Record<string, unknown>, field: string): EpisodeAbortError | null {
  if (field in body || !("status_code" in body || "detail" in body)) return null;
  return new EpisodeAbortError(
    AbortCause.authError,
    `the swarm endpoint refused the episode key: ${brief(body["detail"] ?? body["status_code"])} (HTTP 200 without ${field}; send the sk-ajet- key exactly as the claim returned it)`,
  );
}

/**
 * Asserts that a 200 `/responses` JSON body is a Responses API `response`: an object with an `output` list whose
 * status is not `failed` (`incomplete` passes: a cut answer scores normally, like `length` on chat).
 * @throws EpisodeAbortError `auth_error` for a key refusal (BC-38), `infra_error` for an error or another shape
 */
export function assertResponseShape(body: unknown): void {
  if (isObject(body) && Array.isArray(body["output"])) {
    if (body["status"] === "failed" || (body["error"] != null && body["status"] !== "completed")) {
      throw new EpisodeAbortError(AbortCause.infraError, `the Responses call failed on the server: ${brief(body["error"] ?? body["status"])}`);
    }
    return;
  }
  const refused = isObject(body) ? authRefusal(body, "output") : null;
  if (refused) throw refused;
  throw new EpisodeAbortError(AbortCause.infraError, `not a Responses API response (no output list): ${brief(body)}`);
}

/**
 * Asserts that a 200 `/messages` JSON body is an Anthropic `message`: `type: "message"` with a `content` list.
 * @throws EpisodeAbortError `auth_error` for a key refusal (BC-38), `infra_error` for `type: "error"` or another shape
 */
export function assertMessageShape(body: unknown): void {
  if (isObject(body) && body["type"] === "message" && Array.isArray(body["content"])) return;
  if (isObject(body) && body["type"] === "error") {
    throw new EpisodeAbortError(AbortCause.infraError, `the Messages call failed on the server: ${brief(body["error"])}`);
  }
  const refused = isObject(body) ? authRefusal(body, "content") : null;
  if (refused) throw refused;
  throw new EpisodeAbortError(AbortCause.infraError, `not an Anthropic message (no content list): ${brief(body)}`);
}

/** How the guards read one route's event stream: which events are errors, which one ends it. */
export interface StreamRule {
  /** checks one parsed `data:` object (or the text `[DONE]`); @throws EpisodeAbortError for an in-band error */
  check(data: unknown): void;
  /** true for the route's terminal event */
  isTerminal(data: unknown): boolean;
  /** what a stream that ended without it is called in the error */
  terminalName: string;
}

const typeOf = (data: unknown): unknown => (isObject(data) ? data["type"] : undefined);

/** `/responses` streams: `error` and `response.failed` are in-band errors; `response.completed` (or `.incomplete`) ends them. */
export const RESPONSES_STREAM: StreamRule = {
  check(data) {
    const type = typeOf(data);
    if (type === "error" || type === "response.failed") {
      const detail = isObject(data) ? (data["error"] ?? (isObject(data["response"]) ? data["response"]["error"] : data["message"])) : data;
      throw new EpisodeAbortError(AbortCause.infraError, `the Responses stream carried an error after HTTP 200: ${brief(detail)}`);
    }
  },
  isTerminal: (data) => typeOf(data) === "response.completed" || typeOf(data) === "response.incomplete",
  terminalName: "response.completed event",
};

/** `/messages` streams: an `error` event is an in-band error; `message_stop` ends them. */
export const MESSAGES_STREAM: StreamRule = {
  check(data) {
    if (typeOf(data) === "error") {
      throw new EpisodeAbortError(AbortCause.infraError, `the Messages stream carried an error after HTTP 200: ${brief(isObject(data) ? data["error"] : data)}`);
    }
  },
  isTerminal: (data) => typeOf(data) === "message_stop",
  terminalName: "message_stop event",
};
