/**
 * @module scheduler/window-tasks — the distinct-task rule of a batch window (train): a window never holds two task
 * groups of the same (source, taskIndex). Task ids are `<source>:<split>:<row>`, the same in every epoch (BC-30), and
 * the swarm server merges two groups of one task id into one group of 2 × numRepeat episodes, so a window with a
 * repeated task would yield batchSize − 1 distinct tasks and its batch would never close (spec §7.3,
 * `rollout_until_finish_enough_tasks`).
 *
 * The rule: a source serves its **deferred** tasks first (oldest first), then its seeded walk (`takeTask`); a task
 * whose index is already in the window is not opened but appended to the source's deferred list (a few rows in the
 * run row), to be served first by a later window. Nothing is skipped or served twice, so every task is still served
 * exactly `epochs` times, in the seeded order except for the deferred ones, which move back by one window.
 */
import { isExhausted, takeTask, type TakenTask } from "./epochs.ts";
import type { RunRow } from "./state.ts";

/** The deferred list of source `i`, created when missing (a run row stored before the list existed). */
function deferredOf(run: RunRow, i: number): TakenTask[] {
  run.deferred ??= [];
  let list = run.deferred[i];
  if (!list) {
    list = [];
    run.deferred[i] = list;
  }
  return list;
}

/**
 * Takes the next task of source `i` that is not in `inWindow`: the oldest deferred task not in the window, else
 * the next task of the seeded walk, deferring (not dropping) every task of the walk whose index is in the window.
 * Mutates `run` (a draft): the cursor advances and the deferred list changes.
 * @param run the draft run row
 * @param i the source index (into `run.config.sources`)
 * @param inWindow the task indices of source `i` already opened in this window (dropped groups included)
 * @param epochs passes the walk may serve (default the run's `epochs`; a top-up may go past them)
 * @returns the task to open, or null when the source has none that is not already in the window (the walk is done,
 * or the window already holds every task of the source)
 */
export function takeDistinct(run: RunRow, i: number, inWindow: ReadonlySet<number>, epochs = run.config.epochs): TakenTask | null {
  const source = run.config.sources[i];
  if (!source || inWindow.size >= source.taskCount) return null;
  const deferred = deferredOf(run, i);
  const waiting = deferred.findIndex((t) => !inWindow.has(t.taskIndex));
  if (waiting >= 0) return deferred.splice(waiting, 1)[0] ?? null;
  // ends within two passes: a pass holds every index once, and one index is free (inWindow.size < taskCount)
  for (;;) {
    const task = takeNext(run, i, epochs);
    if (!task || !inWindow.has(task.taskIndex)) return task;
    deferred.push(task);
  }
}

/**
 * Takes the next task of source `i`'s seeded walk (no distinct rule, no deferred list: eval groups), advancing its
 * cursor in `run` (a draft). @returns null once the source has served all its epochs
 */
export function takeNext(run: RunRow, i: number, epochs = run.config.epochs): TakenTask | null {
  const source = run.config.sources[i];
  const cursor = run.cursors[i];
  if (!source || !cursor) return null;
  const taken = takeTask(cursor, source.taskCount, epochs, run.config.seed, source.name);
  if (!taken) return null;
  run.cursors[i] = taken.cursor;
  return taken.task;
}

/** Tasks of source `i` waiting in its deferred list. */
export function deferredCount(run: RunRow, i: number): number {
  return run.deferred?.[i]?.length ?? 0;
}

/** True once source `i` has served all its epochs: its walk is done and nothing is deferred. */
export function isSourceDone(run: RunRow, i: number): boolean {
  const cursor = run.cursors[i];
  return (!cursor || isExhausted(cursor, run.config.epochs)) && deferredCount(run, i) === 0;
}

/** The task indices of each source in a window, from its step row (`taskIndices`; empty for an old row). */
export function windowTaskSets(run: RunRow, taskIndices: Readonly<Record<string, readonly number[]>> | undefined): Set<number>[] {
  return run.config.sources.map((s) => new Set(taskIndices?.[s.name] ?? []));
}

/** The inverse of {@link windowTaskSets}: source name → task indices, for sources with at least one group. */
export function taskIndicesOf(run: RunRow, sets: readonly Set<number>[]): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  run.config.sources.forEach((s, i) => {
    const set = sets[i];
    if (set && set.size > 0) out[s.name] = [...set];
  });
  return out;
}
