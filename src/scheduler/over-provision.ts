/**
 * @module scheduler/over-provision — cutting the long tail (issue 23 §2, docs/performance.md "Long tails and
 * over-provisioning"). A train window with `overProvision` > 0 opens `batchSize + extra` task groups, so the server's
 * batch closes on its first `batchSize` complete groups instead of waiting for the slowest episode of a fixed set:
 *  - **how many extras**: {@link extraGroups}, a pure rule on the run's quotas and the server's worker budget;
 *  - **the cut**: once the window's batch is complete by the run's own count, or the engine drains or trains it
 *    (ROLLING_POST, WEIGHT_SYNCING), every repeat of the window still queued or dispatched is dropped and every one
 *    still running is told to stop ({@link cutClosingWindow}); a running repeat gives its claim back with
 *    `/abort_episode` and never ends (an end recorded after the cut is refused, so nothing lands late in the next
 *    batch);
 *  - **nothing lost**: a group not complete when it is cut goes back to its source's deferred list (a fresh group
 *    key), so a later window runs it again first and every task is still served once per epoch.
 * Pure: time is the draft's `nowMs`.
 */
import { AbortCause } from "../port/index.ts";
import { ENGINE } from "../protocol/index.ts";
import type { Draft } from "./draft.ts";
import { groupsNeeded } from "./batch-needs.ts";
import { EPSILON, throttleCap } from "./mixing.ts";
import { heartbeatTiming } from "./tuning.ts";
import { currentStep, type BatchRow, type EpisodeRow, type WindowRow } from "./state.ts";

/** What {@link extraGroups} decides from (counts of episodes unless named groups). */
export interface ExtraGroupsInput {
  /** groups a batch needs (`train_batch_size`) */
  batchSize: number;
  /** episodes per group */
  numRepeat: number;
  /** the run's `overProvision`: extra groups wanted per window as a share of `batchSize` (0 = none) */
  ratio: number;
  /** the claims' throttle ratio: at most `ceil(batchSize × throttleRatio)` unique tasks of this run per batch (spec §7.1) */
  throttleRatio: number;
  /** the server's worker budget (`max_env_worker`, spec §5.2) */
  maxEnvWorker: number;
  /** episodes this run holds in flight when the window opens */
  heldByRun: number;
  /** episodes other clients hold on the server at the last pool read (0 when unknown) */
  heldByOthers: number;
}

/**
 * The extra task groups one window opens beyond `batchSize`. The rules:
 *  1. none when `ratio` ≤ 0 (off);
 *  2. at most `ceil(batchSize × ratio)` (the ask);
 *  3. at most `ceil(batchSize × throttleRatio) − batchSize`: the claims' throttle policy would hold back any further
 *     unique task of this run in the batch;
 *  4. at most `floor(free / numRepeat)` with `free = maxEnvWorker − heldByRun − heldByOthers`: whole groups within the
 *     server's worker budget less what is held (the engine registers a slot again as each episode ends, so the
 *     extras run as the first groups' slots come free);
 *  5. never below 0.
 */
export function extraGroups(input: ExtraGroupsInput): number {
  // rule 1 needs no branch: a ratio ≤ 0 asks for ≤ 0 groups, and rule 5 keeps the answer at 0
  const wanted = Math.ceil(input.batchSize * input.ratio - EPSILON);
  const throttleRoom = throttleCap(input.batchSize, input.throttleRatio) - input.batchSize;
  const free = input.maxEnvWorker - input.heldByRun - input.heldByOthers;
  const budgetRoom = Math.floor(free / input.numRepeat);
  return Math.max(0, Math.min(wanted, throttleRoom, budgetRoom));
}

/**
 * The extras of the window about to open, from the run's state ({@link extraGroups}; called for train windows only):
 * other clients' hold is estimated from the last pool read of the batches the previous window landed in (the most
 * tasks another client was serving in one of them, × numRepeat); the run itself holds nothing then (a window opens
 * only after the last one resolved, with no episode row left).
 */
export function windowExtras(d: Draft): number {
  const { config } = d.run;
  const last = currentStep(d);
  const foreignTasks = Math.max(0, ...Object.keys(last?.landed ?? {}).map((k) => d.batches[k]?.poolForeignRunning ?? 0));
  return extraGroups({
    batchSize: config.batchSize,
    numRepeat: config.numRepeat,
    ratio: config.overProvision ?? 0,
    throttleRatio: config.throttleRatio,
    maxEnvWorker: config.maxEnvWorker ?? config.maxParallel,
    heldByRun: 0,
    heldByOthers: foreignTasks * config.numRepeat,
  });
}

/**
 * True when the server batch `b` (holding episodes of the window) is open and closing: the engine drains or trains
 * it, or it holds enough complete tasks by the run's own count and the pool's other clients' (`groupsNeeded` ≤ 0).
 */
export function isBatchClosing(d: Draft, b: BatchRow | undefined): boolean {
  if (b?.state !== "open") return false;
  if (b.lastStatus === ENGINE.ROLLING_POST || b.lastStatus === ENGINE.WEIGHT_SYNCING) return true;
  return groupsNeeded(d, b) <= 0;
}

/**
 * Cuts the current window once its batch is closing (see {@link isBatchClosing}), once per window and only for a
 * window with extras: its queued and dispatched repeats are dropped (a late claim of a dropped dispatch is refused
 * and given back), its running repeats are marked `cut` (the run object answers their held heartbeat with a stop, and
 * their lease becomes the heartbeat lease from now, so a consumer that does not answer has its claims aborted by the
 * run). Groups whose repeats are all resolved then resolve as `cut` (their tasks deferred).
 * @param resolveGroup resolves a group whose repeats are all terminal (scheduler/task-groups `resolveGroupIfDone`;
 *   a parameter: task-groups imports this module)
 * @returns the repeats cut (0 when the window was not cut)
 */
export function cutClosingWindow(d: Draft, resolveGroup: (d: Draft, groupKey: string) => void): number {
  // a window with extras is unresolved only while the run is running (a stop drains it: nothing is cut then)
  if (d.run.phase !== "running") return 0;
  const step = currentStep(d);
  // the resolved and already-cut checks only spare the scan of every row (nothing is left to cut there)
  if (!step || step.resolvedAtMs !== null || (step.extraGroups ?? 0) <= 0 || (step.cutAtMs ?? null) !== null) return 0;
  // a window's `landed` keys are its first server's batches (scheduler/batches)
  const closing = Object.keys(step.landed ?? {}).map((k) => d.batches[k]).find((b) => isBatchClosing(d, b));
  if (!closing) return 0;
  const cut = cutWindow(d, step, closing);
  for (const groupKey of cut.groups) resolveGroup(d, groupKey);
  return cut.repeats;
}

function cutWindow(d: Draft, step: WindowRow, batch: BatchRow): { repeats: number; groups: Set<string> } {
  const leaseMs = heartbeatTiming(d.run.config.timing).heartbeatLeaseSeconds * 1000;
  const groups = new Set<string>();
  let cut = 0;
  for (const row of d.rows()) {
    if (row.windowIndex !== step.windowIndex) continue;
    if (row.status === "queued" || row.status === "dispatched") {
      d.patchEpisode(row.episodeKey, { status: "dropped", cut: true, deadlineAtMs: null, notBeforeMs: null, lastCause: AbortCause.batchClosed });
    } else if (row.status === "running") {
      d.patchEpisode(row.episodeKey, { cut: true, deadlineAtMs: d.nowMs + leaseMs });
    } else continue;
    groups.add(row.groupKey);
    cut++;
  }
  d.patchStep(step.windowIndex, { cutAtMs: d.nowMs });
  d.run.totals.episodesCut = (d.run.totals.episodesCut ?? 0) + cut;
  d.log("info", "the window's batch is closing: its slow repeats are given back and their groups re-run later", {
    windowIndex: step.windowIndex, batch: batch.batchKey, repeats: cut, groups: groups.size,
  });
  return { repeats: cut, groups };
}

/**
 * A repeat that was cut is over without a failure: `dropped` (not retried, not an attempt failure). The caller
 * resolves its group. A cut repeat that ended (its end was recorded before the cut) is not passed here.
 */
export function closeCutRow(d: Draft, row: EpisodeRow): EpisodeRow {
  return d.patchEpisode(row.episodeKey, { status: "dropped", deadlineAtMs: null, resolveRequestedAtMs: null, endUnknown: null, lastCause: AbortCause.batchClosed });
}
