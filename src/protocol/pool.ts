/**
 * @module protocol/pool — CurrentBatchRolloutPoolInformation and the active-client instruction (spec §2.10,
 * §2.11, §3.13, §3.18, §7.4). Every field is optional with its default: pool info is never authoritative across
 * phases (spec §11.20).
 */
import * as z from "zod/mini";
import "./zod-locale.ts"; // zod's English messages for these schemas

/** An active swarm client as the server tracks it (spec §2.11). `last_activity_at` is unix seconds. */
export const ActiveSwarmClient = z.looseObject({
  client_uuid: z.string(),
  last_activity_at: z.number(),
  allowed_sync_weight: z._default(z.boolean(), false),
});
export type ActiveSwarmClient = z.infer<typeof ActiveSwarmClient>;

/** SwarmClientInstruction (spec §2.11): the engine's pool-push response. */
export const SwarmClientInstruction = z.looseObject({ active_clients: z._default(z.array(ActiveSwarmClient), []) });
export type SwarmClientInstruction = z.infer<typeof SwarmClientInstruction>;

/** One `running_episode_details` entry (spec §2.10): all values are strings, e.g. `"12.3s"`, `"3"`. */
export const RunningEpisodeDetail = z.record(z.string(), z.string());
export type RunningEpisodeDetail = z.infer<typeof RunningEpisodeDetail>;

/** `GET /get_current_batch_rollout_pool_information` response and the engine's push body (spec §2.10). */
export const CurrentBatchRolloutPoolInformation = z.looseObject({
  sample_collection_method: z._default(z.string(), ""),
  completed_episodes: z._default(z.int(), 0),
  /** batch_size × num_repeat */
  completed_episode_target: z._default(z.int(), 0),
  completed_tasks: z._default(z.int(), 0),
  /** batch_size */
  completed_task_target: z._default(z.int(), 0),
  completed_non_dummy_tasks: z._default(z.int(), 0),
  completed_non_dummy_task_target: z._default(z.int(), 0),
  task_expected_num_repeat: z._default(z.int(), 0),
  completed_tasks_details: z._default(z.record(z.string(), z.array(z.string())), {}),
  completed_tasks_rewards: z._default(z.record(z.string(), z.array(z.number())), {}),
  completed_tasks_client_uuids: z._default(z.record(z.string(), z.array(z.string())), {}),
  running_episode_details: z._default(z.nullable(z.record(z.string(), RunningEpisodeDetail)), null),
  engine_status: z._default(z.nullable(z.string()), null),
  global_step: z._default(z.nullable(z.int()), null),
  /** unix seconds */
  booting_start_time: z._default(z.nullable(z.number()), null),
  training_model_path: z._default(z.nullable(z.string()), null),
  swarm_client_instruction: z._default(z.nullable(SwarmClientInstruction), null),
});
export type CurrentBatchRolloutPoolInformation = z.infer<typeof CurrentBatchRolloutPoolInformation>;

/** The three engine sample-collection methods plus the two agree modes (spec §7.3). */
export const SampleCollectionMethod = z.enum([
  "rollout_until_finish_enough_episodes",
  "rollout_until_finish_enough_tasks",
  "rollout_until_finish_enough_non_dummy_tasks",
  "rollout_until_any_client_agree_sync_weight",
  "rollout_until_all_clients_agree_sync_weight",
]);
export type SampleCollectionMethod = z.infer<typeof SampleCollectionMethod>;

/** The two methods in which the clients vote for the weight sync (`AGREE_SYNC_WEIGHT_VALID_METHODS`, spec §3.14, §7.3). */
export const AGREE_SYNC_WEIGHT_METHODS: readonly SampleCollectionMethod[] = ["rollout_until_any_client_agree_sync_weight", "rollout_until_all_clients_agree_sync_weight"];

/** True for the two agree modes, where `/agree_sync_weight` is allowed (anything else answers HTTP 500). */
export function isAgreeSyncWeightMethod(method: string | null | undefined): boolean {
  return (AGREE_SYNC_WEIGHT_METHODS as readonly string[]).includes(method ?? "");
}
