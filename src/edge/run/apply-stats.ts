/**
 * @module edge/run/apply-stats — how long the Durable Object spends deciding and persisting each event (the pure
 * `decide` plus the SQLite transaction of its changed rows), kept in memory over the last
 * {@link APPLY_STATS_WINDOW} events, for `GET /runs/:id` (`scheduler`) and the load benchmark. Times come from
 * `performance.now()`, whose resolution inside workerd is coarse (whole milliseconds locally; on Cloudflare it
 * only advances on I/O, so there the figures read 0 — the benchmark measures in local workerd).
 */

/** Events kept for the quantiles. */
export const APPLY_STATS_WINDOW = 4096;

/** What `scheduler` in the status view says. Durations are milliseconds. */
export interface ApplyStatsView {
  /** events applied by this instance since it was loaded */
  events: number;
  /** decide + persist per event over the last {@link APPLY_STATS_WINDOW} events */
  decideAndPersistMs: { p50: number; p99: number; max: number; mean: number };
  /** events per second over the same window (wall time from its first to its last event) */
  eventsPerSecond: number;
}

/** A bounded record of per-event apply times. */
export class ApplyStats {
  #events = 0;
  readonly #ms: number[] = [];
  readonly #at: number[] = [];

  /** Records one event that took `ms` to decide and persist, applied at `atMs` (epoch ms). */
  record(ms: number, atMs: number): void {
    this.#events++;
    this.#ms.push(ms);
    this.#at.push(atMs);
    if (this.#ms.length > APPLY_STATS_WINDOW) {
      this.#ms.shift();
      this.#at.shift();
    }
  }

  view(): ApplyStatsView {
    const sorted = [...this.#ms].sort((a, b) => a - b);
    const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
    const spanS = ((this.#at.at(-1) ?? 0) - (this.#at[0] ?? 0)) / 1000;
    return {
      events: this.#events,
      decideAndPersistMs: { p50: q(0.5), p99: q(0.99), max: sorted.at(-1) ?? 0, mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length) },
      eventsPerSecond: spanS > 0 ? (this.#ms.length - 1) / spanS : 0,
    };
  }
}
