/**
 * @module scheduler/task-groups — task groups and batch windows: opening a window of `batchSize` groups mixed by
 * weight, all of DISTINCT tasks (scheduler/window-tasks: a repeated task is deferred to a later window), opening
 * eval groups on demand, dropping a group after `maxAttempts` and replacing it in the same window with a task not
 * yet in it (BC-32), and folding a finished group into its step (or eval task) row.
 */
import { allocateSlots, sourceCaps } from "./mixing.ts";
import type { TakenTask } from "./epochs.ts";
import { stepMarkOf } from "./engine-gate.ts";
import type { Draft } from "./draft.ts";
import { deferredCount, isSourceDone, takeDistinct, takeNext, taskIndicesOf, windowTaskSets } from "./window-tasks.ts";
import { episodeKeyOf, groupKeyOf, isTerminal, type EpisodeRow, type GroupResolution } from "./state.ts";

/** Creates the `numRepeat` queued rows of one group (same task, same window); returns its group key. */
function openGroup(d: Draft, sourceIndex: number, task: TakenTask, windowIndex: number | null): string {
  const source = d.run.config.sources[sourceIndex]?.name ?? "";
  const groupKey = groupKeyOf(source, task.epoch, task.taskIndex);
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
  const allocation = allocateSlots(d.run.credits, config.sources.map((s) => s.weight), config.batchSize, sourceCaps(config.batchSize, config.sources));
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
    groupsCompleted: 0, groupsDropped: 0, groupsAbandoned: 0, droppedGroupKeys: [], sourceGroups,
    taskIndices: taskIndicesOf(d.run, inWindow),
    episodesEnded: 0, rewardSum: 0, episodesOffStep: 0, openedAtMs: d.nowMs, firstDispatchAtMs: null,
    resolvedAtMs: null, closedAtMs: null,
  });
  d.run.windowsOpened++;
  d.log("info", "batch window opened", { windowIndex, globalStep: mark.globalStep, groups: opened, partial: opened < config.batchSize });
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

/** The live rows of a group, repeat order. */
function groupRows(d: Draft, groupKey: string): EpisodeRow[] {
  const rows: EpisodeRow[] = [];
  for (let r = 0; r < d.run.config.numRepeat; r++) {
    const row = d.episodes[episodeKeyOf(groupKey, r)];
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
      : "abandoned";
  const totalsKey = ({ completed: "groupsCompleted", dropped: "groupsDropped", abandoned: "groupsAbandoned" } as const)[resolution];
  d.run.totals[totalsKey]++;
  const first = rows[0];
  if (first && first.windowIndex !== null) {
    const step = d.steps[String(first.windowIndex)];
    if (step) {
      const next = { ...step, [totalsKey]: step[totalsKey] + 1 };
      if (resolution === "dropped") next.droppedGroupKeys = [...step.droppedGroupKeys, groupKey];
      if (next.groupsCompleted + next.groupsDropped + next.groupsAbandoned >= next.groupsOpened) next.resolvedAtMs = d.nowMs;
      d.putStep(next);
    }
  } else if (first) {
    d.putEvalTask({
      groupKey, source: first.source, taskIndex: first.taskIndex, epoch: first.epoch,
      rewards: rows.map((r) => (r.status === "ended" ? r.reward : null)), resolution, resolvedAtMs: d.nowMs,
    });
  }
  for (const row of rows) d.deleteEpisode(row.episodeKey);
}
