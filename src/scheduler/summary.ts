/**
 * @module scheduler/summary — the run's final summary (also available mid-run): per step (batch window) the episodes
 * ended, mean reward and wall time, plus totals, failures by cause and dropped groups. Pure function of the state.
 */
import type { FirstFailure } from "./failure-streak.ts";
import { stepOfBatchKey, type RunPhase, type RunTotals, type SchedulerState, type WindowRow, type StopReason } from "./state.ts";
import type { EpisodeType } from "../protocol/index.ts";

/** One training step (one batch window) in the summary. */
export interface WindowSummary {
  windowIndex: number;
  /**
   * the real global step of the window's rewards: the server batch most of its accepted episodes landed in
   * (scheduler/batches); the engine's step when the window opened if none landed (null if unknown)
   */
  globalStep: number | null;
  /** every global step the window's accepted episodes landed in, ascending (more than one: the window was split) */
  globalSteps: number[];
  /** the engine's `global_step` when the window opened */
  openedAtGlobalStep: number | null;
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
  /** groups added to close a server batch that held this window's rewards (top-up) */
  topUpGroups: number;
  /** groups opened again in this window after a wipe took their episodes */
  rerunGroups: number;
  /** accepted episodes of this window lost to a wipe (and re-run) */
  episodesWiped: number;
  /** over-provisioning: groups opened beyond the batch so it closes on its first complete groups */
  extraGroups: number;
  /** groups cut when the window's batch closed on other groups (their tasks re-run in a later window) */
  groupsCut: number;
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
  steps: WindowSummary[];
  /** the run counters (see RunTotals) with the window count and the mean reward in place of the reward sum */
  totals: Omit<Required<RunTotals>, "rewardSum"> & { windows: number; meanReward: number | null };
  /** failed attempts by cause */
  failuresByCause: Record<string, number>;
  claimFailuresByKind: Record<string, number>;
  /** every dropped group key (BC-32), in window order */
  droppedGroups: string[];
  /** the first failed attempt with an error detail (name, message, file:line), or null */
  firstFailure: FirstFailure | null;
  /**
   * accepted rewards in server batches that were not trained (null while the run is active and for eval runs: 0).
   * A run that stopped, or finished with `topUpLastBatch` false, says here how many rewards remain untrained.
   */
  untrainedRewards: number | null;
  /**
   * `trained`: every accepted reward is in a batch the server trained; `untrained`: `untrainedRewards` are not;
   * `active`: the run has not finished.
   */
  verdict: "trained" | "untrained" | "active";
}

const mean = (sum: number, n: number): number | null => (n > 0 ? sum / n : null);

/** One step row as a summary line. */
function stepSummary(step: WindowRow): WindowSummary {
  const landed = Object.entries(step.landed ?? {}).filter(([, n]) => n > 0);
  const steps = [...new Set(landed.map(([key]) => stepOfBatchKey(key)).filter((x): x is number => x !== null))].sort((a, b) => a - b);
  const most = landed.reduce<[string, number] | null>((best, e) => (best === null || e[1] > best[1] ? e : best), null);
  return {
    windowIndex: step.windowIndex,
    globalStep: most ? stepOfBatchKey(most[0]) : step.globalStep,
    globalSteps: steps,
    openedAtGlobalStep: step.globalStep,
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
    topUpGroups: step.topUpGroups ?? 0,
    rerunGroups: step.rerunGroups ?? 0,
    episodesWiped: step.episodesWiped ?? 0,
    extraGroups: step.extraGroups ?? 0,
    groupsCut: step.groupsCut ?? 0,
  };
}

/** The summary of the run as it stands (final once the phase is `finished`). */
export function runSummary(state: SchedulerState): RunSummary {
  const { run } = state;
  const steps = Object.values(state.steps).sort((a, b) => a.windowIndex - b.windowIndex).map(stepSummary);
  const evalDropped = Object.values(state.evalTasks).filter((t) => t.resolution === "dropped").map((t) => t.groupKey);
  const { rewardSum, ...stored } = run.totals;
  const counters = { episodesWiped: 0, groupsRerun: 0, groupsToppedUp: 0, endsUnresolved: 0, endsInferred: 0, endsUnknown: 0, groupsCut: 0, episodesCut: 0, ...stored };
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
    untrainedRewards: run.phase === "finished" ? (run.untrainedRewards ?? 0) : null,
    verdict: run.phase !== "finished" ? "active" : (run.untrainedRewards ?? 0) > 0 ? "untrained" : "trained",
  };
}
