/**
 * @module scheduler/batch-needs — what the run's open server batches still need: the batch the first server's engine
 * collects now, the task groups it lacks before it closes, and which batches a finishing run waits for. Pure.
 */
import type { Draft } from "./draft.ts";
import { ENGINE } from "../protocol/index.ts";
import { openBatches, serverIndexOfBatch } from "./batches.ts";
import { completeTasksOf } from "./pool-tasks.ts";
import { groupsNeededByMethod } from "./collection-method.ts";
import type { BatchRow } from "./state.ts";

/**
 * The open batch the first server's engine is collecting right now (same epoch and step, status ROLLING), if it
 * holds episodes of this run: the one a top-up would fill (the run's steps and top-ups follow the first server). Undefined while the engine drains or trains, or when no open batch is current.
 */
export function currentOpenBatch(d: Draft): BatchRow | undefined {
  const view = d.run.engines[0]; // the run's steps and top-ups follow the first server
  if (!view || view.engineStatus !== ENGINE.ROLLING) return undefined;
  return openBatches(d, null).find((b) =>
    b.engineEpoch === view.restarts && (b.globalStep === null ? b.openedAtRollingEdges === view.rollingEdges : b.globalStep === view.globalStep));
}

/**
 * Task groups the batch still needs before the engine closes it (`rollout_until_finish_enough_tasks`, spec §7.3; the
 * other methods as scheduler/sync-vote counts them):
 * its task target less this run's complete tasks (counted from its own landings: fresher than the pool) and other
 * clients' complete tasks (from the last pool read). ≤ 0: the batch should close by itself.
 */
export function groupsNeeded(d: Draft, batch: BatchRow): number {
  const byMethod = groupsNeededByMethod(d, batch); // the other methods count otherwise (scheduler/sync-vote)
  if (byMethod !== null) return byMethod;
  const { batchSize, numRepeat } = d.run.config;
  const ours = completeTasksOf(batch.episodes.values(), numRepeat);
  const target = batch.poolTaskTarget ?? batchSize;
  return target - ours - (batch.poolForeignTasks ?? 0);
}

/**
 * Whether the finishing run should wait for the server batches that hold its rewards: yes while the first server
 * holds any (it is topped up, or trains), or another server's batch will close by itself (complete, or its engine
 * is draining or training it). An open batch of another server that lacks tasks while its engine collects it is not
 * waited for: topping it up would put the same groups into a new, partial batch on the first server (the servers'
 * boundaries no longer line up, e.g. after a wipe on one of them), so the run finishes and reports those rewards as
 * untrained instead.
 */
export function batchesToWaitFor(d: Draft): BatchRow[] {
  return openBatches(d).filter((b) => {
    const server = serverIndexOfBatch(d, b);
    if (server === 0) return true;
    const view = d.run.engines[server];
    const collecting = view?.engineStatus === ENGINE.ROLLING && view.restarts === b.engineEpoch && (b.globalStep === null || b.globalStep === view.globalStep);
    return !collecting || groupsNeeded(d, b) <= 0;
  });
}

/** Task indices per source that already have episodes in the batch (a top-up takes other tasks). */
export function batchTaskIndices(batch: BatchRow): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const e of batch.episodes.values()) (out[e.source] ??= []).push(e.taskIndex);
  return out;
}
