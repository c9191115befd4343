/**
 * @module sdk/llm-guards — checks on `/chat/completions` answers from a swarm endpoint that turn
 * infrastructure faults into {@link EpisodeAbortError}s instead of wrong answers: a 200 without `choices` (BC-38),
 * an in-band SSE `error` chunk or a stream without `[DONE]` (BC-40), `finish_reason: "abort"` (BC-43). Pure; the
 * production runtime composes {@link withChatCompletionGuards} into its fetch, and so does the test harness.
 */
import { AbortCause, EpisodeAbortError } from "../port/index.ts";

/** The fetch signature the openai SDK accepts (and the runtime's limiter wraps). */
export type ChatFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Abort reasons raised here: logged by the runtime, sent with `/abort_episode` as the cause. */
export const GuardReason = {
  /** a 200 body with `status_code`/`detail` and no `choices`: the key was refused (BC-38); never retried */
  authError: AbortCause.authError,
  /** a malformed body, an in-band stream error, or a stream cut short (BC-40) */
  infraError: AbortCause.infraError,
  /** the engine aborted generation, e.g. for a weight sync (BC-43) */
  llmAborted: AbortCause.llmAborted,
} as const;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Short printable form of a server value for an error message. "timeout"/"timed out" are hyphenated because the
 * openai SDK classifies a fetch error whose text matches `/timed? ?out/i` as APIConnectionTimeoutError and drops
 * its `cause`, which would hide the abort reason.
 */
function brief(value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return (text ?? String(value)).slice(0, 300).replace(/(timed?) ?(out)/gi, "$1-$2");
}

/** Throws for any choice with `finish_reason: "abort"` (BC-43). `length` and others pass: they score normally. */
function assertNotAborted(choices: readonly unknown[]): void {
  for (const choice of choices) {
    if (isObject(choice) && choice.finish_reason === "abort") {
      throw new EpisodeAbortError(
        GuardReason.llmAborted,
        'the LLM answered with finish_reason "abort" (engine-side abort, e.g. a weight sync); abort the episode',
      );
    }
  }
}

/**
 * Asserts that a 200 `/chat/completions` JSON body is a chat completion: an object with a non-empty `choices` array.
 * @throws EpisodeAbortError `auth_error` for `{status_code, detail}` without `choices` (BC-38, spec §9.2),
 *   `infra_error` for an `error` object or any other shape, `llm_aborted` for `finish_reason: "abort"` (BC-43)
 */
export function assertChatCompletionShape(body: unknown): asserts body is { choices: unknown[] } {
  if (isObject(body) && Array.isArray(body.choices) && body.choices.length > 0) {
    assertNotAborted(body.choices);
    return;
  }
  if (isObject(body) && !("choices" in body) && ("status_code" in body || "detail" in body)) {
    throw new EpisodeAbortError(
      GuardReason.authError,
      `the swarm endpoint refused the episode key: ${brief(body.detail ?? body.status_code)} (HTTP 200 without ` +
        "choices; send the sk-ajet- key exactly as the claim returned it)",
    );
  }
  if (isObject(body) && "error" in body) {
    throw new EpisodeAbortError(GuardReason.infraError, `the LLM endpoint returned an error: ${brief(body.error)}`);
  }
  throw new EpisodeAbortError(GuardReason.infraError, `not a chat completion (no choices): ${brief(body)}`);
}

/**
 * Asserts one parsed SSE `data:` chunk of a streamed chat completion.
 * @throws EpisodeAbortError `infra_error` for `{"error": …}` (BC-40), `llm_aborted` for `finish_reason: "abort"`
 */
export function assertChatCompletionChunk(chunk: unknown): void {
  if (isObject(chunk) && chunk.error != null) {
    throw new EpisodeAbortError(GuardReason.infraError, `the LLM stream carried an error after HTTP 200: ${brief(chunk.error)}`);
  }
  if (isObject(chunk) && Array.isArray(chunk.choices)) assertNotAborted(chunk.choices);
}

/** Checks SSE lines as they pass; errors the stream on a bad chunk or on an end without `[DONE]`. */
function guardEventStream(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  let pending = "";
  let sawDone = false;
  const checkLine = (line: string) => {
    if (!line.startsWith("data:")) return;
    const data = line.slice(5).trim();
    if (data === "[DONE]") sawDone = true;
    else if (data !== "") assertChatCompletionChunk(parseJson(data));
  };
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        pending += decoder.decode(chunk, { stream: true });
        const lines = pending.split(/\r?\n/);
        pending = lines.pop() ?? "";
        lines.forEach(checkLine); // throws before the chunk reaches the SDK
        controller.enqueue(chunk);
      },
      flush() {
        checkLine((pending + decoder.decode()).trim());
        if (!sawDone) {
          throw new EpisodeAbortError(GuardReason.infraError, "the LLM stream ended without its final [DONE] line (the server's upstream call failed)");
        }
      },
    }),
  );
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new EpisodeAbortError(GuardReason.infraError, `the LLM endpoint sent invalid JSON: ${brief(text)}`);
  }
}

function isChatCompletionsPost(input: string | URL | Request, init: RequestInit | undefined): boolean {
  const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  if (method !== "POST") return false;
  try {
    return new URL(url).pathname.endsWith("/chat/completions");
  } catch {
    return false; // a relative or malformed URL is not a swarm call
  }
}

/**
 * Wraps a fetch so every successful `POST …/chat/completions` answer is checked: JSON bodies with
 * {@link assertChatCompletionShape} (read fully, then re-served unchanged), event streams chunk by chunk with
 * {@link assertChatCompletionChunk} plus the `[DONE]` check. Other requests and non-2xx answers pass untouched
 * (the SDK raises its own `APIError` for those).
 *
 * Note: the openai SDK wraps an error thrown by `fetch` in `APIConnectionError` (the original as `cause`); use
 * {@link findEpisodeAbortError} to recover it. Stream errors surface unwrapped while iterating.
 */
export function withChatCompletionGuards(inner: ChatFetch): ChatFetch {
  return async (input, init) => {
    const res = await inner(input, init);
    if (!res.ok || !isChatCompletionsPost(input, init)) return res;
    if ((res.headers.get("content-type") ?? "").includes("text/event-stream")) {
      if (!res.body) throw new EpisodeAbortError(GuardReason.infraError, "the LLM stream has no body");
      return new Response(guardEventStream(res.body), { status: res.status, headers: res.headers });
    }
    const text = await res.text();
    assertChatCompletionShape(parseJson(text));
    return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/**
 * The {@link EpisodeAbortError} behind an error, following `cause` links (at most 8), or `undefined`. Use it on
 * anything an openai call throws: `catch (e) { throw findEpisodeAbortError(e) ?? e }`.
 */
export function findEpisodeAbortError(err: unknown): EpisodeAbortError | undefined {
  return findCause(err, EpisodeAbortError);
}

/** The first error of class `type` among `err` and its `cause` links (at most 8), or `undefined`. */
export function findCause<T>(err: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 8 && current != null; depth++) {
    if (current instanceof type) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
