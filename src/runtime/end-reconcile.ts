/**
 * @module runtime/end-reconcile — an `/end_episode` whose two sends both failed has an unknown outcome; instead of
 * leaving it to the scheduler's report lease (720 s by default, BC-26), the invocation asks the server's own view
 * at once: pool information's `completed_tasks_details` lists, per task id, the episode uuids the engine counted
 * in the current batch. Only positive evidence is used (an uuid listed there was delivered); anything else stays
 * unknown and goes to the outbox, since an end may still be held by a slow engine ack.
 */
import type { ClaimHandle } from "../port/index.ts";
import type { SwarmClient } from "../client/index.ts";

/**
 * True when every claim's episode uuid is listed under `taskId` in its server's completed tasks.
 * Never throws: an unreadable pool counts as not confirmed.
 */
export async function endsConfirmedByPool(claims: ReadonlyArray<ClaimHandle & { client: Pick<SwarmClient, "getRolloutStat"> }>, taskId: string): Promise<boolean> {
  for (const c of claims) {
    try {
      const pool = await c.client.getRolloutStat();
      if (!(pool.completed_tasks_details[taskId] ?? []).includes(c.episodeUuid)) return false;
    } catch {
      return false;
    }
  }
  return claims.length > 0;
}
