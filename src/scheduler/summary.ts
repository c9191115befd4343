/**
 * @module scheduler/summary — the run's final summary (also available mid-run): per step (batch window) the episodes
 * ended, mean reward and wall time, plus totals, failures by cause and dropped groups. Pure function of the state.
 */
import type { FirstFailure } from "./failure-streak.ts";
import type { RunPhase, RunTotals, SchedulerState, StepRow, StopReason } from "./state.ts";
import type { EpisodeType } from "../protocol/index.ts";

/** One training step (one batch window) in the summary. */
export interface StepSummary {
  windowIndex: number;
  /** the engine's `global_step` when the window opened (null if the engine had not reported one) */
  globalStep: number | null;
  episodesEnded: number;
  /** mean delivered reward, null when no episode ended */
  meanReward: number | null;
  /** from the window's first dispatch to the engine's next ROLLING at a higher step (ms), null if not seen */
  wallTimeMs: number | null;
  groupsOpened: number;
  groupsCompleted: number;
  groupsDropped: number;
  groupsAbandoned: number;
  replacementGroups: number;
  droppedGroupKeys: string[];
  /** source name → groups the mix assigned */
  sourceGroups: Record<string, number>;
  partial: boolean;
  episodesOffStep: number;
}

/** The summary of a run (the `finishRun` payload). */
export interface RunSummary {
  episodeType: EpisodeType;
  phase: RunPhase;
  stopReason: StopReason | null;
  startedAtMs: number | null;
  finishedAtMs: number | null;
  /** run wall time in ms (start to finish), null until both are known */
  wallTimeMs: number | null;
  steps: StepSummary[];
  /** the run counters (see RunTotals) with the window count and the mean reward in place of the reward sum */
  totals: Omit<RunTotals, "rewardSum"> & { windows: number; meanReward: number | null };
  /** failed attempts by cause */
  failuresByCause: Record<string, number>;
  claimFailuresByKind: Record<string, number>;
  /** every dropped group key (BC-32), in window order */
  droppedGroups: string[];
  /** the first failed attempt with an error detail (name, message, file:line), or null */
  firstFailure: FirstFailure | null;
}

const mean = (sum: number, n: number): number | null => (n > 0 ? sum / n : null);

/** One step row as a summary line. */
function stepSummary(step: StepRow): StepSummary {
  return {
    windowIndex: step.windowIndex,
    globalStep: step.globalStep,
    episodesEnded: step.episodesEnded,
    meanReward: mean(step.rewardSum, step.episodesEnded),
    wallTimeMs: step.firstDispatchAtMs !== null && step.closedAtMs !== null ? step.closedAtMs - step.firstDispatchAtMs : null,
    groupsOpened: step.groupsOpened,
    groupsCompleted: step.groupsCompleted,
    groupsDropped: step.groupsDropped,
    groupsAbandoned: step.groupsAbandoned,
    replacementGroups: step.replacementGroups,
    droppedGroupKeys: [...step.droppedGroupKeys],
    sourceGroups: { ...step.sourceGroups },
    partial: step.partial,
    episodesOffStep: step.episodesOffStep,
  };
}

/** The summary of the run as it stands (final once the phase is `finished`). */
export function runSummary(state: SchedulerState): RunSummary {
  const { run } = state;
  const steps = Object.values(state.steps).sort((a, b) => a.windowIndex - b.windowIndex).map(stepSummary);
  const evalDropped = Object.values(state.evalTasks).filter((t) => t.resolution === "dropped").map((t) => t.groupKey);
  const { rewardSum, ...counters } = run.totals;
  return {
    episodeType: run.config.episodeType,
    phase: run.phase,
    stopReason: run.stopReason,
    startedAtMs: run.startedAtMs,
    finishedAtMs: run.finishedAtMs,
    wallTimeMs: run.startedAtMs !== null && run.finishedAtMs !== null ? run.finishedAtMs - run.startedAtMs : null,
    steps,
    totals: { windows: run.windowsOpened, ...counters, meanReward: mean(rewardSum, counters.episodesEnded) },
    failuresByCause: { ...run.failuresByCause },
    claimFailuresByKind: { ...run.claimFailuresByKind },
    droppedGroups: [...steps.flatMap((s) => s.droppedGroupKeys), ...evalDropped],
    firstFailure: run.firstFailure ?? null,
  };
}
