/**
 * @module runtime/transcript — the record of one episode attempt (issue 12 §2): the LLM requests and answers seen
 * by the guarded fetch (messages, tool calls and their results), the function's `ctx.log` lines, the outcome with
 * reward, `metadata` and `log_metrics` per swarm, timings, and for a failure the error with its stack. Platform
 * free: the runtime fills a {@link TranscriptRecorder}; the Worker stores the finished record (edge/ground/transcripts).
 * The per-episode api key is never recorded: request headers and URLs are not kept, and the record's text is
 * scrubbed of every held key before it leaves the recorder.
 */
import type { EpisodeOutcome } from "../port/index.ts";
import type { RolloutLogger } from "../sdk/contract.ts";
import { API_KEY_PREFIX, type Task } from "../protocol/index.ts";
import type { LlmRoute } from "../sdk/llm-routes.ts";
import type { FetchLike } from "./limits.ts";
import { watchLlm, type LlmCallRecord } from "./llm-watch.ts";
import type { SandboxCallRecord } from "../sandbox/session.ts";
import { replyOf, requestOf } from "./transcript-shapes.ts";

/** Any per-episode key (`sk-ajet-…`), also ones this recorder was not told about. */
const EPISODE_KEY = new RegExp(`${API_KEY_PREFIX}[A-Za-z0-9+/=_-]*`, "g");

/** One LLM call of one swarm episode. Times are epoch ms. */
export interface TranscriptLlmCall {
  swarm: string;
  /** the route (absent in records made before the Responses and Messages routes: chat) */
  route?: LlmRoute;
  startedAtMs: number;
  /** when the answer's body ended (null: still open when the episode finished, or the call failed) */
  endedAtMs: number | null;
  /** HTTP status, null when the request itself failed */
  status: number | null;
  /**
   * the conversation sent, in the route's shape: chat messages; Responses `input` items (after `instructions` as a
   * system message); Anthropic messages with their content blocks (after `system`). Inline images as stubs.
   */
  messages: unknown[];
  /** the tools offered, when any */
  tools?: unknown[];
  /**
   * the answer in the route's shape: the chat message (content and tool calls); the Responses `output` items; an
   * Anthropic `{role, content: blocks, stop_reason}`; or the raw body when it was none of these
   */
  reply: unknown;
  usage?: unknown;
  error?: string;
}

/** One `ctx.log` line. */
export interface TranscriptLogLine {
  atMs: number;
  level: "debug" | "info" | "warn" | "error";
  msg: string;
  fields?: Record<string, unknown>;
}

/** What the function returned per swarm (the validated outputs). */
export interface TranscriptOutput {
  reward: number;
  metadata?: Record<string, unknown>;
  log_metrics?: Record<string, number | number[]>;
}

/** The stored record of one episode attempt (`GET /runs/:id/episodes/:key`). Times are epoch ms. */
export interface EpisodeTranscript {
  v: 1;
  runId: string;
  episodeKey: string;
  attempt: number;
  taskId: string;
  functionName: string;
  episodeType: "train" | "eval";
  /** the task's first query, as the function received it (cut like a message) */
  query: string | null;
  /** the task as the function received it (what a re-score reads); absent in records stored before it was kept */
  task?: Task;
  claimedAtMs: number;
  finishedAtMs: number;
  /** how the server was told: ended, aborted, expired … (null when it was not reached) */
  result: string | null;
  outcome: EpisodeOutcome | null;
  /** the first swarm's reward, when the function returned one */
  reward: number | null;
  outputs: Record<string, TranscriptOutput>;
  llm: TranscriptLlmCall[];
  logs: TranscriptLogLine[];
  /** the sandbox's create, commands (exit codes, output cut to 2,000 characters), code runs, files and destroy; absent when no sandbox was asked for */
  sandbox?: SandboxCallRecord[];
  error: { name: string; message: string; stack?: string } | null;
  /** true when a message, a log line or whole LLM calls were cut to fit the size cap */
  truncated: boolean;
}

/** Limits of a stored transcript. */
export interface TranscriptLimits {
  /** the largest stored record, UTF-8 bytes of its JSON (default 256 KiB) */
  maxBytes: number;
  /** the longest message content or log text before it is cut with a marker (default 8000 characters) */
  maxTextChars: number;
}

/** Defaults of {@link TranscriptLimits}. */
export const DEFAULT_TRANSCRIPT_LIMITS: TranscriptLimits = { maxBytes: 256 * 1024, maxTextChars: 8000 };

/** The most LLM calls and log lines one record keeps while the episode runs (older ones beyond are not kept). */
const MAX_CALLS = 500;
const MAX_LOG_LINES = 1000;
const MAX_SANDBOX_CALLS = 300;

/** Cuts a string longer than `max` characters, keeping head and tail, with a marker saying how much was cut. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const keep = Math.max(0, max - 40);
  const head = Math.ceil(keep * 0.75);
  const tail = keep - head;
  return `${text.slice(0, head)}…[cut ${text.length - keep} chars]…${tail > 0 ? text.slice(-tail) : ""}`;
}

/** Deep copy of a JSON value with every string longer than `max` cut ({@link cutText}); reports whether it cut. */
function cutDeep(value: unknown, max: number, cut: { any: boolean }): unknown {
  if (typeof value === "string") {
    if (value.length > max) cut.any = true;
    return cutText(value, max);
  }
  if (Array.isArray(value)) return value.map((v) => cutDeep(v, max, cut));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cutDeep(v, max, cut)]));
  return value;
}

const byteLength = (text: string): number => new TextEncoder().encode(text).length;

/**
 * The record cut to fit `limits`: every text longer than `maxTextChars` is cut with a marker; if the JSON is still
 * larger than `maxBytes`, texts are cut shorter (down to 200 characters), then the middle LLM calls are left out
 * (first and last kept, a marker call says how many went). Pure.
 * @returns the JSON text to store (at most `maxBytes` unless even an empty record is larger)
 */
export function capTranscript(record: EpisodeTranscript, limits: TranscriptLimits = DEFAULT_TRANSCRIPT_LIMITS): string {
  let max = limits.maxTextChars;
  for (;;) {
    const cut = { any: false };
    const shaped = cutDeep(record, max, cut) as EpisodeTranscript;
    shaped.truncated = record.truncated || cut.any;
    const text = JSON.stringify(shaped);
    if (byteLength(text) <= limits.maxBytes) return text;
    if (max > 200) {
      max = Math.max(200, Math.floor(max / 2));
      continue;
    }
    // still too large with short texts: leave out LLM calls from the middle, then log lines
    if (shaped.llm.length > 2) {
      const dropped = Math.ceil((shaped.llm.length - 2) / 2);
      const mid = Math.floor(shaped.llm.length / 2) - Math.floor(dropped / 2);
      const gap: TranscriptLlmCall = { swarm: "", startedAtMs: 0, endedAtMs: null, status: null, messages: [], reply: `…[${dropped} LLM calls left out to fit the size cap]…` };
      const llm = [...shaped.llm.slice(0, mid), gap, ...shaped.llm.slice(mid + dropped)];
      return capTranscript({ ...record, llm, truncated: true }, { ...limits, maxTextChars: max });
    }
    if (shaped.logs.length > 0) return capTranscript({ ...record, logs: shaped.logs.slice(-Math.floor(shaped.logs.length / 2)), truncated: true }, { ...limits, maxTextChars: max });
    return text;
  }
}

/** Collects one episode attempt's record while it runs. */
export class TranscriptRecorder {
  readonly llm: TranscriptLlmCall[] = [];
  readonly logs: TranscriptLogLine[] = [];
  readonly sandbox: SandboxCallRecord[] = [];
  #dropped = false;
  readonly #secrets = new Set<string>();

  constructor(private readonly now: () => number) {}

  /** A value that must never appear in the record (the episode api keys); it is replaced at {@link finish}. */
  redact(secret: string): void {
    if (secret.length >= 4) this.#secrets.add(secret);
  }

  /**
   * Wraps one swarm episode's LLM fetch: each call's conversation and answer are recorded in its route's shape
   * (headers and URL are not).
   */
  watchLlm(swarm: string, inner: FetchLike): FetchLike {
    return watchLlm(swarm, inner, { now: this.now, record: (s, body, route) => this.record(s, body, route) });
  }

  /**
   * Opens the record of one LLM call of swarm `swarm` on `route` (`body`: its parsed request; the conversation in
   * the route's shape and the tools are kept, runtime/transcript-shapes); runtime/llm-watch fills it in as the call goes.
   */
  record(swarm: string, body: unknown, route: LlmRoute = "chat"): LlmCallRecord {
    const call: TranscriptLlmCall = { swarm, route, startedAtMs: this.now(), endedAtMs: null, status: null, ...requestOf(route, body), reply: null };
    if (this.llm.length < MAX_CALLS) this.llm.push(call);
    else this.#dropped = true;
    return {
      status: (status) => (call.status = status),
      // the reply in the route's own shape (runtime/transcript-shapes); the usage as the answer parser read it
      answered: (answer, endedAtMs, text) => {
        const shaped = replyOf(route, text);
        const usage = answer.usage !== undefined ? answer.usage : shaped.usage;
        Object.assign(call, { reply: shaped.reply, ...(usage !== undefined ? { usage } : {}), endedAtMs });
      },
      failed: (error) => (call.error = error),
    };
  }

  /** A logger that records each line and passes it on to `inner`. */
  logger(inner: RolloutLogger): RolloutLogger {
    const line = (level: TranscriptLogLine["level"]) => (msg: string, fields?: Record<string, unknown>) => {
      if (this.logs.length < MAX_LOG_LINES) this.logs.push({ atMs: this.now(), level, msg, ...(fields ? { fields } : {}) });
      else this.#dropped = true;
      inner[level](msg, fields);
    };
    return { debug: line("debug"), info: line("info"), warn: line("warn"), error: line("error") };
  }

  /** Records one sandbox call (the first {@link MAX_SANDBOX_CALLS}, and the destroy). */
  sandboxCall(call: SandboxCallRecord): void {
    if (this.sandbox.length < MAX_SANDBOX_CALLS || call.op === "destroy") this.sandbox.push(call);
    else this.#dropped = true;
  }

  /** The finished record (the held api keys replaced by `[redacted]`, any other `sk-ajet-…` by `sk-ajet-<redacted>`). */
  finish(base: Omit<EpisodeTranscript, "v" | "llm" | "logs" | "truncated" | "error" | "finishedAtMs"> & { error?: unknown }): EpisodeTranscript {
    const { error, ...rest } = base;
    const record: EpisodeTranscript = {
      v: 1, ...rest, finishedAtMs: this.now(), llm: this.llm, logs: this.logs, ...(this.sandbox.length ? { sandbox: this.sandbox } : {}), error: describeError(error), truncated: this.#dropped,
    };
    let text = JSON.stringify(record);
    for (const s of this.#secrets) text = text.split(s).join("[redacted]");
    return JSON.parse(text.replace(EPISODE_KEY, `${API_KEY_PREFIX}<redacted>`)) as EpisodeTranscript;
  }
}

function describeError(err: unknown): EpisodeTranscript["error"] {
  if (err === undefined || err === null) return null;
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `\ncaused by: ${err.cause.stack ?? err.cause.message}` : "";
    return { name: err.name, message: err.message, ...(err.stack ? { stack: err.stack + cause } : {}) };
  }
  return { name: "Error", message: String(err) };
}

/** Where finished records go (the Worker: R2). `save` may throw; the runtime logs and carries on. */
export interface TranscriptSink {
  save(record: EpisodeTranscript): Promise<void>;
}
