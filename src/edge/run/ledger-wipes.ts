/**
 * @module edge/run/ledger-wipes — the ledger says which rewards were wiped: when a server batch is wiped before
 * training (scheduler/batches), each of its landings' ledger row (`ended_episodes`, by server episode uuid) and that
 * attempt's row get `wiped_by` = what wiped it, so one episode key has at most one live ledger row (its repeat runs
 * again under the same key, a later attempt). `/metrics` and the dashboard count wiped rewards apart.
 */
import type { EndedEpisode } from "../../port/index.ts";
import type { AttemptRow } from "./attempts.ts";

/** Objects created before the ledger said which rows were wiped get the column (nullable: their rows are live). */
export function addWipedColumn(sql: SqlStorage): void {
  const columns = sql.exec<{ name: string }>(`PRAGMA table_info(ended_episodes)`).toArray();
  if (!columns.some((c) => c.name === "wiped_by")) sql.exec(`ALTER TABLE ended_episodes ADD COLUMN wiped_by TEXT`);
}

/**
 * Marks the ledger row(s) of server episode `episodeUuid` and their attempt rows wiped, with `why` (e.g.
 * `batch 0:3: the engine stopped or restarted before training it`). The first mark stays: a row is wiped once.
 */
export function markWiped(sql: SqlStorage, episodeUuid: string, why: string): void {
  const rows = sql.exec<{ episode_key: string; attempt: number }>(`SELECT episode_key, attempt FROM ended_episodes WHERE episode_uuid = ? AND wiped_by IS NULL`, episodeUuid).toArray();
  if (!rows.length) return;
  sql.exec(`UPDATE ended_episodes SET wiped_by = ? WHERE episode_uuid = ? AND wiped_by IS NULL`, why, episodeUuid);
  for (const r of rows) {
    const stored = sql.exec<{ row: string }>(`SELECT row FROM attempts WHERE episode_key = ? AND attempt = ?`, r.episode_key, r.attempt).toArray()[0];
    if (!stored) continue;
    const attempt = JSON.parse(stored.row) as AttemptRow;
    if (attempt.wipedBy) continue;
    sql.exec(`UPDATE attempts SET row = ? WHERE episode_key = ? AND attempt = ?`, JSON.stringify({ ...attempt, wipedBy: why }), r.episode_key, r.attempt);
  }
}

/** The ledger, oldest first; optionally one global step. `limit` rows from `offset`; `wipedBy` on a wiped row. */
export function endedRows(sql: SqlStorage, query: { globalStep?: number; limit: number; offset: number }): EndedEpisode[] {
  const where = query.globalStep === undefined ? "" : "WHERE global_step = ?";
  const args = query.globalStep === undefined ? [query.limit, query.offset] : [query.globalStep, query.limit, query.offset];
  return sql
    .exec<{ episode_key: string; attempt: number; swarm: string; episode_uuid: string; task_id: string; global_step: number | null; reward: number; at_ms: number; wiped_by: string | null }>(
      `SELECT * FROM ended_episodes ${where} ORDER BY at_ms, episode_key, swarm LIMIT ? OFFSET ?`,
      ...args,
    )
    .toArray()
    .map((r) => ({
      episodeKey: r.episode_key, attempt: r.attempt, swarm: r.swarm, episodeUuid: r.episode_uuid, taskId: r.task_id, globalStep: r.global_step, reward: r.reward, atMs: r.at_ms,
      ...(r.wiped_by ? { wipedBy: r.wiped_by } : {}),
    }));
}
