/**
 * @module edge/run/engine-timeline — the engine statuses a run saw change, per swarm, with the instant of the poll
 * that saw each (one small row per change: a few per training step). The metrics' step time split (rollout,
 * waiting for the trainer, weight sync: edge/run/board/signals `stepTime`) reads the first swarm's.
 */
import type { EngineMark } from "./board/signals.ts";

const SCHEMA = `CREATE TABLE IF NOT EXISTS engine_timeline (id INTEGER PRIMARY KEY AUTOINCREMENT, swarm TEXT NOT NULL, at_ms INTEGER NOT NULL, status TEXT NOT NULL)`;

/** Marks kept per run (the oldest go first): far more than a run's steps × statuses. */
export const MAX_MARKS = 20_000;

/** The run's engine timeline in its object's SQLite storage. */
export class EngineTimeline {
  /** the last status recorded per swarm (loaded on first use) */
  readonly #last = new Map<string, string>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
  }

  /** Records `status` of `swarm` seen at `atMs` (epoch ms) when it differs from the last one recorded. */
  seen(swarm: string, status: string, atMs: number | null): void {
    if (atMs === null) return;
    if (!this.#last.has(swarm)) {
      const row = this.sql.exec<{ status: string }>(`SELECT status FROM engine_timeline WHERE swarm = ? ORDER BY id DESC LIMIT 1`, swarm).toArray()[0];
      if (row) this.#last.set(swarm, row.status);
    }
    if (this.#last.get(swarm) === status) return;
    this.#last.set(swarm, status);
    this.sql.exec(`INSERT INTO engine_timeline (swarm, at_ms, status) VALUES (?, ?, ?)`, swarm, atMs, status);
    this.sql.exec(`DELETE FROM engine_timeline WHERE id <= (SELECT max(id) FROM engine_timeline) - ?`, MAX_MARKS);
  }

  /** The changes of `swarm`, oldest first. */
  marks(swarm: string): EngineMark[] {
    return this.sql
      .exec<{ at_ms: number; status: string }>(`SELECT at_ms, status FROM engine_timeline WHERE swarm = ? ORDER BY id`, swarm)
      .toArray()
      .map((r) => ({ atMs: r.at_ms, status: r.status }));
  }
}
