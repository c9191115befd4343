/**
 * @module edge/run/attempts — one row per reported episode attempt (ended, scored or failed): what the
 * metrics export and the dashboard's curves are built from. The Durable Object stores the row when a report is
 * applied (edge/run/storage `recordAttempt`), and for an attempt the core closes by itself (a lease that expired with no
 * report: {@link closedAttemptRow}); building it is here, so the DO stays thin.
 */
import type { EpisodeOutcome, EpisodeSignals, ResultReport } from "../../port/index.ts";
import type { ValidWorkflowOutput } from "../../protocol/index.ts";
import { reportedReward, type EpisodeRow } from "../../scheduler/index.ts";

/** One reported attempt. Times are epoch ms, durations ms. */
export interface AttemptRow {
  episodeKey: string;
  attempt: number;
  taskId: string;
  source: string;
  repeat: number;
  /** 0-based training step (window); null for eval episodes */
  windowIndex: number | null;
  globalStep: number | null;
  /** ended (train reward delivered), scored (eval) or failed */
  kind: "ended" | "scored" | "failed";
  /** the episode's reward (the first swarm's), ended and scored only */
  reward: number | null;
  /** per swarm: the reward the function returned for it */
  swarmRewards: Record<string, number>;
  /** per swarm: the function's `log_metrics` */
  logMetrics: Record<string, Record<string, number | number[]>>;
  /** failed only: the cause (function_error, no_llm_call, expired:…, lost:…) */
  cause: string | null;
  /** from dispatch to the report */
  durationMs: number | null;
  atMs: number;
  /** when the claim was reported (epoch ms), null when it never was; absent in rows stored before */
  claimedAtMs?: number | null;
  /** what the attempt measured (its end report's signals, runtime/episode-meter); null or absent when none came */
  signals?: EpisodeSignals | null;
  /** ended only: the server batch holding its reward was wiped before training (what wiped it, as in the ledger) */
  wipedBy?: string | null;
}

function failureCause(outcome: EpisodeOutcome | null, report: ResultReport): string {
  if (report.cause) return report.cause;
  if (outcome?.kind === "abort") return outcome.cause;
  return report.result;
}

/**
 * The row of an applied report.
 * @param row the episode's row before the report was applied (same attempt)
 * @param outputs the outbox's outputs per swarm, when the outcome was recorded with them
 */
export function attemptRow(
  row: EpisodeRow,
  report: ResultReport,
  taskId: string,
  outputs: Readonly<Record<string, ValidWorkflowOutput>> | undefined,
  atMs: number,
): AttemptRow {
  const scored = row.outcome?.kind === "score" && report.result !== "ended";
  const kind = report.result === "ended" ? "ended" : scored ? "scored" : "failed";
  const reward = kind === "ended" ? (reportedReward(row.outcome, report) ?? null) : kind === "scored" && row.outcome?.kind === "score" ? row.outcome.reward : null;
  const swarmRewards: Record<string, number> = {};
  const logMetrics: AttemptRow["logMetrics"] = {};
  if (kind !== "failed") {
    for (const [swarm, o] of Object.entries(outputs ?? {})) {
      swarmRewards[swarm] = o.reward;
      if (o.log_metrics && Object.keys(o.log_metrics).length) logMetrics[swarm] = o.log_metrics;
    }
    const first = row.claims[0]?.swarm;
    if (first !== undefined && swarmRewards[first] === undefined && reward !== null) swarmRewards[first] = reward;
  }
  return {
    episodeKey: row.episodeKey, attempt: row.attempt, taskId, source: row.source, repeat: row.repeat, windowIndex: row.windowIndex,
    globalStep: row.globalStep, kind, reward, swarmRewards, logMetrics,
    cause: kind === "failed" ? failureCause(row.outcome, report) : null,
    durationMs: row.dispatchedAtMs !== null ? atMs - row.dispatchedAtMs : null, atMs,
    claimedAtMs: row.claimedAtMs ?? null, signals: report.signals ?? null,
  };
}

/**
 * The row of an attempt the core closed on a lease expiry (no report came): failed, with the core's cause
 * (`lease_expired`, or the abort cause its consumer recorded).
 * @param row the episode's row before the core closed the attempt; `atMs` the instant it did (epoch ms)
 */
export function closedAttemptRow(row: EpisodeRow, cause: string, taskId: string, atMs: number): AttemptRow {
  return {
    episodeKey: row.episodeKey, attempt: row.attempt, taskId, source: row.source, repeat: row.repeat, windowIndex: row.windowIndex,
    globalStep: row.globalStep, kind: "failed", reward: null, swarmRewards: {}, logMetrics: {}, cause,
    durationMs: row.dispatchedAtMs !== null ? atMs - row.dispatchedAtMs : null, atMs,
  };
}
