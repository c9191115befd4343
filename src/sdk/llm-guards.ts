/**
 * @module sdk/llm-guards — checks on the answers of a swarm episode's LLM routes (sdk/llm-routes) that turn
 * infrastructure faults into {@link EpisodeAbortError}s instead of wrong answers: a 200 without the route's shape
 * (`choices`, `output`, `content`; BC-38), an in-band SSE error or a stream without its terminal event (`[DONE]`,
 * `response.completed`, `message_stop`; BC-40, llm-routes §1), `finish_reason: "abort"` (BC-43); and the size limits
 * of a request before it is sent (sdk/llm-request-limits). Pure; the production runtime composes
 * {@link withLlmGuards} into its fetch, and so does the test harness.
 */
import { AbortCause, EpisodeAbortError } from "../port/index.ts";
import { checkLlmRequestSize } from "./llm-request-limits.ts";
import { assertMessageShape, assertResponseShape, brief, llmCallRoute, MESSAGES_STREAM, RESPONSES_STREAM, type LlmRoute, type StreamRule } from "./llm-routes.ts";

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

/** `/chat/completions` streams: chunks checked one by one; `data: [DONE]` ends them. */
const CHAT_STREAM: StreamRule = {
  check: (data) => {
    if (data !== "[DONE]") assertChatCompletionChunk(data);
  },
  isTerminal: (data) => data === "[DONE]",
  terminalName: "final [DONE] line",
};

const STREAM_RULES: Record<LlmRoute, StreamRule> = { chat: CHAT_STREAM, responses: RESPONSES_STREAM, messages: MESSAGES_STREAM };

/**
 * Checks SSE `data:` lines as they pass (comment lines such as `: keepalive` and `event:` lines pass unread); errors
 * the stream on a bad event, or when it ends without the route's terminal event (the server's generation failed
 * after the stream opened, llm-routes §1).
 */
function guardEventStream(body: ReadableStream<Uint8Array>, rule: StreamRule): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  let pending = "";
  let ended = false;
  const checkLine = (line: string) => {
    if (!line.startsWith("data:")) return;
    const text = line.slice(5).trim();
    if (text === "") return;
    const data = text === "[DONE]" ? text : parseJson(text);
    rule.check(data);
    if (rule.isTerminal(data)) ended = true;
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
        if (!ended) {
          throw new EpisodeAbortError(GuardReason.infraError, `the LLM stream ended without its ${rule.terminalName} (the server's generation failed after the stream opened)`);
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

const JSON_CHECKS: Record<LlmRoute, (body: unknown) => void> = { chat: assertChatCompletionShape, responses: assertResponseShape, messages: assertMessageShape };

/**
 * Wraps a fetch so every LLM call (a POST to `/chat/completions`, `/responses` or `/messages`) is checked: its body
 * against the size limits before it is sent (sdk/llm-request-limits), then a successful answer — a JSON body with
 * the route's shape check (read fully, then re-served unchanged), an event stream event by event plus its terminal
 * event. Other requests and non-2xx answers pass untouched (the SDKs raise their own `APIError` for those).
 *
 * Note: the SDKs wrap an error thrown by `fetch` in `APIConnectionError` (the original as `cause`); use
 * {@link findEpisodeAbortError} to recover it. Stream errors surface unwrapped while iterating.
 */
export function withLlmGuards(inner: ChatFetch): ChatFetch {
  return async (input, init) => {
    const route = llmCallRoute(input, init);
    if (route && typeof init?.body === "string") checkLlmRequestSize(init.body);
    const res = await inner(input, init);
    if (!res.ok || !route) return res;
    if ((res.headers.get("content-type") ?? "").includes("text/event-stream")) {
      if (!res.body) throw new EpisodeAbortError(GuardReason.infraError, "the LLM stream has no body");
      return new Response(guardEventStream(res.body, STREAM_RULES[route]), { status: res.status, headers: res.headers });
    }
    const text = await res.text();
    JSON_CHECKS[route](parseJson(text));
    return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/** {@link withLlmGuards} under its first name (chat completions were the only route then). */
export const withChatCompletionGuards = withLlmGuards;

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

/** HTTP statuses of an LLM answer worth sending once more: rate limited, or the server/proxy failed before answering. */
export const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

/** Options of {@link withTransientRetries}. Durations are milliseconds. */
export interface TransientRetryOptions {
  /** attempts in all, the first included (default 3) */
  maxAttempts?: number;
  /** first back-off, doubled per retry, ±50 % jitter (default 500) */
  baseDelayMs?: number;
  /** longest back-off without a `Retry-After` (default 8 000) */
  maxDelayMs?: number;
  now(): number;
  /** waits `ms`; rejects when `signal` fires */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  random(): number;
  /**
   * epoch ms the next attempt must start before (the episode's idle budget: a wait that would end past it is not
   * waited, the last answer or error is returned instead)
   */
  retryBefore(): number;
  /** called before each wait (for the log) */
  onRetry?(info: { attempt: number; waitMs: number; status?: number; error?: string }): void;
}

/** `Retry-After` (delta seconds or an HTTP date) or `retry-after-ms`, in ms; undefined when absent or unreadable. */
export function retryAfterMs(headers: Headers, nowMs: number): number | undefined {
  const ms = Number(headers.get("retry-after-ms"));
  if (headers.has("retry-after-ms") && Number.isFinite(ms) && ms >= 0) return ms;
  const raw = headers.get("retry-after");
  if (raw === null) return undefined;
  const seconds = Number(raw);
  if (raw.trim() !== "" && Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** A body that can be sent again as it is (the SDK sends JSON strings). */
function replayable(input: string | URL | Request, init: RequestInit | undefined): boolean {
  const body = init?.body;
  if (body == null) return !(input instanceof Request) || input.body === null || !input.bodyUsed;
  return typeof body === "string" || body instanceof ArrayBuffer || ArrayBuffer.isView(body) || body instanceof URLSearchParams || body instanceof Blob;
}

/**
 * A thrown fetch error worth retrying: a connection that was refused or never resolved (the request never reached
 * a server). Not a reset or a cut connection: the server may have started the generation, and it finishes and is
 * recorded even when the client is gone, so a resend would be a second sample of the same turn (the "ghost sample",
 * llm-routes §1 step 7, §5). Not an abort, a guard or a budget stop either.
 */
function isTransientError(err: unknown, signal: AbortSignal | null | undefined): boolean {
  if (signal?.aborted) return false;
  if (!(err instanceof Error)) return false;
  if (err instanceof EpisodeAbortError || err.name === "AbortError" || err.name === "TimeoutError") return false;
  if ((err as { retryable?: unknown }).retryable === false) return false;
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  const text = `${err.message} ${String((err as { code?: unknown }).code ?? "")} ${String(cause?.code ?? "")} ${String(cause?.message ?? "")}`;
  return /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|connection refused/i.test(text);
}

/**
 * Wraps an LLM fetch so an answer with a {@link TRANSIENT_STATUSES} status, or a refused connection, is sent again
 * inside the episode: at most `maxAttempts` in all, waiting the exponential back-off or the answer's
 * `Retry-After` (whichever is longer), and only while the wait ends before `retryBefore()` (the idle budget, so a
 * retry never outlives the claim). The openai clients keep `maxRetries: 0`: retrying here keeps the limiter, the
 * budget and the activity watch in charge of every attempt. Requests whose body cannot be replayed are not retried.
 */
export function withTransientRetries(inner: ChatFetch, o: TransientRetryOptions): ChatFetch {
  const maxAttempts = Math.max(1, o.maxAttempts ?? 3);
  const base = o.baseDelayMs ?? 500;
  const cap = o.maxDelayMs ?? 8_000;
  return async (input, init) => {
    const canReplay = replayable(input, init);
    for (let attempt = 1; ; attempt++) {
      const send = input instanceof Request && canReplay ? input.clone() : input;
      let res: Response | undefined;
      let error: unknown;
      try {
        res = await inner(send, init);
      } catch (err) {
        error = err;
      }
      const transient = res ? TRANSIENT_STATUSES.has(res.status) : isTransientError(error, init?.signal);
      if (!transient || !canReplay || attempt >= maxAttempts) {
        if (res) return res;
        throw error;
      }
      const backoff = Math.min(cap, base * 2 ** (attempt - 1)) * (0.5 + o.random());
      const waitMs = Math.max(backoff, (res && retryAfterMs(res.headers, o.now())) ?? 0);
      if (o.now() + waitMs >= o.retryBefore()) {
        if (res) return res;
        throw error;
      }
      await res?.body?.cancel().catch(() => undefined); // an unread body holds its connection (BC-48)
      o.onRetry?.({ attempt, waitMs, ...(res ? { status: res.status } : { error: error instanceof Error ? error.message : String(error) }) });
      await o.sleep(waitMs, init?.signal ?? undefined);
    }
  };
}
