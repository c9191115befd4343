/**
 * @module scheduler/collection-method — how the server closes a batch in each sample-collection method (spec §7.3), as
 * the run counts it. What a batch lacks, by method (this run's landings, fresher than the pool, plus other clients'
 * from the last pool read):
 *  - `finish_enough_tasks`: task ids with ≥ numRepeat episodes (scheduler/batches `groupsNeeded`);
 *  - `finish_enough_episodes`: B × R kept episodes, task ids ignored: the groups that many missing episodes make;
 *  - `finish_enough_non_dummy_tasks`: complete task ids whose rewards are not all equal (a group of one reward gives
 *    GRPO no signal and does not count); the run keeps opening groups until the batch closes (scheduler/top-up-ask);
 *  - the agree modes: nothing — the batch closes when the clients vote (any: one vote; all: every active client;
 *    the run's vote: scheduler/sync-vote).
 *
 * The server's method rules: the engine closes its batches by the method it was started with, whichever run synced it.
 * A single-server train run learns that method from the first server's pool information (`sample_collection_method`)
 * and follows it over its job's: a run of another method sharing a server in an agree mode votes for the sync once its
 * share is done (it is listed as an active client by its ends, so a run that never voted would hold every sync of the
 * all mode until it aged out of the list, 600 s, and alone would never see one), and a run of an agree mode sharing a
 * server of a counting method counts what the batch lacks instead of voting (the vote would be answered 500).
 */
import { SampleCollectionMethod } from "../protocol/index.ts";
import type { Draft } from "./draft.ts";
import type { BatchRow, LandedEpisode } from "./state.ts";

/** The run's sample-collection method: its server's when seen, else its job's. */
export function collectionMethod(d: Pick<Draft, "run">): SampleCollectionMethod {
  return d.run.serverMethod ?? jobMethod(d.run.config);
}

/** The method the run's job names (a config stored before the field: the tasks method). */
export function jobMethod(config: Pick<Draft["run"]["config"], "sampleCollectionMethod">): SampleCollectionMethod {
  return config.sampleCollectionMethod ?? "rollout_until_finish_enough_tasks";
}

/**
 * The first server's pool information named its engine's method (`raw`, spec §7.3): a single-server train run follows
 * it from now on (an unknown value is the tasks method, as the engine falls back to it), and says so when it differs
 * from the job's. Multi-server and eval runs keep their job's.
 */
export function learnServerMethod(d: Pick<Draft, "run" | "log">, raw: string): void {
  const { config } = d.run;
  if (config.episodeType !== "train" || config.swarms.length !== 1) return;
  const parsed = SampleCollectionMethod.safeParse(raw);
  const method = parsed.success ? parsed.data : "rollout_until_finish_enough_tasks";
  if (d.run.serverMethod === method) return;
  const own = jobMethod(config);
  d.run.serverMethod = method;
  if (method === own) return;
  d.log("warn", `the swarm server's engine collects samples by ${method}, not by ${own} as this run's job.swarmModeSampleCollectionMethod says: the run follows the server${isAgreeMethod(method) ? " and votes for each weight sync once its share of the batch is done" : ""} (set job.swarmModeSampleCollectionMethod to ${method} to match it)`, {
    server: method, job: own,
  });
}

function isAgreeMethod(m: SampleCollectionMethod): boolean {
  return m === "rollout_until_any_client_agree_sync_weight" || m === "rollout_until_all_clients_agree_sync_weight";
}

/** The run is in one of the two agree modes. */
export function isAgreeMode(d: Pick<Draft, "run">): boolean {
  return isAgreeMethod(collectionMethod(d));
}

/**
 * Groups the batch lacks before the server closes it by the episodes or non-dummy methods (≤ 0: it closes by itself);
 * null for the other methods (the tasks method is counted by `groupsNeeded`, the agree modes lack nothing).
 */
export function groupsNeededByMethod(d: Pick<Draft, "run">, batch: BatchRow): number | null {
  const { batchSize, numRepeat } = d.run.config;
  const counted = [...batch.episodes.values()].filter((e) => !e.rerunElsewhere);
  switch (collectionMethod(d)) {
    case "rollout_until_finish_enough_episodes": {
      const missing = batchSize * numRepeat - counted.length - batch.foreignEpisodes;
      return Math.ceil(missing / numRepeat);
    }
    case "rollout_until_finish_enough_non_dummy_tasks":
      return batchSize - nonDummyTasksOf(counted, numRepeat) - (batch.poolForeignNonDummyTasks ?? 0);
    case "rollout_until_any_client_agree_sync_weight":
    case "rollout_until_all_clients_agree_sync_weight":
      return 0;
    default:
      return null;
  }
}

/** Complete tasks (≥ numRepeat episodes of one task) whose rewards are not all equal (spec §7.3 "non-dummy"). */
export function nonDummyTasksOf(episodes: Iterable<LandedEpisode>, numRepeat: number): number {
  const perTask = new Map<string, number[]>();
  for (const e of episodes) {
    const task = `${e.source}\u0000${e.taskIndex}`;
    const list = perTask.get(task);
    if (list) list.push(e.reward);
    else perTask.set(task, [e.reward]);
  }
  return [...perTask.values()].filter((r) => r.length >= numRepeat && r.some((x) => x !== r[0])).length;
}

/** Other clients' non-dummy complete tasks in the pool's per-task rewards. @param ourTasks the task ids holding our episodes */
export function foreignNonDummyTasks(taskRewards: Readonly<Record<string, number[]>>, ourTasks: ReadonlySet<string>, numRepeat: number): number {
  let n = 0;
  for (const [taskId, rewards] of Object.entries(taskRewards)) {
    if (!ourTasks.has(taskId) && rewards.length >= numRepeat && rewards.some((r) => r !== rewards[0])) n++;
  }
  return n;
}
