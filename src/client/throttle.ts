/**
 * @module client/throttle — the Python client's client-side throttle check (`_check_throttle_policy`,
 * `_remember_seen_task`; spec §7.1, BC-31) as pure functions, quirks included. The server never throttles.
 */
import { CurrentBatchRolloutPoolInformation, type SwarmThrottlePolicy } from "../protocol/index.ts";
import { SwarmAbortError, SwarmInputError } from "./errors.ts";
import type { SwarmLogger } from "./types.ts";

/** The only sample-collection method that supports throttle policies (spec §7.1 step 1). */
const THROTTLE_METHOD = "rollout_until_finish_enough_tasks";

/**
 * Spec §7.1 step 1: a throttle policy needs the tasks method (undefined: the client's job is not known, not checked).
 * @throws SwarmInputError `Current sample collection method (<m>) does not support throttle policy.`
 */
export function assertThrottleSupported(method: string | undefined): void {
  if (method !== undefined && method !== THROTTLE_METHOD) {
    throw new SwarmInputError("throttlePolicy", `Current sample collection method (${method}) does not support throttle policy.`);
  }
}

/**
 * The pool information for the throttle check; on any failure but the caller's abort, the all-defaults object (which
 * never throttles), with a warning (Python `get_rollout_stat`). @throws SwarmAbortError
 */
export async function poolForThrottle(read: () => Promise<CurrentBatchRolloutPoolInformation>, logger: SwarmLogger): Promise<ThrottlePoolView> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof SwarmAbortError) throw err;
    logger.warn(`Error getting rollout statistics: ${(err as Error).message}`);
    return CurrentBatchRolloutPoolInformation.parse({});
  }
}

/** The two pool fields the check reads (spec §2.10); other fields are ignored. */
export type ThrottlePoolView = Pick<
  CurrentBatchRolloutPoolInformation,
  "completed_tasks_client_uuids" | "running_episode_details"
>;

/** The throttle verdict. `reason` is the Python log text when throttled, `""` otherwise. */
export interface ThrottleDecision {
  throttle: boolean;
  reason: string;
}

const NOT_THROTTLED: ThrottleDecision = { throttle: false, reason: "" };

/**
 * Evaluates a throttle policy exactly as spec §7.1 `should_throttle` steps 2–7 (the job-method assertion of step 1
 * lives in the client, which knows the job):
 * 1. walk `completed_tasks_client_uuids` per task in order, counting entries and marking tasks of other clients as
 *    alien; at the first own entry the task joins the own set and the walk of that list STOPS (quirk kept);
 * 2. if `running_episode_details` is not null, count each running episode's `optional_task_id`, marking alien ones
 *    and adding own non-empty ones; if it IS null (not `{}`!) and fewer than `expected_batch_size` tasks have
 *    `expected_num_repeat` episodes, do not throttle;
 * 3. never throttle a task in `recentSeenTasks`, in the own set or in the alien set;
 * 4. throttle when |own − alien| ≥ `expected_batch_size × ratio` (a float: 32 × 0.4 = 12.8, so 13 is throttled).
 * @param pool the pool information (use the all-defaults object when the fetch failed → never throttles)
 * @param clientUuid this client's uuid
 * @param recentSeenTasks task ids this client already claimed with a policy (see {@link rememberSeenTask})
 * @throws SwarmInputError when `current_task_id` is empty (Python: `Task_Ratio_Limit requires current_task_id to be set.`)
 */
export function checkThrottlePolicy(
  policy: SwarmThrottlePolicy,
  pool: ThrottlePoolView,
  clientUuid: string,
  recentSeenTasks: readonly string[],
): ThrottleDecision {
  const currentTaskId = policy.current_task_id;
  if (!currentTaskId) {
    throw new SwarmInputError("throttle_policy.current_task_id", "Task_Ratio_Limit requires current_task_id to be set.");
  }
  const ownTasks = new Set<string>();
  const alienTasks = new Set<string>();
  const episodeCount = new Map<string, number>();
  const bump = (taskId: string) => episodeCount.set(taskId, (episodeCount.get(taskId) ?? 0) + 1);

  for (const [taskId, clients] of Object.entries(pool.completed_tasks_client_uuids ?? {})) {
    for (const client of clients) {
      bump(taskId);
      if (client !== clientUuid) alienTasks.add(taskId);
      if (client === clientUuid) {
        ownTasks.add(taskId);
        break;
      }
    }
  }

  const running = pool.running_episode_details;
  if (running !== null && running !== undefined) {
    for (const detail of Object.values(running)) {
      const client = detail["client_uuid"] ?? "";
      const taskId = detail["optional_task_id"] ?? "";
      bump(taskId);
      if (client !== clientUuid) alienTasks.add(taskId);
      if (taskId && client === clientUuid) ownTasks.add(taskId);
    }
  } else {
    let finishedTasks = 0;
    for (const n of episodeCount.values()) if (n >= policy.expected_num_repeat) finishedTasks++;
    if (finishedTasks < policy.expected_batch_size) return NOT_THROTTLED;
  }

  if (recentSeenTasks.includes(currentTaskId)) return NOT_THROTTLED;
  if (ownTasks.has(currentTaskId)) return NOT_THROTTLED;
  if (alienTasks.has(currentTaskId)) return NOT_THROTTLED;

  let uniqueOwn = 0;
  for (const t of ownTasks) if (!alienTasks.has(t)) uniqueOwn++;
  const max = policy.expected_batch_size * policy.ratio;
  if (uniqueOwn >= max) {
    return {
      throttle: true,
      reason: `Throttling because there are already ${uniqueOwn} unique tasks in the batch, which meets/exceeds the threshold of ${max} for task_id ${currentTaskId}.`,
    };
  }
  return NOT_THROTTLED;
}

/** `checkThrottlePolicy(...).throttle` (spec §7.1 `should_throttle`, BC-31). Same parameters and errors. */
export function shouldThrottle(
  policy: SwarmThrottlePolicy,
  pool: ThrottlePoolView,
  clientUuid: string,
  recentSeenTasks: readonly string[],
): boolean {
  return checkThrottlePolicy(policy, pool, clientUuid, recentSeenTasks).throttle;
}

/**
 * Python `_remember_seen_task`: appends `taskId` if absent, keeping at most
 * `expected_batch_size × expected_num_repeat × 3` entries (oldest dropped). Mutates and returns `recent`.
 */
export function rememberSeenTask(recent: string[], taskId: string, policy: SwarmThrottlePolicy): string[] {
  if (recent.includes(taskId)) return recent;
  recent.push(taskId);
  const cap = policy.expected_batch_size * policy.expected_num_repeat * 3;
  if (recent.length > cap) recent.splice(0, recent.length - cap);
  return recent;
}
