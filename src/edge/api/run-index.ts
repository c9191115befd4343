/**
 * @module edge/api/run-index — `RunIndex`, the registry of runs `GET /runs` pages (issue 8 §2): ONE object
 * (`idFromName("runs")`) with one SQLite row per run (id, function, created). It holds identity only; the live
 * fields of a listing (phase, engine, step, reward) are read from each run's own object, so nothing here goes
 * stale. `POST /runs` registers a run before creating it (a listed run whose object holds nothing shows as
 * `phase: "unknown"`).
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../ground/env.ts";

/** One registered run. `createdAtMs` is epoch ms. */
export interface IndexedRun {
  runId: string;
  function: string;
  createdAtMs: number;
}

/** A page of runs, newest first; `next` is the cursor of the following page (null on the last). */
export interface RunPage {
  runs: IndexedRun[];
  next: string | null;
}

/** The name of the one index object. */
export const RUN_INDEX_NAME = "runs";

/** The index object. */
export function runIndexStub(env: Env): DurableObjectStub<RunIndex> {
  return env.RUN_INDEX.get(env.RUN_INDEX.idFromName(RUN_INDEX_NAME));
}

/** Cursor text: `<createdAtMs>.<runId>` of the last row of a page. @returns null for a malformed cursor */
export function parseCursor(cursor: string): { createdAtMs: number; runId: string } | null {
  const m = /^(\d{1,16})\.([A-Za-z0-9_.:-]{1,128})$/.exec(cursor);
  return m ? { createdAtMs: Number(m[1]), runId: m[2]! } : null;
}

/** The registry of runs. RPC: `add`, `page`. */
export class RunIndex extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, function TEXT NOT NULL, created_at_ms INTEGER NOT NULL)`);
    ctx.storage.sql.exec(`CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created_at_ms DESC, run_id DESC)`);
  }

  /** Registers a run (idempotent by id). */
  add(run: IndexedRun): void {
    this.ctx.storage.sql.exec(`INSERT OR IGNORE INTO runs (run_id, function, created_at_ms) VALUES (?, ?, ?)`, run.runId, run.function, run.createdAtMs);
  }

  /**
   * Runs newest first (by created, then id), `limit` per page, after the cursor `after` (see {@link parseCursor}).
   * @param limit 1..100
   */
  page(query: { limit: number; after?: { createdAtMs: number; runId: string } | null }): RunPage {
    const limit = Math.max(1, Math.min(100, Math.floor(query.limit)));
    const after = query.after ?? null;
    const rows = (
      after
        ? this.ctx.storage.sql.exec<{ run_id: string; function: string; created_at_ms: number }>(
            `SELECT run_id, function, created_at_ms FROM runs WHERE (created_at_ms < ?) OR (created_at_ms = ? AND run_id < ?) ORDER BY created_at_ms DESC, run_id DESC LIMIT ?`,
            after.createdAtMs, after.createdAtMs, after.runId, limit + 1,
          )
        : this.ctx.storage.sql.exec<{ run_id: string; function: string; created_at_ms: number }>(
            `SELECT run_id, function, created_at_ms FROM runs ORDER BY created_at_ms DESC, run_id DESC LIMIT ?`,
            limit + 1,
          )
    ).toArray();
    const runs = rows.slice(0, limit).map((r) => ({ runId: r.run_id, function: r.function, createdAtMs: r.created_at_ms }));
    const last = runs[runs.length - 1];
    return { runs, next: rows.length > limit && last ? `${last.createdAtMs}.${last.runId}` : null };
  }
}
