/**
 * @module sandbox/memory-ledger — a run's sandbox ledger in memory, over the same rules as the run's Durable
 * Object (sandbox/ledger): an intent is recorded before the create, a release closes the row, the sweep destroys
 * what an attempt left. For tests, the benchmark and `testSandbox`; the Worker's ledger is the run object's.
 */
import type { SandboxIntent, SandboxIntentAnswer, SandboxLedgerPort, SandboxRelease } from "../port/sandbox.ts";
import type { SandboxBackend } from "./backend.ts";
import { afterSweep, answerIntent, applyRelease, liveCount, sweepDue, type SandboxRow } from "./ledger.ts";
import { freshPacer, type PacerState } from "./pacing.ts";

/** Options of {@link MemorySandboxLedger}. */
export interface MemoryLedgerOptions {
  maxLive: number;
  createsPerSecond: number;
  now?: () => number;
  random?: () => number;
  /** answers `stale` for an attempt that is over (default: every attempt is current) */
  isCurrent?: (episodeKey: string, attempt: number) => boolean;
}

/** The ledger of one run, in memory. */
export class MemorySandboxLedger implements SandboxLedgerPort {
  readonly rows = new Map<string, SandboxRow>();
  /** the most rows live at once */
  peakLive = 0;
  /** intents answered `wait` */
  waits = 0;
  #pacer: PacerState;
  readonly #now: () => number;
  readonly #random: () => number;

  constructor(private readonly o: MemoryLedgerOptions) {
    this.#now = o.now ?? Date.now;
    this.#random = o.random ?? Math.random;
    this.#pacer = freshPacer(this.#now(), o.createsPerSecond);
  }

  /** Rows recorded and not confirmed destroyed. */
  get live(): number {
    return liveCount(this.rows.values());
  }

  async sandboxIntent(intent: SandboxIntent): Promise<SandboxIntentAnswer> {
    if (!this.rows.has(intent.sandboxId) && this.o.isCurrent && !this.o.isCurrent(intent.episodeKey, intent.attempt)) return { status: "stale", reason: "the attempt is over" };
    const r = answerIntent(this.rows, this.#pacer, intent, { nowMs: this.#now(), maxLive: this.o.maxLive, createsPerSecond: this.o.createsPerSecond, u: this.#random(), window: null });
    this.#pacer = r.pacer;
    if (r.answer.status === "wait") this.waits++;
    if (r.row) this.rows.set(r.row.sandboxId, r.row);
    this.peakLive = Math.max(this.peakLive, this.live);
    return r.answer;
  }

  async sandboxReleased(release: SandboxRelease): Promise<{ status: "applied" | "duplicate" | "unknown" }> {
    const row = this.rows.get(release.sandboxId);
    if (!row) return { status: "unknown" };
    const next = applyRelease(row, release, this.#now());
    if (!next) return { status: "duplicate" };
    this.rows.set(row.sandboxId, next);
    return { status: "applied" };
  }

  /**
   * One sweep pass: destroys, through `backend`, every row whose attempt is over and is not confirmed destroyed.
   * @returns how many destroys were confirmed
   */
  async sweep(backend: SandboxBackend, attemptOver: (episodeKey: string, attempt: number) => boolean): Promise<number> {
    let confirmed = 0;
    for (const row of sweepDue(this.rows.values(), attemptOver, this.#now())) {
      const ok = await backend.destroy(row.sandboxId).then(() => true, () => false);
      if (ok) confirmed++;
      this.rows.set(row.sandboxId, afterSweep(row, ok, this.#now(), this.#random()));
    }
    return confirmed;
  }
}
