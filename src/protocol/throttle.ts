/**
 * @module protocol/throttle — SwarmThrottlePolicy (spec §2.3, §7.1). The server only stores `current_task_id` as the
 * record's `optional_task_id`; throttling is client-side. The legacy `partition_limit` (§7.2) is neither sent nor
 * read: current servers ignore it and ClaimEpisodeRequest strips it.
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
