/**
 * @module scheduler/task-groups — task groups and batch windows: opening a window of `batchSize` groups mixed by
 * weight, all of DISTINCT tasks (scheduler/window-tasks: a repeated task is deferred to a later window), opening
 * eval groups on demand, dropping a group after `maxAttempts` and replacing it in the same window with a task not
 * yet in it (BC-32), and folding a finished group into its step (or eval task) row.
 */
import { AbortCause } from "../port/index.ts";
import { allocateSlots, sourceCaps } from "./mixing.ts";
import type { TakenTask } from "./epochs.ts";
import { stepMarkOf } from "./engine-gate.ts";
import type { Draft } from "./draft.ts";
import { deferredCount, isSourceDone, takeDistinct, takeNext, taskIndicesOf, windowTaskSets } from "./window-tasks.ts";
import { currentStep, episodeKeyOf, groupKeyOf, isTerminal, type BatchRow, type EpisodeRow, type GroupResolution, type LandedEpisode } from "./state.ts";
import { baseGroupKey, openBatches, rerunOf, stepBatchKeyOf, type BatchEffects } from "./batches.ts";
import { windowExtras } from "./over-provision.ts";
import { batchTaskIndices } from "./batch-needs.ts";

/** Creates the `numRepeat` queued rows of one group (same task, same window); returns its group key. */
function openGroup(d: Draft, sourceIndex: number, task: TakenTask, windowIndex: number | null, rerun = task.rerun ?? 0): string {
  const source = d.run.config.sources[sourceIndex]?.name ?? "";
  const groupKey = groupKeyOf(source, task.epoch, task.taskIndex, rerun);
  for (let repeat = 0; repeat < d.run.config.numRepeat; repeat++) {
    d.putEpisode({
      episodeKey: episodeKeyOf(groupKey, repeat), groupKey, source, taskIndex: task.taskIndex, epoch: task.epoch, repeat,
      windowIndex, seq: d.run.nextSeq++, attempt: 1, dispatchId: 0, status: "queued", groupDropped: false, claimFailures: 0,
      notBeforeMs: null, deadlineAtMs: null, dispatchedAtMs: null, claims: [], globalStep: null, outcome: null,
      reward: null, lastCause: null, resolveRequestedAtMs: null, updatedAtMs: d.nowMs,
    });
  }
  d.run.totals.groupsOpened++;
  return groupKey;
}

/** Train rule for sources of different sizes: the run's data is done once ANY source has served all its epochs. */
function markTrainExhaustion(d: Draft): void {
  if (d.run.config.sources.some((_, i) => isSourceDone(d.run, i))) d.run.dataExhausted = true;
}

/**
 * A window with fewer than batchSize groups can never close the server's batch, so no later window could open:
 * the run's data ends with it. Normally a dataset has run out (the other datasets' deferred tasks are cut off with
 * the rest of their walk); a partial window with every dataset still holding tasks is reported.
 */
function endDataAtPartialWindow(d: Draft, windowIndex: number, groups: number): void {
  d.run.dataExhausted = true;
  if (d.run.config.sources.some((_, i) => isSourceDone(d.run, i))) return;
  const deferredTasks = d.run.config.sources.reduce((n, _, i) => n + deferredCount(d.run, i), 0);
  d.log("warn", "partial window while every dataset still has tasks: the run's data ends here", { windowIndex, groups, deferredTasks });
}

/**
 * Opens the next batch window (train): `batchSize` groups, sources mixed by weight with the carried deficit and the
 * per-source caps (BC-31), groups in slot order so sources interleave, never two of one (source, taskIndex): a task
 * already in the window is deferred to the next one (scheduler/window-tasks). A source running dry mid-window leaves
 * a partial (final) window. The caller checks the gate and the stop conditions.
 * @returns the number of groups opened (0 when no data was left)
 */
export function openWindow(d: Draft): number {
  const { config } = d.run;
  // over-provisioning: extras on top of the batch, mixed by the same rule and under the same per-source caps
  const extras = windowExtras(d);
  const allocation = allocateSlots(d.run.credits, config.sources.map((s) => s.weight), config.batchSize + extras, sourceCaps(config.batchSize, config.sources));
  d.run.credits = allocation.credits;
  const windowIndex = d.run.windowsOpened;
  const sourceGroups: Record<string, number> = {};
  const inWindow = windowTaskSets(d.run, {});
  let opened = 0;
  for (const i of allocation.picks) {
    const taskSet = inWindow[i];
    const task = taskSet ? takeDistinct(d.run, i, taskSet) : null;
    if (!taskSet || !task) continue;
    taskSet.add(task.taskIndex);
    openGroup(d, i, task, windowIndex);
    const name = config.sources[i]?.name ?? "";
    sourceGroups[name] = (sourceGroups[name] ?? 0) + 1;
    opened++;
  }
  markTrainExhaustion(d);
  if (opened < config.batchSize) endDataAtPartialWindow(d, windowIndex, opened);
  if (opened === 0) return 0;
  const first = d.run.engines[0];
  const mark = first ? stepMarkOf(first) : { globalStep: null, rollingEdges: 0, restarts: 0 };
  d.putStep({
    windowIndex, globalStep: mark.globalStep, openedAtRollingEdges: mark.rollingEdges, openedAtRestarts: mark.restarts,
    partial: opened < config.batchSize, plannedGroups: opened, groupsOpened: opened, replacementGroups: 0,
    ...(extras > 0 ? { extraGroups: Math.max(0, opened - config.batchSize), groupsCut: 0, cutGroupKeys: [], cutAtMs: null } : {}),
    groupsCompleted: 0, groupsDropped: 0, groupsAbandoned: 0, droppedGroupKeys: [], sourceGroups,
    taskIndices: taskIndicesOf(d.run, inWindow),
    episodesEnded: 0, rewardSum: 0, episodesOffStep: 0, openedAtMs: d.nowMs, firstDispatchAtMs: null,
    resolvedAtMs: null, closedAtMs: null,
  });
  d.run.windowsOpened++;
  d.log("info", "batch window opened", { windowIndex, globalStep: mark.globalStep, groups: opened, extraGroups: Math.max(0, opened - config.batchSize), partial: opened < config.batchSize });
  return opened;
}

/**
 * Opens up to `count` eval groups, one source pick per group by weight; an exhausted source drops out of the mix
 * and the others continue, so an eval run covers every task of every source (`epochs` times).
 * @returns the number of groups opened
 */
export function openEvalGroups(d: Draft, count: number): number {
  let opened = 0;
  while (opened < count) {
    const { config } = d.run;
    const weights = config.sources.map((s, i) => (isSourceDone(d.run, i) ? 0 : s.weight));
    const allocation = allocateSlots(d.run.credits, weights, 1);
    d.run.credits = allocation.credits;
    const pick = allocation.picks[0];
    const task = pick === undefined ? null : takeNext(d.run, pick);
    if (pick === undefined || !task) {
      d.run.dataExhausted = true;
      break;
    }
    openGroup(d, pick, task, null);
    opened++;
  }
  if (d.run.config.sources.every((_, i) => isSourceDone(d.run, i))) d.run.dataExhausted = true;
  return opened;
}

/** The live rows of a group, repeat order (numRepeat lookups). */
export function groupRows(d: Draft, groupKey: string): EpisodeRow[] {
  const rows: EpisodeRow[] = [];
  for (let r = 0; r < d.run.config.numRepeat; r++) {
    const row = d.episodes.get(episodeKeyOf(groupKey, r));
    if (row) rows.push(row);
  }
  return rows;
}

/**
 * Drops a group whose repeat used all its attempts (BC-32): queued siblings become `dropped`, in-flight siblings
 * finish but are not retried, the drop is logged, and a replacement group opens in the same window (train, while
 * running) so the server's batch can still fill. The replacement is a task not yet in the window (the dropped one
 * counts: its ended episodes are on the server under its task id): from the same source, else — that source has
 * no such task left — from the next source that has one. With none, the window stays partial and ends the data.
 */
export function dropGroup(d: Draft, failed: EpisodeRow): void {
  for (const row of groupRows(d, failed.groupKey)) {
    d.patchEpisode(row.episodeKey, row.status === "queued" ? { status: "dropped", groupDropped: true, notBeforeMs: null } : { groupDropped: true });
  }
  d.log("warn", "task group dropped after maxAttempts tries of one repeat", {
    groupKey: failed.groupKey, episodeKey: failed.episodeKey, attempts: failed.attempt, cause: failed.lastCause,
  });
  const step = failed.windowIndex === null ? undefined : d.steps[String(failed.windowIndex)];
  if (!step || d.run.phase !== "running") return;
  const inWindow = windowTaskSets(d.run, step.taskIndices ?? liveTaskIndices(d, step.windowIndex));
  const first = Math.max(0, d.run.config.sources.findIndex((s) => s.name === failed.source));
  const order = d.run.config.sources.map((_, k) => (first + k) % d.run.config.sources.length);
  for (const i of order) {
    const taskSet = inWindow[i];
    const task = taskSet ? takeDistinct(d.run, i, taskSet) : null;
    if (!taskSet || !task) continue;
    taskSet.add(task.taskIndex);
    const groupKey = openGroup(d, i, task, step.windowIndex);
    markTrainExhaustion(d);
    d.patchStep(step.windowIndex, {
      groupsOpened: step.groupsOpened + 1, replacementGroups: step.replacementGroups + 1, taskIndices: taskIndicesOf(d.run, inWindow),
    });
    d.log("info", "replacement group opened in the same window", { groupKey, windowIndex: step.windowIndex });
    return;
  }
  d.patchStep(step.windowIndex, { partial: true });
  d.run.dataExhausted = true; // a partial window never closes the server's batch: no later window could open
  d.log("warn", "no task left that is not already in the window to replace a dropped group; the window stays partial and the run's data ends with it", {
    windowIndex: step.windowIndex,
  });
}

/** A window's task indices from its live rows (a step row stored before `taskIndices` existed). */
function liveTaskIndices(d: Draft, windowIndex: number): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const row of d.rows()) if (row.windowIndex === windowIndex) (out[row.source] ??= []).push(row.taskIndex);
  return out;
}

/** Counts one delivered (train) or scored (eval) episode into the run totals and its step. */
export function recordEnded(d: Draft, row: EpisodeRow, reward: number): void {
  d.run.totals.episodesEnded++;
  d.run.totals.rewardSum += reward;
  if (row.windowIndex === null) return;
  const step = d.steps[String(row.windowIndex)];
  if (!step) return;
  const offStep = row.globalStep !== null && step.globalStep !== null && row.globalStep !== step.globalStep;
  d.patchStep(step.windowIndex, {
    episodesEnded: step.episodesEnded + 1,
    rewardSum: step.rewardSum + reward,
    episodesOffStep: step.episodesOffStep + (offStep ? 1 : 0),
  });
}

/**
 * When every repeat of the group is terminal, folds it into its step row (train) or an eval task row, counts it,
 * and deletes its episode rows (the live set stays bounded by the window).
 */
export function resolveGroupIfDone(d: Draft, groupKey: string): void {
  const rows = groupRows(d, groupKey);
  if (rows.length === 0 || rows.some((r) => !isTerminal(r.status))) return;
  const resolution: GroupResolution = rows.some((r) => r.groupDropped || r.status === "failed")
    ? "dropped"
    : rows.every((r) => r.status === "ended")
      ? "completed"
      : rows.some((r) => r.cut === true) ? "cut" : "abandoned";
  const totalsKey = ({ completed: "groupsCompleted", dropped: "groupsDropped", abandoned: "groupsAbandoned", cut: "groupsCut" } as const)[resolution];
  d.run.totals[totalsKey] = (d.run.totals[totalsKey] ?? 0) + 1;
  const first = rows[0];
  if (first && resolution === "cut") deferCutTask(d, first);
  if (first && first.windowIndex !== null) {
    const step = d.steps[String(first.windowIndex)];
    if (step) {
      const next = { ...step, [totalsKey]: (step[totalsKey] ?? 0) + 1 };
      if (resolution === "dropped") next.droppedGroupKeys = [...step.droppedGroupKeys, groupKey];
      if (resolution === "cut") next.cutGroupKeys = [...(step.cutGroupKeys ?? []), groupKey];
      if (next.groupsCompleted + next.groupsDropped + next.groupsAbandoned + (next.groupsCut ?? 0) >= next.groupsOpened) next.resolvedAtMs = d.nowMs;
      d.putStep(next);
      refreshWindowClosure(d, next.windowIndex);
    }
  } else if (first) {
    d.putEvalTask({
      groupKey, source: first.source, taskIndex: first.taskIndex, epoch: first.epoch,
      rewards: rows.map((r) => (r.status === "ended" ? r.reward : null)), resolution, resolvedAtMs: d.nowMs,
    });
  }
  for (const row of rows) d.deleteEpisode(row.episodeKey);
}

/**
 * A cut group's task goes back to its source's deferred list under the next re-run generation (a fresh group key: no
 * event of the cut attempts can apply to it), so a later window serves it first and the task is still trained once
 * per epoch. A run whose data had ended only because that source was done has data again.
 */
function deferCutTask(d: Draft, row: EpisodeRow): void {
  const i = d.run.config.sources.findIndex((s) => s.name === row.source);
  if (i < 0) return;
  d.run.deferred ??= [];
  (d.run.deferred[i] ??= []).push({ taskIndex: row.taskIndex, epoch: row.epoch, rerun: rerunOf(row.groupKey) + 1 });
  const step = currentStep(d);
  if (d.run.dataExhausted && step?.partial !== true && !d.run.config.sources.some((_, k) => isSourceDone(d.run, k))) d.run.dataExhausted = false;
}

/**
 * Marks a resolved window closed (`closedAtMs`) once no open server batch holds any of its accepted episodes: every
 * reward it delivered was trained (or wiped and re-run elsewhere). A window that delivered nothing closes at once.
 */
export function refreshWindowClosure(d: Draft, windowIndex: number): void {
  const step = d.steps[String(windowIndex)];
  if (!step || step.resolvedAtMs === null || step.closedAtMs !== null) return;
  const held = openBatches(d).some((b) => b.episodes.some((e) => e.windowIndex === windowIndex));
  if (!held) d.patchStep(windowIndex, { closedAtMs: d.nowMs });
}

/** Takes a delivered episode back out of its window's and the run's counts (its server batch was wiped). */
function unrecordWiped(d: Draft, e: Pick<LandedEpisode, "windowIndex" | "reward">, batchKey: string | null): void {
  d.run.totals.episodesEnded--;
  d.run.totals.rewardSum -= e.reward;
  d.run.totals.episodesWiped = (d.run.totals.episodesWiped ?? 0) + 1;
  const step = d.steps[String(e.windowIndex)];
  if (!step) return;
  const landed = { ...(step.landed ?? {}) };
  if (batchKey !== null && landed[batchKey] !== undefined) {
    landed[batchKey]--;
    if (landed[batchKey] <= 0) delete landed[batchKey];
  }
  d.patchStep(step.windowIndex, {
    episodesEnded: step.episodesEnded - 1, rewardSum: step.rewardSum - e.reward, episodesWiped: (step.episodesWiped ?? 0) + 1, landed,
  });
}

/** A live repeat whose accepted end was wiped runs again: a new attempt, same task id, same window (not a failure). */
function requeueRepeat(d: Draft, row: EpisodeRow): void {
  if (d.run.phase === "draining") {
    d.patchEpisode(row.episodeKey, { status: "aborted", reward: null, deadlineAtMs: null, lastCause: AbortCause.wiped });
    return;
  }
  d.patchEpisode(row.episodeKey, {
    status: "queued", attempt: row.attempt + 1, wipes: (row.wipes ?? 0) + 1, claims: [], globalStep: null, engineEpoch: null, engineEpochs: null, outcome: null, reward: null,
    claimFailures: 0, notBeforeMs: null, deadlineAtMs: null, dispatchedAtMs: null, resolveRequestedAtMs: null, lastCause: AbortCause.wiped,
  });
}

/**
 * An `ended` report whose batch the core already knows was wiped (the server accepted it just before the wipe): the
 * repeat runs again instead of counting. Called by `endEpisode` before it marks the row ended.
 */
export function rerunWipedRepeat(d: Draft, row: EpisodeRow, reward: number): void {
  d.run.totals.episodesEnded++;
  d.run.totals.rewardSum += reward;
  const step = row.windowIndex === null ? undefined : d.steps[String(row.windowIndex)];
  if (step) d.patchStep(step.windowIndex, { episodesEnded: step.episodesEnded + 1, rewardSum: step.rewardSum + reward });
  unrecordWiped(d, { windowIndex: row.windowIndex ?? 0, reward }, null);
  requeueRepeat(d, row);
  resolveGroupIfDone(d, row.groupKey);
}

/**
 * Runs again the groups whose accepted episodes a wiped batch held (batch truth): a live group gets those repeats
 * queued again (new attempts); a resolved group is opened again, whole, under a fresh key (`…~N`) in the window the
 * run is filling now. Dropped groups are not re-run (a replacement already took their place). While the run drains
 * nothing is re-run: the wiped rewards are reported.
 */
function rerunWiped(d: Draft, batch: BatchRow, landed: LandedEpisode[]): void {
  for (const e of landed) unrecordWiped(d, e, stepBatchKeyOf(d, batch, e.episodeKey));
  if (d.run.phase === "draining" || d.run.phase === "finished") return;
  const byGroup = new Map<string, LandedEpisode[]>();
  for (const e of landed) byGroup.set(e.groupKey, [...(byGroup.get(e.groupKey) ?? []), e]);
  for (const [groupKey, episodes] of byGroup) {
    const live = groupRows(d, groupKey);
    if (live.length > 0) {
      if (live.some((r) => r.groupDropped || r.cut === true)) continue;
      for (const e of episodes) {
        const row = d.episodes.get(e.episodeKey);
        if (row && row.status === "ended") requeueRepeat(d, row);
      }
      continue;
    }
    const first = episodes[0]!;
    const origin = d.steps[String(first.windowIndex)];
    if (origin?.droppedGroupKeys.includes(groupKey) || origin?.cutGroupKeys?.includes(groupKey)) continue;
    const target = d.run.windowsOpened > 0 ? d.steps[String(d.run.windowsOpened - 1)] : undefined;
    const sourceIndex = d.run.config.sources.findIndex((s) => s.name === first.source);
    if (!target || sourceIndex < 0) continue;
    let rerun = first.rerun + 1;
    while (groupRows(d, groupKeyOf(first.source, first.epoch, first.taskIndex, rerun)).length > 0) rerun++;
    const key = openGroup(d, sourceIndex, { taskIndex: first.taskIndex, epoch: first.epoch }, target.windowIndex, rerun);
    const step = d.steps[String(target.windowIndex)]!;
    d.patchStep(target.windowIndex, {
      groupsOpened: step.groupsOpened + 1, rerunGroups: (step.rerunGroups ?? 0) + 1, resolvedAtMs: null, closedAtMs: null,
    });
    d.run.totals.groupsRerun = (d.run.totals.groupsRerun ?? 0) + 1;
    d.log("info", "group opened again: a wipe took its episodes", { groupKey: key, of: baseGroupKey(groupKey), windowIndex: target.windowIndex });
  }
  if (d.run.phase === "finishing") d.run.phase = "running";
}

/** What scheduler/batches calls back into task groups. */
export const BATCH_EFFECTS: BatchEffects = {
  rerun: rerunWiped,
  windowsTouched: (d, windows) => {
    for (const w of windows) refreshWindowClosure(d, w);
  },
};

/**
 * Tops up the batch the engine is collecting (it holds this run's episodes but lacks `count` complete tasks and the
 * run has nothing else in flight): `count` more groups in the current window, mixed by weight, each a task with no
 * episode in that batch (another group of a task id already there would only merge into it, spec §6.3). With the
 * data used up, tasks come from a further pass over the source: the rewards already delivered must be trained.
 * @returns the number of groups opened (fewer when no source has a task the batch lacks)
 */
export function topUpBatch(d: Draft, batch: BatchRow, count: number): number {
  const step = d.run.windowsOpened > 0 ? d.steps[String(d.run.windowsOpened - 1)] : undefined;
  if (!step || count <= 0) return 0;
  const { config } = d.run;
  const allocation = allocateSlots(d.run.credits, config.sources.map((s) => s.weight), count);
  d.run.credits = allocation.credits;
  const inBatch = windowTaskSets(d.run, batchTaskIndices(batch));
  const inWindow = windowTaskSets(d.run, step.taskIndices);
  const unlimited = Number.MAX_SAFE_INTEGER;
  let opened = 0;
  for (const pick of allocation.picks) {
    const order = config.sources.map((_, k) => (pick + k) % config.sources.length);
    // a task in neither the batch nor the window (the window's rule), else one the batch lacks; past the epochs if need be
    const take = (i: number): TakenTask | null => {
      const both = new Set([...(inBatch[i] ?? []), ...(inWindow[i] ?? [])]);
      return takeDistinct(d.run, i, both) ?? takeDistinct(d.run, i, both, unlimited) ?? takeDistinct(d.run, i, inBatch[i] ?? new Set(), unlimited);
    };
    for (const i of order) {
      const taken = take(i);
      if (!taken) continue;
      inBatch[i]?.add(taken.taskIndex);
      inWindow[i]?.add(taken.taskIndex);
      openGroup(d, i, taken, step.windowIndex);
      opened++;
      break;
    }
  }
  if (opened === 0) return 0;
  const now = d.steps[String(step.windowIndex)]!;
  d.patchStep(step.windowIndex, {
    groupsOpened: now.groupsOpened + opened, topUpGroups: (now.topUpGroups ?? 0) + opened, resolvedAtMs: null, closedAtMs: null,
    taskIndices: taskIndicesOf(d.run, inWindow),
  });
  d.run.totals.groupsToppedUp = (d.run.totals.groupsToppedUp ?? 0) + opened;
  d.log("info", "server batch topped up: it holds this run's episodes but lacks complete tasks to close", {
    batch: batch.batchKey, globalStep: batch.globalStep, groups: opened, windowIndex: step.windowIndex,
  });
  return opened;
}
