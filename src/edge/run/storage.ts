/**
 * @module edge/run/storage — the RolloutScheduler's SQLite tables and the mapping between rows and the core's state.
 * One row per episode, per step, per eval task and per dataset task (BC-53: no growing value; a task of any size
 * up to SQLite's 2 MB row limit round-trips); the run row is small. Survives eviction and restarts (BC-51).
 *
 * Datasets (bounded rows only, never one row for a spec and its rows): the stored spec carries no inline rows;
 * `dataset_sources` holds one small descriptor per dataset; `tasks` holds inline rows (one per task, written in
 * chunks by `stageTasks`) and every task read from a URL or generated, once the run first needs it (a cache:
 * later repeats, retries and the consumer's `getTask` read it from here); `dataset_index` holds a URL dataset's
 * index in chunks of 4096 entries (32 bytes each, `tasks/dataset-index.ts`); `dataset_ids` the own task ids seen
 * while indexing (duplicates are refused, BC-30).
 */
import type { Task, ValidWorkflowOutput } from "../../protocol/index.ts";
import type { EndedEpisode } from "../../port/index.ts";
import { chunkFromBytes, deserializeTask, serializeTask } from "../../tasks/index.ts";
import type { EpisodeRow, EvalTaskRow, LandedEpisode, RowChanges, RunRow, RunSummary, SchedulerCommand, SchedulerState, WindowRow, StoredBatchRow } from "../../scheduler/index.ts";
import { stateFromRows, storedBatchRow } from "../../scheduler/index.ts";
import { redactEpisodeKeys } from "../ground/log.ts";
import type { LogLine, RunMeta } from "./run-views.ts";
import type { AttemptRow } from "./attempts.ts";
import { addWipedColumn, endedRows, markWiped } from "./ledger-wipes.ts";
import type { StoredSource } from "./stored-source.ts";

export type { LogLine, RunMeta };

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS run (id INTEGER PRIMARY KEY CHECK (id = 1), row TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS pending_commands (id INTEGER PRIMARY KEY AUTOINCREMENT, command TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS episodes (episode_key TEXT PRIMARY KEY, row TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS steps (window_index INTEGER PRIMARY KEY, row TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS eval_tasks (group_key TEXT PRIMARY KEY, row TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS batches (batch_key TEXT PRIMARY KEY, row TEXT NOT NULL)`,
  // a batch's landed episodes, one row each (a landing writes one small row, never the batch's whole list)
  `CREATE TABLE IF NOT EXISTS batch_episodes (batch_key TEXT NOT NULL, uuid TEXT NOT NULL, row TEXT NOT NULL, PRIMARY KEY (batch_key, uuid))`,
  `CREATE TABLE IF NOT EXISTS tasks (source TEXT NOT NULL, task_index INTEGER NOT NULL, task_id TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (source, task_index))`,
  `CREATE TABLE IF NOT EXISTS dataset_sources (name TEXT PRIMARY KEY, row TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS dataset_index (source TEXT NOT NULL, chunk INTEGER NOT NULL, entries BLOB NOT NULL, PRIMARY KEY (source, chunk))`,
  `CREATE TABLE IF NOT EXISTS dataset_ids (source TEXT NOT NULL, task_id TEXT NOT NULL, line INTEGER NOT NULL, PRIMARY KEY (source, task_id)) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS outbox (episode_key TEXT NOT NULL, attempt INTEGER NOT NULL, task_id TEXT NOT NULL, outputs TEXT NOT NULL, PRIMARY KEY (episode_key, attempt))`,
  `CREATE TABLE IF NOT EXISTS ended_episodes (episode_key TEXT NOT NULL, attempt INTEGER NOT NULL, swarm TEXT NOT NULL, episode_uuid TEXT NOT NULL, task_id TEXT NOT NULL, global_step INTEGER, reward REAL NOT NULL, at_ms INTEGER NOT NULL, wiped_by TEXT, PRIMARY KEY (episode_key, attempt, swarm))`,
  `CREATE TABLE IF NOT EXISTS attempts (episode_key TEXT NOT NULL, attempt INTEGER NOT NULL, window_index INTEGER, at_ms INTEGER NOT NULL, row TEXT NOT NULL, PRIMARY KEY (episode_key, attempt))`,
  `CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY AUTOINCREMENT, at_ms INTEGER NOT NULL, level TEXT NOT NULL, message TEXT NOT NULL, fields TEXT NOT NULL)`,
];

/** Log lines kept per run (older ones are deleted). */
export const MAX_LOG_LINES = 500;

export type { StoredSource };

/** Typed access to the DO's SQLite storage. All methods are synchronous (SQLite in a DO is). */
export class SchedulerStorage {
  constructor(private readonly sql: SqlStorage) {
    for (const stmt of SCHEMA) sql.exec(stmt);
    addWipedColumn(sql);
  }

  /** The run's metadata, or null before `create`. */
  meta(): RunMeta | null {
    const row = this.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'run'`).toArray()[0];
    return row ? (JSON.parse(row.value) as RunMeta) : null;
  }

  /** Stores the run's meta with `spec.secrets: {}` whatever memory holds: secrets are stored only sealed (edge/ground/secrets-at-rest). */
  setMeta(meta: RunMeta): void {
    this.sql.exec(`INSERT OR REPLACE INTO meta (key, value) VALUES ('run', ?)`, JSON.stringify({ ...meta, spec: { ...meta.spec, secrets: {} } }));
  }

  /**
   * Deletes the run's sealed secrets with their wrapped data key (and plaintext ones stored before sealing), once the
   * run is finished: what the write-ahead log or a backup kept no longer decrypts. @returns true when there were any
   */
  scrubSecrets(): boolean {
    const meta = this.meta();
    if (!meta || (!meta.sealedSecrets && Object.keys(meta.spec.secrets).length === 0)) return false;
    this.setMeta({ ...meta, sealedSecrets: undefined });
    return true;
  }

  /**
   * Counts one more confirmation that dataset `source` changed under the run (persisted: a reset does not restart it).
   * @returns the confirmations so far, this one included
   */
  confirmDatasetChange(source: string): number {
    const key = `changed:${source}`;
    const row = this.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = ?`, key).toArray()[0];
    const count = (row ? Number(row.value) : 0) + 1;
    this.sql.exec(`INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, key, String(count));
    return count;
  }

  /** The final summary, once the run finished. */
  summary(): RunSummary | null {
    const row = this.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'summary'`).toArray()[0];
    return row ? (JSON.parse(row.value) as RunSummary) : null;
  }

  setSummary(summary: RunSummary): void {
    this.sql.exec(`INSERT OR REPLACE INTO meta (key, value) VALUES ('summary', ?)`, JSON.stringify(summary));
  }

  /** Rebuilds the core's state from its rows, or null before `create`. */
  loadState(): SchedulerState | null {
    const run = this.sql.exec<{ row: string }>(`SELECT row FROM run WHERE id = 1`).toArray()[0];
    if (!run) return null;
    const rows = <T>(table: string) => this.sql.exec<{ row: string }>(`SELECT row FROM ${table}`).toArray().map((r) => JSON.parse(r.row) as T);
    return stateFromRows({
      run: JSON.parse(run.row) as RunRow,
      episodes: rows<EpisodeRow>("episodes"),
      steps: rows<WindowRow>("steps"),
      evalTasks: rows<EvalTaskRow>("eval_tasks"),
      batches: rows<StoredBatchRow>("batches"),
      landed: this.sql
        .exec<{ batch_key: string; uuid: string; row: string }>(`SELECT batch_key, uuid, row FROM batch_episodes`)
        .toArray()
        .map((r) => ({ batchKey: r.batch_key, uuid: r.uuid, episode: JSON.parse(r.row) as LandedEpisode })),
    });
  }

  /** Persists one `decide`'s row changes (upserts and deletes). */
  persist(changes: RowChanges): void {
    if (changes.run) this.sql.exec(`INSERT OR REPLACE INTO run (id, row) VALUES (1, ?)`, JSON.stringify(changes.run));
    for (const e of changes.episodes) this.sql.exec(`INSERT OR REPLACE INTO episodes (episode_key, row) VALUES (?, ?)`, e.episodeKey, JSON.stringify(e));
    for (const key of changes.deletedEpisodeKeys) this.sql.exec(`DELETE FROM episodes WHERE episode_key = ?`, key);
    for (const s of changes.steps) this.sql.exec(`INSERT OR REPLACE INTO steps (window_index, row) VALUES (?, ?)`, s.windowIndex, JSON.stringify(s));
    for (const t of changes.evalTasks) this.sql.exec(`INSERT OR REPLACE INTO eval_tasks (group_key, row) VALUES (?, ?)`, t.groupKey, JSON.stringify(t));
    for (const b of changes.batches ?? []) this.sql.exec(`INSERT OR REPLACE INTO batches (batch_key, row) VALUES (?, ?)`, b.batchKey, JSON.stringify(storedBatchRow(b)));
    const wiped = new Map((changes.batches ?? []).filter((b) => b.state === "wiped").map((b) => [b.batchKey, `batch ${b.batchKey}: ${b.wipedWhy ?? "wiped before training"}`]));
    for (const l of changes.landed ?? []) {
      if (l.episode) this.sql.exec(`INSERT OR REPLACE INTO batch_episodes (batch_key, uuid, row) VALUES (?, ?, ?)`, l.batchKey, l.uuid, JSON.stringify(l.episode));
      else this.sql.exec(`DELETE FROM batch_episodes WHERE batch_key = ? AND uuid = ?`, l.batchKey, l.uuid);
      const why = l.episode ? undefined : wiped.get(l.batchKey);
      if (why) markWiped(this.sql, l.uuid, why);
    }
  }

  /** Queues commands for the next alarm (written in the same transaction as the decision that emitted them). */
  queueCommands(commands: readonly SchedulerCommand[]): void {
    for (const c of commands) this.sql.exec(`INSERT INTO pending_commands (command) VALUES (?)`, JSON.stringify(c));
  }

  /** The queued commands, oldest first, with their ids (delete each once carried out). */
  pendingCommands(): Array<{ id: number; command: SchedulerCommand }> {
    return this.sql
      .exec<{ id: number; command: string }>(`SELECT id, command FROM pending_commands ORDER BY id`)
      .toArray()
      .map((r) => ({ id: r.id, command: JSON.parse(r.command) as SchedulerCommand }));
  }

  deletePendingCommand(id: number): void {
    this.sql.exec(`DELETE FROM pending_commands WHERE id = ?`, id);
  }

  /** Stores tasks of one dataset at `task_index` = `start`, `start + 1`, … (idempotent: a resent chunk overwrites). */
  putTasks(source: string, tasks: readonly Task[], start = 0): void {
    tasks.forEach((t, i) => this.sql.exec(`INSERT OR REPLACE INTO tasks (source, task_index, task_id, body) VALUES (?, ?, ?, ?)`, source, start + i, t.task_id, serializeTask(t)));
  }

  /** How many tasks of a source are stored (inline rows staged so far; cached reads of a URL source). */
  taskCount(source: string): number {
    return this.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM tasks WHERE source = ?`, source).one().n;
  }

  /** True when task `taskIndex` of `source` is stored (inline, or read before). */
  hasTask(source: string, taskIndex: number): boolean {
    return this.sql.exec(`SELECT 1 FROM tasks WHERE source = ? AND task_index = ?`, source, taskIndex).toArray().length > 0;
  }

  /** A dataset's descriptor (what it is and how to read its rows), stored once at create. */
  putSource(name: string, source: StoredSource): void {
    this.sql.exec(`INSERT OR REPLACE INTO dataset_sources (name, row) VALUES (?, ?)`, name, JSON.stringify(source));
  }

  /** A dataset's descriptor, or null for a name the run does not have. */
  source(name: string): StoredSource | null {
    const row = this.sql.exec<{ row: string }>(`SELECT row FROM dataset_sources WHERE name = ?`, name).toArray()[0];
    return row ? (JSON.parse(row.row) as StoredSource) : null;
  }

  /** Stores one chunk of a URL dataset's index (`tasks/dataset-index.ts`). */
  putIndexChunk(source: string, chunk: number, entries: Float64Array): void {
    const bytes = new Uint8Array(entries.buffer, entries.byteOffset, entries.byteLength);
    this.sql.exec(`INSERT OR REPLACE INTO dataset_index (source, chunk, entries) VALUES (?, ?, ?)`, source, chunk, bytes);
  }

  /** One stored index chunk. @throws Error naming the source and chunk when missing */
  indexChunk(source: string, chunk: number): Float64Array {
    const row = this.sql.exec<{ entries: ArrayBuffer }>(`SELECT entries FROM dataset_index WHERE source = ? AND chunk = ?`, source, chunk).toArray()[0];
    if (!row) throw new Error(`no index chunk ${chunk} of dataset ${source} in this run`);
    return chunkFromBytes(row.entries);
  }

  /** Records an own task id seen at `line` while indexing; the line it was first seen at when seen before. */
  claimTaskId(source: string, taskId: string, line: number): number | undefined {
    const cursor = this.sql.exec(`INSERT OR IGNORE INTO dataset_ids (source, task_id, line) VALUES (?, ?, ?)`, source, taskId, line);
    if (cursor.rowsWritten > 0) return undefined;
    return this.sql.exec<{ line: number }>(`SELECT line FROM dataset_ids WHERE source = ? AND task_id = ?`, source, taskId).one().line;
  }

  /** Forgets the URL/R2 datasets' index rows (a background index pass starting again); staged inline rows stay. */
  clearFileIndexes(): void {
    for (const table of ["dataset_index", "dataset_ids"]) this.sql.exec(`DELETE FROM ${table}`);
  }

  /** Forgets every dataset row (a create that failed its checks leaves nothing behind). */
  clearDatasets(): void {
    for (const table of ["tasks", "dataset_sources", "dataset_index", "dataset_ids"]) this.sql.exec(`DELETE FROM ${table}`);
  }

  /** @throws Error naming the source and index when the task is missing */
  task(source: string, taskIndex: number): Task {
    return deserializeTask(this.#taskRow<{ body: string }>("body", source, taskIndex).body);
  }

  /** A stored task's `task_id`, without reading its body. @throws Error naming the source and index when missing */
  taskId(source: string, taskIndex: number): string {
    return this.#taskRow<{ task_id: string }>("task_id", source, taskIndex).task_id;
  }

  /**
   * What a queue message carries of a task: its id, and the task itself when its serialised body is at most
   * `maxInlineBytes` (a larger one is fetched by the consumer, BC-53; its body is then not read here).
   * @throws Error naming the source and index when the task is missing
   */
  dispatchTask(source: string, taskIndex: number, maxInlineBytes: number): { taskId: string; task?: Task } {
    const columns = `task_id, CASE WHEN length(CAST(body AS BLOB)) <= ${Math.floor(maxInlineBytes)} THEN body END AS body`;
    const row = this.#taskRow<{ task_id: string; body: string | null }>(columns, source, taskIndex);
    return row.body === null ? { taskId: row.task_id } : { taskId: row.task_id, task: deserializeTask(row.body) };
  }

  #taskRow<R extends Record<string, SqlStorageValue>>(columns: string, source: string, taskIndex: number): R {
    const row = this.sql.exec<R>(`SELECT ${columns} FROM tasks WHERE source = ? AND task_index = ?`, source, taskIndex).toArray()[0];
    if (!row) throw new Error(`no task ${source}[${taskIndex}] in this run`);
    return row;
  }

  /** Outbox: the outputs an `end` outcome will send, kept until resolved (BC-26, BC-51). */
  putOutbox(episodeKey: string, attempt: number, taskId: string, outputs: Record<string, ValidWorkflowOutput>): void {
    this.sql.exec(`INSERT OR IGNORE INTO outbox (episode_key, attempt, task_id, outputs) VALUES (?, ?, ?, ?)`, episodeKey, attempt, taskId, JSON.stringify(outputs));
  }

  outbox(episodeKey: string, attempt: number): { taskId: string; outputs: Record<string, ValidWorkflowOutput> } | null {
    const row = this.sql.exec<{ task_id: string; outputs: string }>(`SELECT task_id, outputs FROM outbox WHERE episode_key = ? AND attempt = ?`, episodeKey, attempt).toArray()[0];
    return row ? { taskId: row.task_id, outputs: JSON.parse(row.outputs) as Record<string, ValidWorkflowOutput> } : null;
  }

  deleteOutbox(episodeKey: string, attempt: number): void {
    this.sql.exec(`DELETE FROM outbox WHERE episode_key = ? AND attempt = ?`, episodeKey, attempt);
  }

  /** Adds episodes to the ledger of accepted rewards (idempotent by episode key, attempt and swarm). */
  recordEnded(rows: readonly EndedEpisode[]): void {
    for (const r of rows) {
      this.sql.exec(
        `INSERT OR IGNORE INTO ended_episodes (episode_key, attempt, swarm, episode_uuid, task_id, global_step, reward, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        r.episodeKey, r.attempt, r.swarm, r.episodeUuid, r.taskId, r.globalStep, r.reward, r.atMs,
      );
    }
  }

  /** The ledger, oldest first; optionally one global step. `limit` rows from `offset` (edge/run/ledger-wipes). */
  endedEpisodes(query: { globalStep?: number; limit: number; offset: number }): EndedEpisode[] {
    return endedRows(this.sql, query);
  }

  /** Records one reported attempt (idempotent by episode key and attempt): the metrics export's rows. */
  recordAttempt(row: AttemptRow): void {
    this.sql.exec(`INSERT OR IGNORE INTO attempts (episode_key, attempt, window_index, at_ms, row) VALUES (?, ?, ?, ?, ?)`, row.episodeKey, row.attempt, row.windowIndex, row.atMs, JSON.stringify(row));
  }

  /** Reported attempts, oldest first; optionally of one 0-based window; `newest` = the last `limit` (newest first). */
  attempts(query: { windowIndex?: number; limit?: number; newest?: boolean } = {}): AttemptRow[] {
    const where = query.windowIndex === undefined ? "" : "WHERE window_index = ?";
    const args: SqlStorageValue[] = query.windowIndex === undefined ? [] : [query.windowIndex];
    const order = query.newest ? "DESC" : "ASC";
    return this.sql
      .exec<{ row: string }>(`SELECT row FROM attempts ${where} ORDER BY at_ms ${order}, episode_key ${order} LIMIT ?`, ...args, query.limit ?? -1)
      .toArray()
      .map((r) => JSON.parse(r.row) as AttemptRow);
  }

  /** Appends a log line and trims the log to {@link MAX_LOG_LINES}. */
  log(line: Omit<LogLine, "fields"> & { fields: Record<string, unknown> }): void {
    // per-episode keys never reach the run log (shown by GET /runs/:id), whatever carried them
    this.sql.exec(`INSERT INTO log (at_ms, level, message, fields) VALUES (?, ?, ?, ?)`, line.atMs, line.level, redactEpisodeKeys(line.message), redactEpisodeKeys(JSON.stringify(line.fields)));
    this.sql.exec(`DELETE FROM log WHERE id <= (SELECT max(id) FROM log) - ?`, MAX_LOG_LINES);
  }

  /** The newest `limit` log lines, oldest first. */
  logTail(limit = 50): LogLine[] {
    return this.sql
      .exec<{ at_ms: number; level: string; message: string; fields: string }>(`SELECT at_ms, level, message, fields FROM log ORDER BY id DESC LIMIT ?`, limit)
      .toArray()
      .reverse()
      .map((r) => ({ atMs: r.at_ms, level: r.level, message: r.message, fields: JSON.parse(r.fields) as LogLine["fields"] }));
  }
}
