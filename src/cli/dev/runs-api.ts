/**
 * @module cli/dev/runs-api — a small client of the Worker's runs API (issue 3 §4): `POST /runs`, `GET /runs`, `GET /runs/:id`,
 * `POST /runs/:id/stop`, `GET /runs/:id/report`, and `waitForRun`, which polls a run until it finishes, times out
 * or is aborted. Each answer is checked with the route's own response schema (edge/ground/api-contract.ts: the fields
 * clients rely on) and typed with the Worker's own types (edge/run/run-views); errors carry the API's issues.
 */
import { setTimeout as delay } from "node:timers/promises";
import type { z } from "zod";
import { AttemptsBody, DashboardBody, EpisodesBody, ErrorBody, type InFlightBody, MetricsBody, ReportBody, RunListBody, type RunListingBody, RunViewBody, TranscriptBody } from "../../edge/ground/api-contract.ts";
import type { RunMetrics } from "../../edge/run/board/metrics.ts";
import type { AttemptRow } from "../../edge/run/attempts.ts";
import type { EpisodeTranscript } from "../../runtime/transcript.ts";
import type { EndedEpisode } from "../../port/index.ts";
import type { RunRequestInput } from "../../edge/api/run-request.ts";
import type { LogLine, RunReport, RunView } from "../../edge/run/run-views.ts";
import { boundedFetch, DEFAULT_REQUEST_TIMEOUT_SECONDS } from "./bounded-fetch.ts";

// the API's own response types (the Worker builds them in edge/run/run-views): one declaration for both sides
export type { RunReport, RunView };

/** One problem the API reported: the dotted field path and a message that says the fix. */
export interface ApiIssue {
  path: string;
  message: string;
}

/** A log line of the run (the DO keeps the newest ones). */
export type RunLogLine = LogLine;

/** `GET /runs/:id/episodes`: one server episode whose reward the server accepted (the audit ledger). */
export type EndedEpisodeView = EndedEpisode;

/** The API answered with an error status. `issues` are the API's `{path, message}` list (may be empty). */
export class RunsApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly issues: ApiIssue[],
  ) {
    super(message);
    this.name = "RunsApiError";
  }
}

/** One row of `GET /runs` (newest first): the run's identity and its live headline fields. */
export type RunListingView = z.infer<typeof RunListingBody>;

/** One in-flight episode as the dashboard shows it (`GET /runs/:id/dashboard`); ages are seconds. */
export type InFlightEpisodeView = z.infer<typeof InFlightBody>;

/** The runs API of one Worker. Every method throws {@link RunsApiError} on an error status or a malformed body. */
export interface RunsApi {
  /** `POST /runs` → the created run's view (201). A 400 carries the spec's issues. */
  create(spec: RunRequestInput): Promise<RunView>;
  get(runId: string): Promise<RunView>;
  /** `POST /runs/:id/stop`: drain (no new dispatch; in-flight episodes finish or are aborted). */
  stop(runId: string): Promise<RunView>;
  report(runId: string): Promise<RunReport>;
  /** `GET /runs[?limit=N&cursor=C]`: one page of runs, newest first, and the cursor of the next page (null at the end). */
  list(page?: { limit?: number; cursor?: string }): Promise<{ runs: RunListingView[]; next: string | null }>;
  /** `GET /runs/:id/episodes[?step=N]`: the episodes whose reward the server accepted (up to 10,000 per call). */
  endedEpisodes(runId: string, globalStep?: number): Promise<EndedEpisodeView[]>;
  /** `GET /runs/:id/metrics`: per step, source and swarm server (edge/run/board/metrics). */
  metrics(runId: string): Promise<RunMetrics>;
  /** `GET /runs/:id/metrics?format=csv|jsonl`: the export as text (the CSV or JSON Lines body as sent). */
  metricsText(runId: string, format: "csv" | "jsonl"): Promise<string>;
  /** `GET /runs/:id/attempts?limit=10000`: the run's reported attempts, oldest first (at most 10,000). */
  attempts(runId: string): Promise<AttemptRow[]>;
  /** `GET /runs/:id/episodes/:key?attempt=N`: one attempt's stored transcript; null when there is none (404). */
  transcript(runId: string, episodeKey: string, attempt: number): Promise<EpisodeTranscript | null>;
  /** The in-flight episodes, oldest dispatch first, from `GET /runs/:id/dashboard` (LLM activity from the server's pool information). */
  inFlight(runId: string): Promise<InFlightEpisodeView[]>;
}

/** Options of {@link runsApi}. */
export interface RunsApiOptions {
  /** the API token sent as `Authorization: Bearer <token>`; default the `AJET_API_TOKEN` environment variable */
  token?: string;
}

/**
 * A client of the runs API at `workerUrl`. Every request carries the token (the API refuses requests without it).
 * @param fetchFn injectable for tests and for a command's own timeout and abort signal (`boundedFetch`); default
 *   the global fetch bounded by {@link DEFAULT_REQUEST_TIMEOUT_SECONDS}
 */
export function runsApi(workerUrl: string, fetchFn: typeof fetch = boundedFetch(DEFAULT_REQUEST_TIMEOUT_SECONDS * 1000), options: RunsApiOptions = {}): RunsApi {
  const token = options.token ?? process.env["AJET_API_TOKEN"];
  const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const call = async <T>(method: "GET" | "POST", path: string, shape: z.ZodType, body?: unknown): Promise<T> => {
    const res = await fetchFn(new URL(path, `${workerUrl}/`), {
      method,
      headers: { ...auth, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new RunsApiError(res.status, `${method} /${path}: HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`, []);
    }
    if (!res.ok) {
      const err = ErrorBody.safeParse(json);
      const message = err.success ? err.data.error.message : text.slice(0, 200);
      throw new RunsApiError(res.status, `${method} /${path}: HTTP ${res.status}: ${message}`, err.success ? err.data.error.issues : []);
    }
    const parsed = shape.safeParse(json);
    if (!parsed.success) {
      const where = parsed.error.issues.slice(0, 3).map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
      throw new RunsApiError(res.status, `${method} /${path}: unexpected response (${where})`, []);
    }
    return json as T;
  };
  const id = (runId: string) => encodeURIComponent(runId);
  return {
    create: (spec) => call("POST", "runs", RunViewBody, spec),
    list: async (page = {}) => {
      const query = new URLSearchParams();
      if (page.limit !== undefined) query.set("limit", String(page.limit));
      if (page.cursor !== undefined) query.set("cursor", page.cursor);
      const q = query.size ? `?${query}` : "";
      const body = await call<{ runs: RunListingView[]; next?: string | null }>("GET", `runs${q}`, RunListBody);
      return { runs: body.runs, next: body.next ?? null };
    },
    get: (runId) => call("GET", `runs/${id(runId)}`, RunViewBody),
    stop: (runId) => call("POST", `runs/${id(runId)}/stop`, RunViewBody, {}),
    report: (runId) => call("GET", `runs/${id(runId)}/report`, ReportBody),
    endedEpisodes: async (runId, globalStep) => {
      const query = globalStep === undefined ? "?limit=10000" : `?step=${globalStep}&limit=10000`;
      return (await call<{ episodes: EndedEpisodeView[] }>("GET", `runs/${id(runId)}/episodes${query}`, EpisodesBody)).episodes;
    },
    metrics: (runId) => call("GET", `runs/${id(runId)}/metrics`, MetricsBody),
    metricsText: async (runId, format) => {
      const path = `runs/${id(runId)}/metrics?format=${format}`;
      const res = await fetchFn(new URL(path, `${workerUrl}/`), { headers: auth });
      const text = await res.text();
      if (res.ok) return text;
      let message = text.slice(0, 200);
      try {
        const err = ErrorBody.safeParse(JSON.parse(text));
        if (err.success) message = err.data.error.message;
      } catch {
        // not JSON: the text as sent
      }
      throw new RunsApiError(res.status, `GET /${path}: HTTP ${res.status}: ${message}`, []);
    },
    attempts: async (runId) => (await call<{ attempts: AttemptRow[] }>("GET", `runs/${id(runId)}/attempts?limit=10000`, AttemptsBody)).attempts,
    transcript: async (runId, episodeKey, attempt) => {
      try {
        return await call<EpisodeTranscript>("GET", `runs/${id(runId)}/episodes/${encodeURIComponent(episodeKey)}?attempt=${attempt}`, TranscriptBody);
      } catch (err) {
        if (err instanceof RunsApiError && err.status === 404) return null;
        throw err;
      }
    },
    inFlight: async (runId) => (await call<{ inFlight: InFlightEpisodeView[] }>("GET", `runs/${id(runId)}/dashboard`, DashboardBody)).inFlight,
  };
}

/** How {@link waitForRun} ended: `finished` (phase finished), `timeout`, or `aborted` (the signal fired). */
export type WaitOutcome = "finished" | "timeout" | "aborted";

/** Options of {@link waitForRun}. Durations are milliseconds. */
export interface WaitForRunOptions {
  timeoutMs: number;
  /** pause between polls (default 400) */
  pollMs?: number;
  /** called with every status seen */
  onStatus?: (status: RunView) => void;
  signal?: AbortSignal;
  /** polls in a row that may fail (network error) before waiting gives up (default 5) */
  maxConsecutiveErrors?: number;
  /** clock, epoch ms (default Date.now) */
  now?: () => number;
  /** pause (default setTimeout); must resolve early when the signal fires */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * Polls `GET /runs/:id` until the phase is `finished`, the deadline passes, or the signal fires.
 * @returns the outcome and the last status seen (null if none was)
 * @throws RunsApiError for an error status (e.g. 404); the last network error after `maxConsecutiveErrors` failures
 */
export async function waitForRun(api: RunsApi, runId: string, options: WaitForRunOptions): Promise<{ outcome: WaitOutcome; status: RunView | null }> {
  const now = options.now ?? Date.now;
  // the default pause ends early (resolves, does not throw) when the signal fires
  const sleep = options.sleep ?? ((ms: number, signal?: AbortSignal) => delay(ms, undefined, { signal }).catch(() => {}));
  const deadline = now() + options.timeoutMs;
  let status: RunView | null = null;
  let errors = 0;
  for (;;) {
    if (options.signal?.aborted) return { outcome: "aborted", status };
    try {
      status = await api.get(runId);
      errors = 0;
      options.onStatus?.(status);
      if (status.phase === "finished") return { outcome: "finished", status };
    } catch (err) {
      if (err instanceof RunsApiError || ++errors >= (options.maxConsecutiveErrors ?? 5)) throw err;
    }
    if (now() >= deadline) return { outcome: "timeout", status };
    await sleep(Math.min(options.pollMs ?? 400, Math.max(0, deadline - now())), options.signal);
  }
}
