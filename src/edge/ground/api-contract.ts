/**
 * @module edge/ground/api-contract — the words of the Worker's HTTP API that both sides read: the path parameters and
 * query parameters each route accepts (the routes parse them with these schemas: edge/api/runs-routes.ts,
 * edge/dashboard/routes.ts). One name per number: `window` is the run's own 1-based training step (its batch window),
 * `step` only ever the server's `global_step`.
 */
import { z } from "zod";

/** A run id (`:id`): letters, digits and `_ . : -`, at most 128 characters. */
export const RunIdParam = z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/);

/** `GET /runs`: a page of runs, newest first; `cursor` is the previous page's `next`. */
export const RunsQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(20), cursor: z.string().optional() });

/**
 * `GET /runs/:id/attempts`: the reported attempts of the run's 1-based `window` (all when absent), oldest first.
 * `step` is refused here (it names the server's `global_step` everywhere, and did name the window before).
 */
export const AttemptsQuery = z
  .object({ window: z.coerce.number().int().min(1).optional(), limit: z.coerce.number().int().min(1).max(10_000).default(1000), step: z.unknown().optional() })
  .superRefine((q, ctx) => {
    if (q.step !== undefined) ctx.addIssue({ code: "custom", path: ["step"], message: "`step` is the server's global_step; the run's 1-based window of these attempts is `window` (e.g. ?window=2)" });
  });

/** `GET /runs/:id/metrics`: JSON (default) or CSV (`format=csv`, or `Accept: text/csv`). */
export const MetricsQuery = z.object({ format: z.enum(["json", "csv", "jsonl"]).optional() });

/** `GET /runs/:id/episodes/:key`: the transcript of one attempt (the last when `attempt` is absent). */
export const TranscriptQuery = z.object({ attempt: z.coerce.number().int().min(1).optional() });

/** `GET /runs/:id/episodes`: the ledger, optionally of one server `global_step` (`step`), paged. */
export const EpisodesQuery = z.object({
  step: z.coerce.number().int().min(0).optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(1000),
  offset: z.coerce.number().int().min(0).default(0),
});

// ---- what the routes answer: the fields clients rely on (unknown keys kept); the CLI checks each answer with them ----
// (test/unit/edge/api-contract.test.ts holds the Worker's own answer types against these shapes)

/** Every error: `{ error: { message, issues: [{ code, path, message }] } }` (edge/ground/errors). */
export const ErrorBody = z.object({
  error: z.object({ message: z.string(), issues: z.array(z.object({ code: z.string().optional(), path: z.string(), message: z.string() })).default([]) }),
});

/** One training step of the run (its 0-based `windowIndex`) in `steps[]` of a run view or summary. */
export const StepBody = z.looseObject({
  windowIndex: z.number(),
  globalStep: z.number().nullable(),
  episodesEnded: z.number(),
  meanReward: z.number().nullable(),
  wallTimeMs: z.number().nullable(),
});

/** A run's sandbox counts (sandbox/ledger `SandboxCounts`): alive, created, destroyed, failed, sandbox seconds. */
export const SandboxCountsBody = z.looseObject({ alive: z.number(), created: z.number(), destroyed: z.number(), failed: z.number(), seconds: z.number() });

/** `POST /runs` (201), `GET /runs/:id`, `POST /runs/:id/stop`: the run view (edge/run/run-views `RunView`). */
export const RunViewBody = z.looseObject({
  runId: z.string(),
  phase: z.enum(["indexing", "created", "running", "draining", "finishing", "finished"]),
  stopReason: z.string().nullable(),
  episodeType: z.enum(["train", "eval"]),
  engines: z.array(z.looseObject({ swarm: z.string(), engineStatus: z.string(), globalStep: z.number().nullable() })),
  globalStep: z.number().nullable(),
  currentWindow: z.looseObject({ windowIndex: z.number(), episodesEnded: z.number(), meanReward: z.number().nullable() }).nullable(),
  episodes: z.looseObject({ inFlight: z.number(), ended: z.number() }),
  steps: z.array(StepBody),
  totals: z.looseObject({ episodesEnded: z.number() }),
  failuresByCause: z.record(z.string(), z.number()),
  log: z.array(z.looseObject({ level: z.string(), message: z.string() })).default([]),
  sandboxes: z.looseObject({ total: SandboxCountsBody, byWindow: z.record(z.string(), SandboxCountsBody) }).optional(),
});

/** One row of `GET /runs` (edge/run/run-views `RunListing`). */
export const RunListingBody = z.looseObject({
  runId: z.string(),
  function: z.string(),
  phase: z.string(),
  stopReason: z.string().nullable(),
  engineStatus: z.string().nullable(),
  globalStep: z.number().nullable(),
  lastStepMeanReward: z.number().nullable(),
  createdAtMs: z.number(),
  finishedAtMs: z.number().nullable().optional(),
  waitingFor: z.string().nullable().optional(),
  failure: z.string().nullable().optional(),
});

/** `GET /runs`: a page of runs and the cursor of the next (null on the last). */
export const RunListBody = z.looseObject({ runs: z.array(RunListingBody), next: z.string().nullable().optional() });

/** `GET /runs/:id/episodes`: the ledger (port `EndedEpisode`). */
export const EpisodesBody = z.looseObject({
  episodes: z.array(z.looseObject({ episodeKey: z.string(), attempt: z.number(), swarm: z.string(), episodeUuid: z.string(), taskId: z.string(), globalStep: z.number().nullable(), reward: z.number() })),
});

/** `GET /runs/:id/report`: the summary and, for an eval run, the eval report (edge/run/run-views `RunReport`). */
export const ReportBody = z.looseObject({
  summary: z.looseObject({ steps: z.array(StepBody), totals: z.looseObject({ episodesEnded: z.number() }) }),
  eval: z.unknown().nullable(),
});

/** `GET /runs/:id/metrics`: per window (the run's 1-based `window`), source and swarm (edge/run/board/metrics `RunMetrics`). */
export const MetricsBody = z.looseObject({
  groups: z.array(z.looseObject({ window: z.number().nullable(), source: z.string(), swarm: z.string(), rewardMean: z.number().nullable() })),
});

/** One in-flight episode of `GET /runs/:id/dashboard` (edge/run/board/snapshot); ages are seconds. */
export const InFlightBody = z.looseObject({
  episodeKey: z.string(),
  taskId: z.string(),
  repeat: z.number(),
  attempt: z.number(),
  status: z.string(),
  swarms: z.array(z.string()),
  ageSeconds: z.number().nullable(),
  sinceLastLlmActivity: z.string().nullable(),
  llmCalls: z.number().nullable(),
});

/** `GET /runs/:id/dashboard`: the run page's data; clients read its in-flight episodes. */
export const DashboardBody = z.looseObject({ inFlight: z.array(InFlightBody) });

/** `GET /runs/:id/attempts`: the reported attempts (edge/run/attempts `AttemptRow`), as far as the CLI reads them. */
export const AttemptsBody = z.looseObject({ attempts: z.array(z.looseObject({ episodeKey: z.string(), attempt: z.number() })) });

/** `GET /runs/:id/episodes/:key`: one attempt's transcript (runtime/transcript `EpisodeTranscript`), as far as the CLI reads it. */
export const TranscriptBody = z.looseObject({ episodeKey: z.string(), llm: z.array(z.unknown()) });
