/**
 * @module scheduler/state — the core's state as rows: ONE small run row, one row per live episode, one row per batch
 * window (step) and one per finished eval task. Persisting is "upsert the changed rows" (BC-53); loading is
 * {@link stateFromRows}. All instants are epoch milliseconds passed in by the caller.
 */
import type { FailureStreak, FirstFailure } from "./failure-streak.ts";
import type { EpisodeClaim, EpisodeOutcome } from "../port/index.ts";
import type { RunSpec } from "./run-spec.ts";
import { schedulerConfig, type SchedulerConfig } from "./config.ts";
import type { SampleCollectionMethod } from "../protocol/index.ts";
import type { SourceCursor, TakenTask } from "./epochs.ts";
import { initialEngineView, type EngineView } from "./engine-gate.ts";
import { seedRng } from "./rng.ts";
import { Map as ImmutableMap } from "immutable";
import type { BatchRow, LandedEpisode, LandedRow, StoredBatchRow } from "./batch-rows.ts";
import type { SyncVote, TopUpAsk } from "./server-asks.ts";

export * from "./batch-rows.ts";
export type { SyncVote, TopUpAsk } from "./server-asks.ts";

/** created → running → (draining | finishing) → finished. */
export type RunPhase = "created" | "running" | "draining" | "finishing" | "finished";
/**
 * Why a run stopped: a source used up its epochs, `maxSteps` windows were trained, `POST /runs/:id/stop`, the run
 * failed (`stopRequested` with `failed`, e.g. the swarm server batches differently from the run's windows), or the
 * function failed the same way on its first attempts (`functionError`).
 */
export type StopReason = "epochsDone" | "maxSteps" | "stopRequested" | "failed" | "functionError";

/**
 * Episode states (design note, "Episode states"). `claimed` and `running` are one state here: the consumer claims
 * and starts the function in one invocation and reports both at once. `ended` = reward delivered (train) or scored
 * (eval); `failed` = this repeat used all `maxAttempts`; `aborted` = an attempt failed while the run drained (not
 * retried); `dropped` = never (re)run because its group was dropped (BC-32) or the run stopped.
 */
export type EpisodeStatus = "queued" | "dispatched" | "running" | "reporting" | "ended" | "failed" | "aborted" | "dropped";

/** The live episode rows of a run by `episodeKey` (a persistent map: a write copies O(log n), never the table). */
export type EpisodeTable = ImmutableMap<string, EpisodeRow>;

/** An episode table of these rows (keyed by `episodeKey`). */
export function episodeTable(rows: Iterable<EpisodeRow> = []): EpisodeTable {
  return ImmutableMap<string, EpisodeRow>().withMutations((m) => {
    for (const r of rows) m.set(r.episodeKey, r);
  });
}

const IN_FLIGHT: ReadonlySet<EpisodeStatus> = new Set(["dispatched", "running", "reporting"]);
const TERMINAL: ReadonlySet<EpisodeStatus> = new Set(["ended", "failed", "aborted", "dropped"]);
/** True for dispatched, running and reporting: the states that hold one of the `maxParallel` slots. */
export const isInFlight = (s: EpisodeStatus): boolean => IN_FLIGHT.has(s);
/** True for ended, failed, aborted and dropped. */
export const isTerminal = (s: EpisodeStatus): boolean => TERMINAL.has(s);

/** One logical episode (one repeat of one task group); key `"{source}/{epoch}/{taskIndex}#{repeat}"`. */
export interface EpisodeRow {
  episodeKey: string;
  /** `"{source}/{epoch}/{taskIndex}"`: unique in the run (a task is served once per epoch) */
  groupKey: string;
  source: string;
  /** row index in the source dataset (the DO resolves the Task from it) */
  taskIndex: number;
  /** 0-based pass over the source */
  epoch: number;
  /** 0..numRepeat-1 */
  repeat: number;
  /** the batch window (train), null for eval */
  windowIndex: number | null;
  /** dispatch order: groups go out together, retries first */
  seq: number;
  /** 1-based try number; events carry it and are applied at most once per (episodeKey, attempt) */
  attempt: number;
  /** attempts that ran again because a wipe took their accepted end (not failures: they do not count to maxAttempts) */
  wipes?: number;
  /** how many queue messages were sent for this episode (all attempts); the latest message carries this number */
  dispatchId: number;
  status: EpisodeStatus;
  /** the group was dropped (BC-32): a failure of this repeat is not retried */
  groupDropped: boolean;
  /** claim or dispatch failures of this attempt in a row (back-off exponent; not attempts) */
  claimFailures: number;
  /** queued: not dispatched before this instant (claim back-off), else null */
  notBeforeMs: number | null;
  /** in flight: the lease deadline (BC-51), else null */
  deadlineAtMs: number | null;
  dispatchedAtMs: number | null;
  /**
   * the current dispatch's invocation reported its start (`episodeHeartbeat` stage `started`), epoch ms; null or
   * absent while it has not (its dispatch then has the short un-started lease, scheduler/heartbeats)
   */
  startedAtMs?: number | null;
  /** un-started dispatch expiries of this attempt in a row (each doubles the next un-started lease); absent = 0 */
  unstartedExpiries?: number;
  /** when the claim was reported, epoch ms (the run lease counts from it); null before the claim */
  claimedAtMs?: number | null;
  /** the last heartbeat of the invocation running this attempt, epoch ms; null when none came */
  heartbeatAtMs?: number | null;
  claims: EpisodeClaim[];
  /** the first swarm's `global_step` at claim time (attributes the episode to a step) */
  globalStep: number | null;
  /**
   * the first swarm's engine epoch (its restart count, see `EngineView.restarts`) when the claim was reported: with
   * `globalStep` it names the server batch an accepted end lands in (scheduler/batches). Null before the claim.
   */
  engineEpoch?: number | null;
  /**
   * each claim's server's engine epoch when the claim was reported, by the claim's swarm name (multi-swarm functions:
   * each claim's end lands in its own server's batch, scheduler/batches); absent in rows claimed before
   */
  engineEpochs?: Record<string, number> | null;
  outcome: EpisodeOutcome | null;
  /** the delivered (train) or scored (eval) reward of an ended episode */
  reward: number | null;
  /** cause of the last failed attempt */
  lastCause: string | null;
  /**
   * over-provisioning (scheduler/over-provision): the window's batch closed while this repeat was in flight, so it is
   * given back (`/abort_episode`), never ended; its group is re-run by a later window. Absent: not cut
   */
  cut?: boolean;
  /** reporting `end` past its lease: when the DO was last asked to resolve it from the outbox */
  resolveRequestedAtMs: number | null;
  /** reporting `end` whose outcome is unknown: what the core knows while it resolves it (scheduler/unknown-ends) */
  endUnknown?: EndUnknown | null;
  updatedAtMs: number;
}

/**
 * How a task group finished: all repeats ended, dropped after `maxAttempts` (BC-32), abandoned by a stop, or cut when
 * its window's batch closed on other groups (over-provisioning; its task is re-run by a later window).
 */
export type GroupResolution = "completed" | "dropped" | "abandoned" | "cut";

/** One batch window = one training step (train runs). */
export interface WindowRow {
  windowIndex: number;
  /** the first swarm's `global_step` when the window opened */
  globalStep: number | null;
  /** the first swarm's ROLLING edge count when the window opened (step fallback when global_step is null) */
  openedAtRollingEdges: number;
  /** the first swarm's restart count when the window opened (a restart wipes the server's batch) */
  openedAtRestarts: number;
  /** the data ran out while filling it: fewer than batchSize groups, so the server's batch cannot fill */
  partial: boolean;
  /** groups the mix assigned (batchSize unless partial) */
  plannedGroups: number;
  /** groups opened, replacements included */
  groupsOpened: number;
  replacementGroups: number;
  groupsCompleted: number;
  groupsDropped: number;
  groupsAbandoned: number;
  droppedGroupKeys: string[];
  /** source name → groups the mix assigned to it */
  sourceGroups: Record<string, number>;
  /** source name → task indices opened in this window (replacements and dropped groups included); all distinct */
  taskIndices: Record<string, number[]>;
  episodesEnded: number;
  rewardSum: number;
  /** ended episodes whose claim-time step differed from the window's step */
  episodesOffStep: number;
  /**
   * server batch key (`"{engineEpoch}:{globalStep}"`, scheduler/batches) → this window's accepted episodes that landed
   * in it (wiped ones removed): the real global steps of the window's rewards
   */
  landed?: Record<string, number>;
  /** groups added to fill a server batch that held this window's episodes but would not close (top-up) */
  topUpGroups?: number;
  /** groups opened again in this window because a server batch holding their episodes was wiped before training */
  rerunGroups?: number;
  /** over-provisioning: groups opened beyond `batchSize` so the batch closes on its first complete groups; absent: 0 */
  extraGroups?: number;
  /** groups cut when the window's batch closed on other groups (their tasks are deferred to a later window); absent: 0 */
  groupsCut?: number;
  /** the keys of the cut groups (a wipe of their batch does not re-run them: their tasks are deferred already) */
  cutGroupKeys?: string[];
  /** when the window's in-flight repeats were cut (its batch closed on other groups), epoch ms; absent: never */
  cutAtMs?: number | null;
  /** accepted episodes of this window whose server batch was wiped before training (re-run) */
  episodesWiped?: number;
  openedAtMs: number;
  firstDispatchAtMs: number | null;
  /** when every group of the window was resolved */
  resolvedAtMs: number | null;
  /** when the engine was first seen past this step (its next ROLLING at a higher step) */
  closedAtMs: number | null;
}

/** One finished eval task group: its rewards per repeat (null = not scored). */
export interface EvalTaskRow {
  groupKey: string;
  source: string;
  taskIndex: number;
  epoch: number;
  rewards: (number | null)[];
  resolution: GroupResolution;
  resolvedAtMs: number;
}

/** Run-wide counters (kept in the run row). */
export interface RunTotals {
  episodesEnded: number;
  rewardSum: number;
  groupsOpened: number;
  groupsCompleted: number;
  groupsDropped: number;
  groupsAbandoned: number;
  attemptsFailed: number;
  claimFailures: number;
  dispatches: number;
  reconciles: number;
  /** accepted episodes whose server batch was wiped before training (engine stop, restart or crash) */
  episodesWiped?: number;
  /** task groups opened again because a wipe took their episodes */
  groupsRerun?: number;
  /** task groups opened to fill a server batch that would not close otherwise */
  groupsToppedUp?: number;
  /** task groups cut when their window's batch closed on other groups (over-provisioning), re-run later */
  groupsCut?: number;
  /** repeats given back with `/abort_episode` when their window's batch closed (over-provisioning) */
  episodesCut?: number;
  /** ends whose outcome was unknown for a while (answer lost, resend failed or refused "not rolling") */
  endsUnresolved?: number;
  /** of those, counted accepted because their batch closed after a send that reached the server (scheduler/unknown-ends) */
  endsInferred?: number;
  /** ends left unknown: the server's record could not tell (neither counted nor run again) */
  endsUnknown?: number;
}

/** The one small run row. */
export interface RunRow {
  phase: RunPhase;
  stopReason: StopReason | null;
  config: SchedulerConfig;
  /** mulberry32 state (jitter) */
  rngState: number;
  /** one per source, aligned with `config.sources` */
  cursors: SourceCursor[];
  /**
   * train: per source (aligned with `config.sources`), tasks taken from the walk but not opened because their index
   * was already in the window; served first by later windows (scheduler/window-tasks). Oldest first; a few at most.
   */
  deferred: TakenTask[][];
  /** mixing credits carried between windows, aligned with `config.sources` */
  credits: number[];
  /** one per swarm, aligned with `config.swarms` */
  engines: EngineView[];
  /** train windows opened; the open (or last) one is `windowsOpened − 1` (see {@link currentStep}) */
  windowsOpened: number;
  /** train: a source used up its epochs (no new window); eval: every source did */
  dataExhausted: boolean;
  nextSeq: number;
  nextPollAtMs: number | null;
  startedAtMs: number | null;
  stopRequestedAtMs: number | null;
  finishedAtMs: number | null;
  totals: RunTotals;
  /**
   * a consumer of this run reported an invocation's start (`episodeHeartbeat`): from then on dispatches have the short
   * un-started lease and running episodes the heartbeat lease (a consumer without heartbeats keeps the long leases)
   */
  consumersHeartbeat?: boolean;
  /** failed attempts by cause (expired, no_llm_call, invalid_reward, lease_expired …) */
  failuresByCause: Record<string, number>;
  /** claim failures by kind (noEpisodes, syncing, postRolling, notReady, deadline, other, dispatch, undelivered); they sum to `totals.claimFailures` */
  claimFailuresByKind: Record<string, number>;
  /** the first failed attempt whose outcome carried an error detail (scheduler/failure-streak); absent in older rows */
  firstFailure?: FirstFailure | null;
  /** identical function errors in a row (scheduler/failure-streak); absent in older rows */
  failureStreak?: FailureStreak | null;
  /**
   * accepted rewards left in server batches that never trained when the run finished (a stop, or `topUpLastBatch`
   * false): 0 means every accepted reward was trained. Null until the run finished.
   */
  untrainedRewards?: number | null;
  /** the run's last top-up ask to its first server's object (scheduler/top-up-ask); absent in older rows */
  topUpAsk?: TopUpAsk | null;
  /** the unclaimed groups the run last told its first server's object (scheduler/top-up-ask); absent: none told */
  pendingTold?: number;
  /** the run's vote for the weight sync of its first server's batch (agree modes, scheduler/sync-vote); absent: none */
  syncVote?: SyncVote | null;
  /** weight-sync votes the server agreed, over the run (agree modes); absent: none */
  syncVotesAgreed?: number;
  /** the last server step whose WEIGHT_SYNCING the weight-sync hooks were called for; absent: none */
  weightSyncHookedStep?: number;
  /** the sample-collection method the first server's engine reports (its pool information): it rules over the job's (scheduler/collection-method); absent: not seen */
  serverMethod?: SampleCollectionMethod;
}

/**
 * The whole state. Records are keyed by `episodeKey` (a persistent map, scheduler/episode-index), `String(windowIndex)`,
 * `groupKey` and `batchKey`. Treat as immutable.
 */
export interface SchedulerState {
  run: RunRow;
  episodes: EpisodeTable;
  steps: Readonly<Record<string, WindowRow>>;
  evalTasks: Readonly<Record<string, EvalTaskRow>>;
  /** the server batches that hold (or held) this run's accepted train episodes (scheduler/batches) */
  batches: Readonly<Record<string, BatchRow>>;
}

/**
 * A new run in phase `created` (send `runStarted` to start it).
 * @param spec a validated {@link RunSpec}; @param taskCounts dataset name → task count
 * @throws RangeError from {@link schedulerConfig} when a task count is missing or 0, and its `WindowCapacityError`
 *   when a train source has fewer tasks than one window can take from it
 */
export function initialState(spec: RunSpec, taskCounts: Readonly<Record<string, number>>): SchedulerState {
  const config = schedulerConfig(spec, taskCounts);
  const run: RunRow = {
    phase: "created",
    stopReason: null,
    config,
    rngState: seedRng(config.seed),
    cursors: config.sources.map(() => ({ epoch: 0, position: 0 })),
    deferred: config.sources.map(() => []),
    credits: config.sources.map(() => 0),
    engines: config.swarms.map(initialEngineView),
    windowsOpened: 0,
    dataExhausted: false,
    nextSeq: 0,
    nextPollAtMs: null,
    startedAtMs: null,
    stopRequestedAtMs: null,
    finishedAtMs: null,
    totals: {
      episodesEnded: 0, rewardSum: 0, groupsOpened: 0, groupsCompleted: 0, groupsDropped: 0, groupsAbandoned: 0,
      attemptsFailed: 0, claimFailures: 0, dispatches: 0, reconciles: 0, episodesWiped: 0, groupsRerun: 0, groupsToppedUp: 0,
    },
    failuresByCause: {},
    claimFailuresByKind: {},
    firstFailure: null,
    failureStreak: null,
  };
  return { run, episodes: episodeTable(), steps: {}, evalTasks: {}, batches: {} };
}

/** Rebuilds the state from stored rows (the DO's load step). */
export function stateFromRows(rows: {
  run: RunRow;
  episodes: readonly EpisodeRow[];
  steps: readonly WindowRow[];
  evalTasks: readonly EvalTaskRow[];
  /** absent for state stored before batches were tracked */
  batches?: readonly StoredBatchRow[];
  /** the batches' landed episodes, one row each (absent or empty for rows that carry them inline) */
  landed?: readonly LandedRow[];
}): SchedulerState {
  const landed = new Map<string, LandedRow[]>();
  for (const l of rows.landed ?? []) landed.set(l.batchKey, [...(landed.get(l.batchKey) ?? []), l]);
  const batch = (r: StoredBatchRow): BatchRow => {
    const episodes = ImmutableMap<string, LandedEpisode>().withMutations((m) => {
      for (const [uuid, e] of Object.entries(r.episodes ?? {})) m.set(uuid, e);
      for (const l of landed.get(r.batchKey) ?? []) m.set(l.uuid, l.episode);
    });
    return { ...r, episodes };
  };
  return {
    run: rows.run,
    episodes: episodeTable(rows.episodes),
    steps: Object.fromEntries(rows.steps.map((r) => [String(r.windowIndex), r])),
    evalTasks: Object.fromEntries(rows.evalTasks.map((r) => [r.groupKey, r])),
    batches: Object.fromEntries((rows.batches ?? []).map((r) => [r.batchKey, batch(r)])),
  };
}

/** The step row of the open (or last) train window, `windowsOpened − 1`; undefined before the first window. */
export function currentStep(state: Pick<SchedulerState, "run" | "steps">): WindowRow | undefined {
  const { windowsOpened } = state.run;
  return windowsOpened > 0 ? state.steps[String(windowsOpened - 1)] : undefined;
}

/**
 * `"{source}/{epoch}/{taskIndex}"`, and `"…~{rerun}"` for a group opened again after a wipe took its episodes (a
 * fresh key, so no event of the first run's attempts can ever apply to the re-run).
 */
export function groupKeyOf(source: string, epoch: number, taskIndex: number, rerun = 0): string {
  return rerun > 0 ? `${source}/${epoch}/${taskIndex}~${rerun}` : `${source}/${epoch}/${taskIndex}`;
}

/** `"{groupKey}#{repeat}"`: the design note's `{taskId}#{repeat}` with the core's task reference in place of task_id. */
export function episodeKeyOf(groupKey: string, repeat: number): string {
  return `${groupKey}#${repeat}`;
}

/** What the core knows of an end whose outcome is unknown (on its row, `endUnknown`; scheduler/unknown-ends). */
export interface EndUnknown {
  /** when it was first reported unknown, epoch ms */
  sinceMs: number;
  /** the first send reached the server (a closed batch then means it was accepted) */
  reached: boolean;
  /** the last pool verdict at the claim's step: still claimed (`running`) or gone without completing (`absent`) */
  lastSeen?: "running" | "absent" | null;
  /** a settle (ended or lost) was asked of the DO and its report is awaited */
  settlingAtMs?: number | null;
}
