/**
 * @module edge/swarm-server/pool-share — the pool information a swarm server's object reads for runs that ask for it
 * (batch truth), shared: one read, then a fresh status poll that starts after it, answers every run that asks while it
 * is in flight or within {@link POOL_SHARE_MS} of its end. However many runs share the server, it gets at most one
 * pool read and one status poll for them per {@link POOL_SHARE_MS}. In memory (a reset object reads afresh).
 */
import type { CurrentBatchRolloutPoolInformation } from "../../protocol/index.ts";
import type { PoolSeen } from "../../scheduler/index.ts";

/** How long one pool read (with its status poll) answers the runs that ask for the pool information, ms. */
export const POOL_SHARE_MS = 1_000;

/** The pool information as the run's core reads it (scheduler/batches `PoolSeen`). */
export function poolSeenOf(info: CurrentBatchRolloutPoolInformation): PoolSeen {
  return {
    globalStep: info.global_step,
    completedTasks: info.completed_tasks,
    completedTaskTarget: info.completed_task_target,
    ...(info.sample_collection_method ? { method: info.sample_collection_method } : {}),
    episodeUuids: Object.values(info.completed_tasks_details).flat(),
    taskEpisodes: info.completed_tasks_details,
    taskRewards: info.completed_tasks_rewards,
    runningTaskIds: Object.fromEntries(Object.entries(info.running_episode_details ?? {}).map(([uuid, d]) => [uuid, d["optional_task_id"] ?? ""])),
  };
}

/** The shared read of one object. */
export class PoolShare {
  #last: { doneAtMs: number | null; result: Promise<PoolSeen | undefined> } | null = null;

  /**
   * The pool information read before a fresh status poll, or the one in flight or done within {@link POOL_SHARE_MS}
   * (never older than one a run got before: the newest completed read is the one shared). A failed read is not shared.
   * @param readPool the read (undefined when it failed) @param freshPoll a status poll that starts after the read
   * @param now the clock (epoch ms)
   */
  async read(readPool: () => Promise<PoolSeen | undefined>, freshPoll: () => Promise<void>, now: () => number): Promise<PoolSeen | undefined> {
    const last = this.#last;
    if (last && (last.doneAtMs === null || now() - last.doneAtMs < POOL_SHARE_MS)) return last.result;
    const read: { doneAtMs: number | null; result: Promise<PoolSeen | undefined> } = { doneAtMs: null, result: Promise.resolve(undefined) };
    read.result = (async () => {
      try {
        const pool = await readPool();
        if (pool !== undefined) await freshPoll();
        return pool;
      } finally {
        read.doneAtMs = now();
      }
    })();
    this.#last = read;
    const pool = await read.result;
    if (pool === undefined && this.#last === read) this.#last = null; // the next ask reads again
    return pool;
  }
}
