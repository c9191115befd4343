/**
 * @module edge/run/sandboxes — the run's sandbox ledger in its Durable Object (docs/design/sandboxes.md): one SQLite
 * row per sandbox, under the rules of sandbox/ledger. An intent (`sandboxIntent`) is answered only for the current
 * attempt, paced, and its row written before the consumer creates anything; a release closes the row; the alarm's
 * sweep destroys every sandbox whose attempt is over (ended, aborted, expired, given up on, dropped, run stopped or
 * finished) and whose destroy is not confirmed, through the Worker's backend, with a back-off until it is — whoever
 * noticed the attempt's end, the ledger is the one inventory (no backend lists its sandboxes: sandbox-sdk #803).
 */
import type { SandboxIntent, SandboxIntentAnswer, SandboxRelease } from "../../port/index.ts";
import { episodeSandboxConfig } from "../../port/sandbox.ts";
import type { SchedulerState } from "../../scheduler/index.ts";
import type { SandboxBackend } from "../../sandbox/backend.ts";
import { afterSweep, answerIntent, applyRelease, nextSweepAt, sandboxCounts, sweepDue, type SandboxCounts, type SandboxRow } from "../../sandbox/ledger.ts";
import { freshPacer, type PacerState } from "../../sandbox/pacing.ts";
import type { RunLog } from "../ground/log.ts";
import type { RunMeta } from "./storage.ts";

/** The most destroys one sweep sends (the rest wait for the next tick: a tick must stay short). */
export const SWEEP_BATCH = 25;
/** How long one sweep destroy may take before it counts as not confirmed, ms. */
export const SWEEP_DESTROY_TIMEOUT_MS = 15_000;

/** An attempt whose function may still run: its sandbox is not the sweep's yet. */
const FUNCTION_RUNNING = new Set(["dispatched", "running"]);

/** The sandboxes of one run. */
export class RunSandboxes {
  readonly #rows = new Map<string, SandboxRow>();
  #pacer: PacerState | null = null;
  #sweeping: Promise<void> | null = null;

  constructor(
    private readonly sql: SqlStorage,
    /** the Worker's sandbox backend (null: none configured, the sweep waits) */
    private readonly backend: () => SandboxBackend | null,
    private readonly log: RunLog,
  ) {
    sql.exec(`CREATE TABLE IF NOT EXISTS sandboxes (sandbox_id TEXT PRIMARY KEY, row TEXT NOT NULL)`);
    for (const r of sql.exec<{ row: string }>(`SELECT row FROM sandboxes`)) {
      const row = JSON.parse(r.row) as SandboxRow;
      this.#rows.set(row.sandboxId, row);
    }
  }

  #save(row: SandboxRow): void {
    this.#rows.set(row.sandboxId, row);
    this.sql.exec(`INSERT OR REPLACE INTO sandboxes (sandbox_id, row) VALUES (?, ?)`, row.sandboxId, JSON.stringify(row));
  }

  /** True when the attempt's function may still use its sandbox (the attempt is current and in flight). */
  static attemptRunning(state: SchedulerState, episodeKey: string, attempt: number): boolean {
    const e = state.episodes.get(episodeKey);
    return state.run.phase !== "finished" && e !== undefined && e.attempt === attempt && FUNCTION_RUNNING.has(e.status);
  }

  /**
   * Answers a consumer's intent: `stale` for an attempt that is not current or a run without sandboxes, else the
   * pacing's `go` (the row written first) or `wait`.
   */
  intent(state: SchedulerState, meta: RunMeta, intent: SandboxIntent, nowMs: number, u: number): SandboxIntentAnswer {
    if (this.#rows.has(intent.sandboxId)) return { status: "go", delayMs: 0 };
    const config = episodeSandboxConfig(meta.spec);
    if (!config) return { status: "stale", reason: "the run has no sandboxes" };
    if (!RunSandboxes.attemptRunning(state, intent.episodeKey, intent.attempt)) return { status: "stale", reason: "the attempt is over" };
    const window = state.episodes.get(intent.episodeKey)?.windowIndex ?? null;
    const r = answerIntent(this.#rows, this.#pacer ?? freshPacer(nowMs, config.createsPerSecond), intent, { nowMs, maxLive: config.maxLive, createsPerSecond: config.createsPerSecond, u, window });
    this.#pacer = r.pacer;
    if (r.row) this.#save(r.row);
    return r.answer;
  }

  /** An attempt's release: the row closed (or left to the sweep when its destroy was not confirmed). */
  released(release: SandboxRelease, nowMs: number): { status: "applied" | "duplicate" | "unknown" } {
    const row = this.#rows.get(release.sandboxId);
    if (!row) return { status: "unknown" };
    const next = applyRelease(row, release, nowMs);
    if (!next) return { status: "duplicate" };
    this.#save(next);
    if (release.end === "destroy_unconfirmed") this.log("warn", "a sandbox's destroy was not confirmed by its attempt; the sweep destroys it", { sandboxId: row.sandboxId });
    return { status: "applied" };
  }

  /**
   * One sweep pass (the alarm's): destroys up to {@link SWEEP_BATCH} due sandboxes at once; never throws, one pass
   * at a time.
   */
  sweep(state: SchedulerState, nowMs: number, random: () => number): Promise<void> {
    this.#sweeping ??= this.#sweepOnce(state, nowMs, random).finally(() => (this.#sweeping = null));
    return this.#sweeping;
  }

  async #sweepOnce(state: SchedulerState, nowMs: number, random: () => number): Promise<void> {
    const due = sweepDue(this.#rows.values(), (key, attempt) => !RunSandboxes.attemptRunning(state, key, attempt), nowMs).slice(0, SWEEP_BATCH);
    if (due.length === 0) return;
    const backend = this.backend();
    if (!backend) {
      this.log("warn", `${due.length} sandbox(es) wait to be destroyed, but this Worker has no sandbox backend configured`, {});
      for (const row of due) this.#save(afterSweep(row, false, nowMs, random()));
      return;
    }
    const sentAtMs = Date.now();
    await Promise.all(
      due.map(async (row) => {
        const confirmed = await backend.destroy(row.sandboxId, AbortSignal.timeout(SWEEP_DESTROY_TIMEOUT_MS)).then(
          () => true,
          (err: unknown) => {
            this.log("warn", "sandbox destroy failed; the sweep tries again", { sandboxId: row.sandboxId, error: String(err) });
            return false;
          },
        );
        // the row may have changed while the destroy was out (a release): apply to the latest, at the sweep's
        // clock plus the time the destroy took
        this.#save(afterSweep(this.#rows.get(row.sandboxId) ?? row, confirmed, nowMs + (Date.now() - sentAtMs), random()));
      }),
    );
  }

  /** When the alarm must fire for the sweep (epoch ms), or null when nothing waits. */
  nextWakeAt(state: SchedulerState, nowMs: number): number | null {
    const pending = [...this.#rows.values()].filter((r) => (r.state === "live" && !RunSandboxes.attemptRunning(state, r.episodeKey, r.attempt)) || r.recheck);
    return nextSweepAt(pending, nowMs);
  }

  /** The run's sandbox counts and seconds, in total and per window. */
  counts(nowMs: number): { total: SandboxCounts; byWindow: Record<string, SandboxCounts> } {
    return sandboxCounts(this.#rows.values(), nowMs);
  }

  /** True when the run ever had a sandbox. */
  get any(): boolean {
    return this.#rows.size > 0;
  }
}
