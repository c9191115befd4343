/**
 * @module protocol/throttle — SwarmThrottlePolicy (spec §2.3, §7.1) and the legacy partition_limit (§7.2).
 * The server only stores `current_task_id` as the record's `optional_task_id`; throttling is client-side.
 */
import { z } from "zod";

/** SwarmThrottlePolicy (spec §2.3): sent inside ClaimEpisodeRequest as `throttle_policy`. */
export const SwarmThrottlePolicy = z.object({
  ratio: z.number().default(1.5).describe("throttle when own unique tasks >= expected_batch_size * ratio"),
  expected_batch_size: z.number().int().describe("tasks per training batch (server train_batch_size)"),
  expected_num_repeat: z.number().int().describe("episodes per task (server num_repeat)"),
  current_task_id: z.string().describe("task id of the episode about to be claimed"),
});
export type SwarmThrottlePolicy = z.infer<typeof SwarmThrottlePolicy>;

/** Legacy `partition_limit` (spec §7.2), replaced by throttle_policy; current servers ignore it. */
export const SwarmBatchPartitionLimit = z.object({
  limit_method: z.string().default("Parallel_Flood_Control"),
  ratio: z.number().default(1.2),
  expected_total_episode_in_batch: z.number().int().nullable().default(null),
  expected_total_task_in_batch: z.number().int().nullable().default(null),
  current_task_id: z.string().nullable().default(""),
});
export type SwarmBatchPartitionLimit = z.infer<typeof SwarmBatchPartitionLimit>;
