/**
 * @module protocol/throttle — SwarmThrottlePolicy (spec §2.3, §7.1). The server only stores `current_task_id` as the
 * record's `optional_task_id`; throttling is client-side. The legacy `partition_limit` (§7.2) is neither sent nor
 * read: current servers ignore it and ClaimEpisodeRequest strips it.
 */
import * as z from "zod/mini";
import "./zod-locale.ts"; // zod's English messages for these schemas

/** SwarmThrottlePolicy (spec §2.3): sent inside ClaimEpisodeRequest as `throttle_policy`. */
export const SwarmThrottlePolicy = z.object({
  /** throttle when own unique tasks >= expected_batch_size * ratio */
  ratio: z._default(z.number(), 1.5),
  /** tasks per training batch (server train_batch_size) */
  expected_batch_size: z.int(),
  /** episodes per task (server num_repeat) */
  expected_num_repeat: z.int(),
  /** task id of the episode about to be claimed */
  current_task_id: z.string(),
});
export type SwarmThrottlePolicy = z.infer<typeof SwarmThrottlePolicy>;
