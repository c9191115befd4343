/**
 * @module scheduler/pool-tasks — counting tasks in a server batch: this run's complete tasks from its own landings,
 * and other clients' tasks from the pool information (complete ones, and ones still being served). Pure.
 */
import type { PoolSeen } from "./events.ts";
import type { BatchRow, LandedEpisode } from "./state.ts";

/** Tasks (source, taskIndex: one task id) with at least `numRepeat` of these episodes. */
export function completeTasksOf(episodes: Iterable<LandedEpisode>, numRepeat: number): number {
  const perTask = new Map<string, number>();
  for (const e of episodes) {
    const task = `${e.source}\u0000${e.taskIndex}`;
    perTask.set(task, (perTask.get(task) ?? 0) + 1);
  }
  return [...perTask.values()].filter((n) => n >= numRepeat).length;
}

/**
 * Other clients' tasks that take a place in the batch, from the pool information (ours are counted fresh, from our
 * own landings, at need time): their complete tasks, and their tasks still being served (a claimed episode of that
 * task id is running now). Counting those in progress keeps concurrent top-ups of one shared batch from overflowing
 * into the next one (several runs topping up the last places at once); an incomplete task with no running episode
 * is not counted (its client may have left it), so a batch never waits for it. Without the per-task details
 * (older observations): the pool's complete tasks less ours it lists, and no running count.
 * @param ours every episode uuid of this run on the batch's server
 * @returns `tasks`: other clients' tasks taking a place (complete or being served); `running`: those of them being
 * served (an episode claimed and not ended: a client still feeds the batch), null when the pool has no details
 */
export function foreignTasks(
  pool: PoolSeen, ours: ReadonlySet<string>, episodes: BatchRow["episodes"], listed: ReadonlySet<string>, numRepeat: number,
): { tasks: number; running: number | null } {
  if (!pool.taskEpisodes) {
    const oursListed = completeTasksOf([...listed].map((uuid) => episodes.get(uuid)).filter((e): e is LandedEpisode => e !== undefined), numRepeat);
    return { tasks: Math.max(0, pool.completedTasks - oursListed), running: null };
  }
  const ourTasks = new Set<string>();
  const counted = new Set<string>();
  for (const [taskId, uuids] of Object.entries(pool.taskEpisodes)) {
    if (uuids.some((u) => ours.has(u))) ourTasks.add(taskId);
    else if (uuids.length >= numRepeat) counted.add(taskId);
  }
  const running = new Set<string>();
  for (const [uuid, taskId] of Object.entries(pool.runningTaskIds ?? {})) {
    if (taskId === "" || ours.has(uuid) || ourTasks.has(taskId)) continue;
    counted.add(taskId);
    running.add(taskId);
  }
  return { tasks: counted.size, running: running.size };
}
