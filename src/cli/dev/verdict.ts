/**
 * @module cli/dev/verdict — whether a dev run that reached phase `finished` did what was asked: a train run must
 * stop on `maxSteps` with every step ending episodes; an eval run must stop on `epochsDone` with episodes scored.
 * A run where every episode failed (e.g. a function that refuses the dataset's tasks) otherwise looked like a
 * success (exit 0). Pure: summary in, one-line reason out.
 */
import { AbortCause } from "../../port/index.ts";
import type { RunSummary } from "../../scheduler/index.ts";
import { formatCauses } from "./render.ts";

/** What the verdict reads: the run report's summary, or the last status view (same fields). */
export type VerdictInput = Pick<RunSummary, "episodeType" | "stopReason" | "steps" | "failuresByCause"> & {
  totals: Pick<RunSummary["totals"], "episodesEnded" | "attemptsFailed">;
  /** the first failure with its error detail (absent from older servers' views) */
  firstFailure?: RunSummary["firstFailure"];
  /** accepted rewards left in server batches that never trained (absent in a status view: unknown) */
  untrainedRewards?: number | null;
};

/** What to check for the most frequent failure cause. */
function advice(failuresByCause: Readonly<Record<string, number>>): string {
  const top = Object.entries(failuresByCause).sort((a, b) => b[1] - a[1])[0]?.[0];
  if (top === AbortCause.invalidTask) return "the function refused the tasks as invalid: check that --function fits the dataset (--kind)";
  if (top === undefined) return "see the warnings above";
  return "see the [run warn] / [worker warn] lines above";
}

function nothingEnded(run: VerdictInput, what: string): string {
  const failed = run.totals.attemptsFailed;
  const causes = formatCauses(run.failuresByCause);
  const why = failed ? `all ${failed} attempts failed${causes ? ` (${causes})` : ""}` : "no attempt ran";
  return `${what}: ${why}; ${advice(run.failuresByCause)}`;
}

/**
 * Why a finished run failed, or null when it did what was asked.
 * @param plan `steps`: the training steps asked for (null for eval); `episodesPerStep`: batch size × num_repeat
 * @returns one line naming what went wrong and what to check, e.g. `no episode ended: all 192 attempts failed
 *   (invalid_task 192); the function refused the tasks as invalid: check that --function fits the dataset (--kind)`
 */
export function runFailure(run: VerdictInput, plan: { steps: number | null; episodesPerStep: number }): string | null {
  if (run.stopReason === "functionError") {
    const first = run.firstFailure;
    return `the run stopped early: the function failed the same way on its first attempts (a bug, not the model)${first ? `: ${first.detail}` : ""}; fix the function and run again`;
  }
  if (run.episodeType === "eval") {
    if (run.totals.episodesEnded === 0) return nothingEnded(run, "no episode was scored");
    if (run.stopReason !== "epochsDone") return `the eval run stopped (${run.stopReason ?? "no stop reason"}) before every task was scored`;
    return null;
  }
  if (run.totals.episodesEnded === 0) return nothingEnded(run, "no episode ended");
  const empty = run.steps.find((s) => s.episodesEnded === 0);
  if (empty) {
    const causes = formatCauses(run.failuresByCause);
    return `step ${empty.windowIndex + 1} ended no episode (of ${plan.episodesPerStep})${causes ? `; failed attempts: ${causes}` : ""}; ${advice(run.failuresByCause)}`;
  }
  const untrained = run.untrainedRewards ?? 0;
  if (untrained > 0) {
    return `${untrained} accepted reward${untrained === 1 ? "" : "s"} sit in a server batch that was never trained (the run stopped, or topUpLastBatch was false); the batch closes only with more task groups`;
  }
  // a train run stopped on request keeps what it trained: not a failure (its untrained rewards are, above)
  if (run.stopReason === "maxSteps" || run.stopReason === "stopRequested") return null;
  const asked = plan.steps ?? run.steps.length;
  if (run.stopReason === "epochsDone") {
    const last = run.steps.at(-1);
    const partial = last && (last.partial || last.episodesEnded < plan.episodesPerStep) ? `; step ${last.windowIndex + 1} got ${last.episodesEnded} of ${plan.episodesPerStep} episodes` : "";
    return `the tasks ran out after ${run.steps.length} of ${asked} training steps${partial}: give more tasks (--limit, a bigger --dataset) or fewer --steps`;
  }
  return `the run stopped (${run.stopReason ?? "no stop reason"}) after ${run.steps.length} of ${asked} training steps`;
}
