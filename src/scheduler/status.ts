/**
 * @module scheduler/status — `runStatus(state)`: what `GET /runs/:id` shows (phase, engine per swarm, global step,
 * the open window, episodes in flight, per-step counts and mean reward, failures by cause, epoch/cursor progress).
 */
import type { EpisodeType, SampleCollectionMethod } from "../protocol/index.ts";
import { collectionMethod } from "./collection-method.ts";
import { isGateOpen } from "./engine-gate.ts";
import { nextWakeAtMs } from "./decide.ts";
import { currentStep, type EpisodeStatus, type RunPhase, type SchedulerState, type StopReason } from "./state.ts";
import { runSummary, type RunSummary } from "./summary.ts";
import { deferredCount, isSourceDone } from "./window-tasks.ts";
import { episodeIndex } from "./episode-index.ts";

/** Progress of one source through its epochs. */
export interface SourceProgress {
  name: string;
  weight: number;
  taskCount: number;
  /** 0-based current pass (equals `epochs` once exhausted) */
  epoch: number;
  /** next position in the current pass */
  position: number;
  exhausted: boolean;
  /** train: tasks taken from the walk but deferred to a later window (their index was already in the window) */
  deferred: number;
  /** tasks opened so far, over all passes */
  tasksServed: number;
  /** `epochs × taskCount` */
  tasksTotal: number;
}

/** The run status view. Counts are episodes unless named otherwise; instants are epoch ms. */
export interface RunStatus {
  phase: RunPhase;
  stopReason: StopReason | null;
  episodeType: EpisodeType;
  /** every swarm ROLLING: dispatch allowed (BC-25) */
  gateOpen: boolean;
  engines: { swarm: string; engineStatus: string; globalStep: number | null; seenAtMs: number | null }[];
  /** the first swarm's `global_step` (the run's steps) */
  globalStep: number | null;
  currentWindow: {
    windowIndex: number;
    globalStep: number | null;
    groupsOpened: number;
    groupsResolved: number;
    episodesEnded: number;
    meanReward: number | null;
    /** every group resolved, waiting for the engine to train it and move on */
    waitingForEngine: boolean;
  } | null;
  episodes: Record<EpisodeStatus, number> & { inFlight: number; maxParallel: number };
  steps: RunSummary["steps"];
  totals: RunSummary["totals"];
  failuresByCause: Record<string, number>;
  claimFailuresByKind: Record<string, number>;
  /** the first failed attempt with an error detail (name, message, file:line), or null */
  firstFailure: RunSummary["firstFailure"];
  sources: SourceProgress[];
  /** batch truth (train): what the server did with this run's accepted rewards (scheduler/batches) */
  batches: BatchTruth;
  nextWakeAtMs: number | null;
}

/** What the server did with a train run's accepted rewards, from status edges, steps and pool information. */
export interface BatchTruth {
  /** batches still collecting that hold our rewards: key, global step, our episodes, complete tasks the pool counts */
  open: { batchKey: string; server: string | null; globalStep: number | null; episodes: number; poolCompletedTasks: number | null; poolTaskTarget: number | null; otherClientsEpisodes: number }[];
  /** batches the server trained / wiped that held our rewards */
  trained: number;
  wiped: number;
  /** accepted rewards in trained batches, in open batches (untrained so far), and lost to wipes (re-run) */
  episodesTrained: number;
  episodesUntrained: number;
  episodesWiped: number;
  groupsRerun: number;
  groupsToppedUp: number;
  /**
   * false when the server's batches did not hold exactly this run's windows: other clients' episodes shared a batch,
   * or a window's rewards landed in more than one batch (a forced weight sync, a restart); `note` says which
   */
  exactMix: boolean;
  note: string | null;
  /** how the server closes its batches, as the run follows it: its server's method once seen, else its job's (spec §7.3); absent while indexing */
  sampleCollectionMethod?: SampleCollectionMethod;
  /** weight-sync votes the server agreed (the agree modes: one per batch holding this run's window); absent while indexing */
  syncVotesAgreed?: number;
}

/** The batch truth view of a state. */
function batchTruth(state: SchedulerState): BatchTruth {
  const all = Object.values(state.batches ?? {});
  const shared = all.filter((b) => b.foreignEpisodes > 0);
  const split = Object.values(state.steps).filter((s) => Object.values(s.landed ?? {}).filter((n) => n > 0).length > 1);
  const notes: string[] = [];
  if (shared.length > 0) notes.push(`other clients' episodes shared ${shared.length} server batch${shared.length === 1 ? "" : "es"} with this run: the per-batch source mix is not exact`);
  if (split.length > 0) notes.push(`${split.length} window${split.length === 1 ? "'s" : "s'"} rewards landed in more than one server batch (a weight sync forced by another client, a restart or a wipe)`);
  const open = all.filter((b) => b.state === "open");
  return {
    open: open.map((b) => ({
      batchKey: b.batchKey, server: b.server ?? state.run.config.swarms[0] ?? null, globalStep: b.globalStep, episodes: b.episodes.size, poolCompletedTasks: b.poolCompletedTasks,
      poolTaskTarget: b.poolTaskTarget, otherClientsEpisodes: b.foreignEpisodes,
    })),
    trained: all.filter((b) => b.state === "closed").length,
    wiped: all.filter((b) => b.state === "wiped").length,
    episodesTrained: all.filter((b) => b.state === "closed").reduce((n, b) => n + b.episodesLanded, 0),
    episodesUntrained: open.reduce((n, b) => n + b.episodes.size, 0),
    episodesWiped: state.run.totals.episodesWiped ?? 0,
    groupsRerun: state.run.totals.groupsRerun ?? 0,
    groupsToppedUp: state.run.totals.groupsToppedUp ?? 0,
    exactMix: notes.length === 0,
    note: notes.length > 0 ? notes.join("; ") : null,
    sampleCollectionMethod: collectionMethod(state),
    syncVotesAgreed: state.run.syncVotesAgreed ?? 0,
  };
}

/** The status view of a run (pure; safe to call on every request). */
export function runStatus(state: SchedulerState): RunStatus {
  const { run } = state;
  const { config } = run;
  const summary = runSummary(state);
  // maintained counts (scheduler/episode-index): the view never scans the episode rows
  const episodes = { ...episodeIndex(state.episodes).counts };
  const step = currentStep(state);
  const resolved = step ? step.groupsCompleted + step.groupsDropped + step.groupsAbandoned + (step.groupsCut ?? 0) : 0;
  return {
    phase: run.phase,
    stopReason: run.stopReason,
    episodeType: config.episodeType,
    gateOpen: isGateOpen(run.engines),
    engines: run.engines.map((e) => ({ swarm: e.swarm, engineStatus: e.engineStatus, globalStep: e.globalStep, seenAtMs: e.seenAtMs })),
    globalStep: run.engines[0]?.globalStep ?? null,
    currentWindow: step
      ? {
          windowIndex: step.windowIndex,
          globalStep: step.globalStep,
          groupsOpened: step.groupsOpened,
          groupsResolved: resolved,
          episodesEnded: step.episodesEnded,
          meanReward: step.episodesEnded > 0 ? step.rewardSum / step.episodesEnded : null,
          waitingForEngine: step.resolvedAtMs !== null && step.closedAtMs === null,
        }
      : null,
    episodes: { ...episodes, inFlight: episodes.dispatched + episodes.running + episodes.reporting, maxParallel: config.maxParallel },
    steps: summary.steps,
    totals: summary.totals,
    failuresByCause: summary.failuresByCause,
    claimFailuresByKind: summary.claimFailuresByKind,
    firstFailure: summary.firstFailure,
    sources: config.sources.map((s, i) => {
      const cursor = run.cursors[i] ?? { epoch: 0, position: 0 };
      const tasksTotal = config.epochs * s.taskCount;
      const deferred = deferredCount(run, i);
      return {
        name: s.name, weight: s.weight, taskCount: s.taskCount, epoch: cursor.epoch, position: cursor.position,
        exhausted: isSourceDone(run, i), deferred,
        tasksServed: Math.min(tasksTotal, cursor.epoch * s.taskCount + cursor.position) - deferred, tasksTotal,
      };
    }),
    batches: batchTruth(state),
    nextWakeAtMs: nextWakeAtMs(state),
  };
}
