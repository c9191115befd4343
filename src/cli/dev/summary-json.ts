/**
 * @module cli/dev/summary-json — the `--json` summary of a dev run: outcome, exit code, per step episodes / mean
 * reward / wall time, totals, failures, the servers used, and episodes left claimed on the emulator.
 */
import type { EvalReport } from "../../scheduler/index.ts";
import type { RunReport, RunView } from "./runs-api.ts";
import type { DevSession } from "./session.ts";

/** One training step in the JSON summary. `step` is 1-based; `wallTimeMs` in milliseconds. */
export interface DevStepJson {
  step: number;
  globalStep: number | null;
  episodes: number;
  meanReward: number | null;
  wallTimeMs: number | null;
}

/**
 * The `--json` document: exactly one is printed on stdout in every outcome. `error` is null when the run finished
 * as asked (exit code 0), else one line saying what went wrong; `runId` is null when no run was created (bad input,
 * a Worker that could not be started or reached).
 */
export interface DevSummaryJson {
  runId: string | null;
  /**
   * `failed`: the run finished but did not do what was asked (see `failure`); `error`: no run to follow (bad input,
   * the Worker could not be started or reached, the run was lost)
   */
  outcome: "finished" | "failed" | "timeout" | "interrupted" | "aborted" | "error";
  exitCode: number;
  /** null when the exit code is 0, else what went wrong in one line */
  error: string | null;
  /** why a finished run counts as failed (one line), else null */
  failure: string | null;
  stopReason: string | null;
  /** run wall time (first dispatch to finish), ms */
  wallTimeMs: number | null;
  steps: DevStepJson[];
  totals: { episodesEnded: number; meanReward: number | null; attemptsFailed: number; groupsDropped: number };
  failuresByCause: Record<string, number>;
  droppedGroups: string[];
  swarms: { name: string; url: string; emulator: boolean }[];
  /** episodes still claimed on the emulator at the end (null with a real server: not checked) */
  claimedLeft: number | null;
  eval: EvalReport | null;
}

/** Builds the JSON summary from the report (or, when it could not be fetched, the last status view). */
export function summaryJson(o: {
  runId: string;
  outcome: DevSummaryJson["outcome"];
  exitCode: number;
  /** what went wrong (null or absent when the exit code is 0) */
  error?: string | null;
  failure?: string | null;
  report: RunReport | null;
  last: RunView | null;
  session: Pick<DevSession, "swarms">;
  claimedLeft: number | null;
}): DevSummaryJson {
  const summary = o.report?.summary;
  const steps = summary?.steps ?? o.last?.steps ?? [];
  const totals = summary?.totals ?? o.last?.totals;
  return {
    runId: o.runId,
    outcome: o.outcome,
    exitCode: o.exitCode,
    error: o.error ?? null,
    failure: o.failure ?? null,
    stopReason: summary?.stopReason ?? o.last?.stopReason ?? null,
    wallTimeMs: summary?.wallTimeMs ?? null,
    steps: steps.map((s) => ({ step: s.windowIndex + 1, globalStep: s.globalStep, episodes: s.episodesEnded, meanReward: s.meanReward, wallTimeMs: s.wallTimeMs })),
    totals: {
      episodesEnded: totals?.episodesEnded ?? 0,
      meanReward: totals?.meanReward ?? null,
      attemptsFailed: totals?.attemptsFailed ?? 0,
      groupsDropped: totals?.groupsDropped ?? 0,
    },
    failuresByCause: summary?.failuresByCause ?? o.last?.failuresByCause ?? {},
    droppedGroups: summary?.droppedGroups ?? [],
    swarms: o.session.swarms.map((s) => ({ name: s.name, url: s.url, emulator: s.emulator !== null })),
    claimedLeft: o.claimedLeft,
    eval: o.report?.eval ?? null,
  };
}

/**
 * The `--json` document when there is no run summary: bad input, a Worker that could not be started or reached, a
 * run lost while following it (`runId` then names it).
 */
export function errorSummaryJson(o: { error: string; exitCode: number; runId?: string | null; outcome?: DevSummaryJson["outcome"]; swarms?: DevSummaryJson["swarms"] }): DevSummaryJson {
  return {
    runId: o.runId ?? null,
    outcome: o.outcome ?? "error",
    exitCode: o.exitCode,
    error: o.error,
    failure: null,
    stopReason: null,
    wallTimeMs: null,
    steps: [],
    totals: { episodesEnded: 0, meanReward: null, attemptsFailed: 0, groupsDropped: 0 },
    failuresByCause: {},
    droppedGroups: [],
    swarms: o.swarms ?? [],
    claimedLeft: null,
    eval: null,
  };
}
