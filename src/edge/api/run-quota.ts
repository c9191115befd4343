/**
 * @module edge/api/run-quota — `RunQuota`, a small Durable Object per API token (named by the token's principal, never
 * the token) that counts the runs the token has in flight, for `AJET_MAX_RUNS_IN_FLIGHT`. `POST /runs` admits a
 * run before creating it; the run's scheduler releases it when the run finishes. When the count is at the maximum,
 * the quota asks each listed run whether it is still going before refusing, so a lost release never locks a
 * token out.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../ground/env.ts";

/** The answer to {@link RunQuota.admit}. */
export type Admission = { ok: true; inFlight: number } | { ok: false; inFlight: number; max: number };

/** The runs in flight of one token. */
export class RunQuota extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, at_ms INTEGER NOT NULL)`);
  }

  #ids(): string[] {
    return this.ctx.storage.sql.exec<{ run_id: string }>(`SELECT run_id FROM runs ORDER BY at_ms`).toArray().map((r) => r.run_id);
  }

  /**
   * Admits `runId` when fewer than `max` runs are in flight (finished runs found on the way are dropped).
   * @returns ok with the new count, or not ok with the count and the maximum
   */
  async admit(runId: string, max: number): Promise<Admission> {
    let ids = this.#ids();
    if (ids.length >= max) {
      // a release may have been lost (a reset between finish and release): ask the runs themselves
      const live = await Promise.all(
        ids.map(async (id) => {
          try {
            const view = await this.env.SCHEDULER.get(this.env.SCHEDULER.idFromName(id)).status();
            return view !== null && view.phase !== "finished";
          } catch {
            return true; // unknown: keep counting it (fail closed)
          }
        }),
      );
      ids.forEach((id, i) => {
        if (!live[i]) this.ctx.storage.sql.exec(`DELETE FROM runs WHERE run_id = ?`, id);
      });
      ids = this.#ids();
    }
    if (ids.length >= max) return { ok: false, inFlight: ids.length, max };
    this.ctx.storage.sql.exec(`INSERT OR REPLACE INTO runs (run_id, at_ms) VALUES (?, ?)`, runId, Date.now());
    return { ok: true, inFlight: ids.length + 1 };
  }

  /** Forgets `runId` (it finished, or its creation failed). Idempotent. */
  release(runId: string): void {
    this.ctx.storage.sql.exec(`DELETE FROM runs WHERE run_id = ?`, runId);
  }

  /** The runs counted now (for tests and diagnostics). */
  inFlight(): string[] {
    return this.#ids();
  }
}
