/**
 * @module rewards/judge — LLM-as-judge over any OpenAI-compatible endpoint (issue 4 §3): a rubric (system message)
 * and the material (user message) in, one score in [0, 1] out, read by {@link parseJudgeVerdict} (BC-21). The
 * judge is NOT a swarm endpoint: its calls train nothing and do not refresh the episode's idle timer (BC-23), so
 * it retries on its own bounded loop (the SDK's `maxRetries` stays 0, every attempt is explicit) with a timeout
 * per attempt, and sends through the `fetch` it is given (the runtime's guarded fetch: BC-48/BC-49).
 * Platform-free (workerd and Node).
 */
import OpenAI, { APIConnectionError, APIError, APIUserAbortError } from "openai";
import { AbortCause, EpisodeAbortError } from "../port/index.ts";
import { parseJudgeVerdict, type VerdictParseOptions, type VerdictSource } from "./judge-verdict.ts";

export * from "./judge-verdict.ts";

/** Abort reasons a judge raises (logged by the runtime and sent with `/abort_episode`). */
export const JudgeReason = {
  /** no usable verdict after the retry budget (BC-21): the episode is aborted, never ended with 0 */
  unparseable: AbortCause.judgeUnparseable,
  /** the endpoint failed (timeouts, connection errors, 408/409/429/5xx after the budget; other 4xx at once) */
  unavailable: AbortCause.judgeUnavailable,
  /** the judge secrets are incomplete (some of JUDGE_BASE_URL / JUDGE_API_KEY / JUDGE_MODEL set, not all) */
  misconfigured: AbortCause.judgeMisconfigured,
} as const;

/** The secrets (run spec `secrets`, seen as `ctx.secrets`) that configure the OpenAI-compatible judge. */
export const JUDGE_SECRET_NAMES = ["JUDGE_BASE_URL", "JUDGE_API_KEY", "JUDGE_MODEL"] as const;

/** One grading: `rubric` becomes the system message (end it with `JUDGE_SCORE_INSTRUCTION`), `input` the user's. */
export interface JudgeRequest {
  rubric: string;
  input: string;
  /** a short label for logs and errors, e.g. `"translation"` */
  label?: string;
}

/** A judge's verdict. */
export interface JudgeVerdict {
  /** in [0, 1] */
  score: number;
  source: VerdictSource | "fake";
  /** judge calls made for this verdict (1 = first try) */
  attempts: number;
  /** the reply the score was read from */
  text: string;
  /** the judge model, or the fake judge's name */
  judge: string;
}

/** Anything that grades: the OpenAI-compatible judge, a fake, or a rule. */
export interface Judge {
  readonly name: string;
  /**
   * @throws EpisodeAbortError `judge_unparseable` / `judge_unavailable` ({@link JudgeReason}); the signal's
   *   abort propagates as the SDK's `APIUserAbortError`
   */
  grade(request: JudgeRequest, options?: { signal?: AbortSignal }): Promise<JudgeVerdict>;
}

/** The fetch the judge sends with (the runtime's guarded fetch, or a scripted one in tests). */
export type JudgeFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Options of {@link createOpenAIJudge}. */
export interface OpenAIJudgeOptions {
  /** OpenAI-compatible base URL, e.g. `https://api.example.com/v1` */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** default: the global fetch, read at call time */
  fetch?: JudgeFetch;
  /** judge calls per verdict, the first included; default 3 */
  maxAttempts?: number;
  /** timeout of one judge call, in ms; default 60 000 */
  timeoutMs?: number;
  /** pause before the 2nd attempt, in ms, doubled after each further one; default 1000 */
  retryDelayMs?: number;
  /** waits between attempts (inject a fake in tests); default `setTimeout` */
  sleep?: (ms: number) => Promise<void>;
  /** `max_tokens` of a judge call; default 1024 (room for short reasoning plus the verdict) */
  maxTokens?: number;
  /** default 0 */
  temperature?: number;
  /** how replies are read (verdict tags) */
  parse?: VerdictParseOptions;
}

/** Defaults of {@link OpenAIJudgeOptions}, also used by `maxJudgeLatencyMs`. */
export const JUDGE_DEFAULTS = { maxAttempts: 3, timeoutMs: 60_000, retryDelayMs: 1000, maxTokens: 1024 } as const;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** True for failures worth another attempt: timeouts, connection errors, 408, 409, 429 and 5xx (as openai-node). */
function isRetryable(err: unknown): boolean {
  if (err instanceof APIConnectionError) return true; // includes APIConnectionTimeoutError
  if (err instanceof APIError && typeof err.status === "number") {
    return err.status === 408 || err.status === 409 || err.status === 429 || err.status >= 500;
  }
  return false;
}

/** True when the error or one of its causes says `retryable: false` (e.g. `SubrequestBudgetExceededError`). */
function refusesRetry(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e != null && depth < 8; depth++) {
    if ((e as { retryable?: unknown }).retryable === false) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/**
 * A judge on an OpenAI-compatible endpoint. Each attempt is one `chat.completions.create` with `maxRetries: 0`
 * and `timeoutMs`; an unparseable reply, a timeout, a connection error or a 408/409/429/5xx is retried after
 * `retryDelayMs × 2^(n-2)` until `maxAttempts`.
 * @throws EpisodeAbortError `judge_unparseable` when the last attempt's reply has no verdict, `judge_unavailable`
 *   when the last attempt failed or the endpoint answered another 4xx (not retried); a caller abort and an error
 *   whose cause says `retryable: false` (the runtime's subrequest budget, BC-49) propagate unchanged
 */
export function createOpenAIJudge(options: OpenAIJudgeOptions): Judge {
  const maxAttempts = Math.max(1, Math.floor(options.maxAttempts ?? JUDGE_DEFAULTS.maxAttempts));
  const sleep = options.sleep ?? defaultSleep;
  const fetch: JudgeFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const client = new OpenAI({
    baseURL: options.baseUrl,
    apiKey: options.apiKey,
    maxRetries: 0,
    timeout: options.timeoutMs ?? JUDGE_DEFAULTS.timeoutMs,
    fetch: fetch as typeof globalThis.fetch,
  });
  const what = (req: JudgeRequest) => `judge ${options.model}${req.label ? ` (${req.label})` : ""}`;
  return {
    name: options.model,
    async grade(request, callOptions = {}) {
      let lastProblem = "";
      let lastKind: (typeof JudgeReason)["unparseable" | "unavailable"] = JudgeReason.unparseable;
      for (let attempt = 1; attempt <= maxAttempts; attempt++) {
        if (attempt > 1) await sleep((options.retryDelayMs ?? JUDGE_DEFAULTS.retryDelayMs) * 2 ** (attempt - 2));
        let content: string | null | undefined;
        let finishReason: string | null | undefined;
        try {
          const completion = await client.chat.completions.create(
            {
              model: options.model,
              messages: [
                { role: "system", content: request.rubric },
                { role: "user", content: request.input },
              ],
              temperature: options.temperature ?? 0,
              max_tokens: options.maxTokens ?? JUDGE_DEFAULTS.maxTokens,
            },
            { signal: callOptions.signal },
          );
          const choice = completion.choices?.[0];
          content = choice?.message?.content;
          finishReason = choice?.finish_reason;
        } catch (err) {
          // a caller abort, or a platform limit that says retrying cannot help (the subrequest budget, BC-49)
          if (err instanceof APIUserAbortError || callOptions.signal?.aborted || refusesRetry(err)) throw err;
          if (!isRetryable(err)) {
            throw new EpisodeAbortError(JudgeReason.unavailable, `${what(request)} failed: ${describeError(err)}`, { cause: err });
          }
          lastKind = JudgeReason.unavailable;
          lastProblem = describeError(err);
          continue;
        }
        const verdict = parseJudgeVerdict(content, finishReason, options.parse);
        if (verdict.ok) {
          return { score: verdict.score, source: verdict.source, attempts: attempt, text: content ?? "", judge: options.model };
        }
        lastKind = JudgeReason.unparseable;
        lastProblem = verdict.problem;
      }
      throw new EpisodeAbortError(lastKind, `${what(request)}: no verdict after ${maxAttempts} attempt(s); last: ${lastProblem}`);
    },
  };
}

/**
 * The judge the run's secrets describe: `JUDGE_BASE_URL`, `JUDGE_API_KEY` and `JUDGE_MODEL` all set (non-empty)
 * → an OpenAI-compatible judge with `options`; none set → `undefined` (the caller picks its fallback).
 * @throws EpisodeAbortError `judge_misconfigured` naming the missing secrets when only some are set
 */
export function judgeFromSecrets(
  secrets: Readonly<Record<string, string>>,
  options: Omit<OpenAIJudgeOptions, "baseUrl" | "apiKey" | "model"> = {},
): Judge | undefined {
  const present = JUDGE_SECRET_NAMES.filter((k) => (secrets[k] ?? "").trim() !== "");
  if (present.length === 0) return undefined;
  if (present.length < JUDGE_SECRET_NAMES.length) {
    const missing = JUDGE_SECRET_NAMES.filter((k) => !present.includes(k));
    throw new EpisodeAbortError(
      JudgeReason.misconfigured,
      `judge secrets incomplete: ${missing.join(", ")} missing (set all of ${JUDGE_SECRET_NAMES.join(", ")} ` +
        "in the run's secrets, or none for the fallback)",
    );
  }
  return createOpenAIJudge({
    ...options,
    baseUrl: secrets.JUDGE_BASE_URL!.trim(),
    apiKey: secrets.JUDGE_API_KEY!.trim(),
    model: secrets.JUDGE_MODEL!.trim(),
  });
}
