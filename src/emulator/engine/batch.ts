/**
 * @module emulator/engine/batch — the simulated engine's per-batch store (`completed_task_id_map`), its counters,
 * the five stop conditions and the pool snapshot it pushes (spec §6.3, §7.3, §7.4; `native_parallel_worker.py`).
 */
import type { ActiveSwarmClient, CurrentBatchRolloutPoolInformation } from "../../protocol/index.ts";
import { defaultPoolInformation } from "../server/state.ts";
import type { TrainConfig } from "../train-config.ts";

/** One kept episode of the current batch. */
export interface BatchEpisode {
  episodeUuid: string;
  reward: number;
}

/** Counters of the current batch (`count_tasks`). */
export interface BatchCounts {
  episodes: number;
  /** Tasks with ≥ num_repeat episodes. */
  tasks: number;
  /** Completed tasks whose rewards are not all equal (non-"dummy" groups). */
  nonDummyTasks: number;
}

/** The engine's store of kept episodes for the batch being collected, keyed by task id. */
export class CurrentBatch {
  private readonly byTask = new Map<string, BatchEpisode[]>();

  /** Stores a kept episode under the client-reported task id. */
  add(taskId: string, episode: BatchEpisode): void {
    const list = this.byTask.get(taskId);
    if (list) list.push(episode);
    else this.byTask.set(taskId, [episode]);
  }

  /** Empties the store (batch closed, or the cached-episodes valve). */
  clear(): void {
    this.byTask.clear();
  }

  /** All kept episodes (what the trainer turns into samples when the batch closes). */
  episodes(): BatchEpisode[] {
    return [...this.byTask.values()].flat();
  }

  /** `count_tasks`: episodes, tasks with ≥ numRepeat episodes, and non-dummy completed tasks. */
  counts(numRepeat: number): BatchCounts {
    let episodes = 0;
    let tasks = 0;
    let nonDummyTasks = 0;
    for (const list of this.byTask.values()) {
      episodes += list.length;
      if (list.length < numRepeat) continue;
      tasks++;
      if (list.some((e) => e.reward !== list[0]?.reward)) nonDummyTasks++;
    }
    return { episodes, tasks, nonDummyTasks };
  }

  /**
   * The stop condition of `config.sampleCollectionMethod` (spec §7.3). The task-based methods clear the store
   * when it exceeds `maxCachedEpisodes` (the engine's memory safety valve).
   * @param activeClients the list the engine got back from its last pool push (agree modes)
   */
  isClosed(config: TrainConfig, activeClients: readonly ActiveSwarmClient[]): boolean {
    const c = this.counts(config.numRepeat);
    switch (config.sampleCollectionMethod) {
      case "rollout_until_finish_enough_episodes":
        return c.episodes >= config.batchSize * config.numRepeat;
      case "rollout_until_any_client_agree_sync_weight":
        return activeClients.some((a) => a.allowed_sync_weight);
      case "rollout_until_all_clients_agree_sync_weight":
        return activeClients.length > 0 && activeClients.every((a) => a.allowed_sync_weight);
      case "rollout_until_finish_enough_non_dummy_tasks":
        if (c.episodes > config.maxCachedEpisodes) this.clear();
        return c.nonDummyTasks >= config.batchSize;
      default:
        if (c.episodes > config.maxCachedEpisodes) this.clear();
        return c.tasks >= config.batchSize;
    }
  }

  /** The snapshot the engine pushes (`update_rollout_result_array_preview`). */
  snapshot(config: TrainConfig): CurrentBatchRolloutPoolInformation {
    const c = this.counts(config.numRepeat);
    const details: Record<string, string[]> = {};
    const rewards: Record<string, number[]> = {};
    for (const [taskId, list] of this.byTask) {
      details[taskId] = list.map((e) => e.episodeUuid);
      rewards[taskId] = list.map((e) => e.reward);
    }
    return {
      ...defaultPoolInformation(),
      sample_collection_method: config.sampleCollectionMethodRaw,
      completed_episodes: c.episodes,
      completed_episode_target: config.batchSize * config.numRepeat,
      completed_tasks: c.tasks,
      completed_task_target: config.batchSize,
      completed_non_dummy_tasks: c.nonDummyTasks,
      completed_non_dummy_task_target: config.batchSize,
      task_expected_num_repeat: config.numRepeat,
      completed_tasks_details: details,
      completed_tasks_rewards: rewards,
    };
  }
}
