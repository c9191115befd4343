/**
 * @module sandbox/memory-ledger — a run's sandbox ledger in memory, with the same pacing and rules as the run's
 * Durable Object: an intent is recorded before the create, a release closes the row, live = recorded and not
 * confirmed destroyed. For tests, the benchmark and `createTestContext`; the Worker's ledger is the run object's.
 */
import type { SandboxEnd, SandboxIntent, SandboxIntentAnswer, SandboxLedgerPort, SandboxRelease } from "../port/sandbox.ts";
import { freshPacer, paceIntent, type PacerState } from "./pacing.ts";

/** One sandbox as the memory ledger holds it. */
export interface MemoryLedgerRow extends SandboxIntent {
  recordedAtMs: number;
  releasedAtMs: number | null;
  end: SandboxEnd | null;
  seconds: number;
  commands: number;
  failure: string | null;
}

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
  readonly rows = new Map<string, MemoryLedgerRow>();
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
    let n = 0;
    for (const r of this.rows.values()) if (r.end !== "destroyed" && r.end !== "create_failed") n++;
    return n;
  }

  async sandboxIntent(intent: SandboxIntent): Promise<SandboxIntentAnswer> {
    if (this.rows.has(intent.sandboxId)) return { status: "go", delayMs: 0 }; // sent again: recorded already
    if (this.o.isCurrent && !this.o.isCurrent(intent.episodeKey, intent.attempt)) return { status: "stale", reason: "the attempt is over" };
    const { answer, state } = paceIntent(this.#pacer, { nowMs: this.#now(), live: this.live, maxLive: this.o.maxLive, createsPerSecond: this.o.createsPerSecond, u: this.#random() });
    this.#pacer = state;
    if (answer.status === "wait") {
      this.waits++;
      return answer;
    }
    this.rows.set(intent.sandboxId, { ...intent, recordedAtMs: this.#now(), releasedAtMs: null, end: null, seconds: 0, commands: 0, failure: null });
    this.peakLive = Math.max(this.peakLive, this.live);
    return answer;
  }

  async sandboxReleased(release: SandboxRelease): Promise<{ status: "applied" | "duplicate" | "unknown" }> {
    const row = this.rows.get(release.sandboxId);
    if (!row) return { status: "unknown" };
    if (row.end === "destroyed" || row.end === "create_failed") return { status: "duplicate" };
    row.end = release.end;
    row.releasedAtMs = this.#now();
    row.seconds = release.seconds;
    row.commands = release.commands;
    row.failure = release.failure ?? null;
    return { status: "applied" };
  }
}
