/**
 * @module scheduler/episode-index — what the core asks of the live episode rows on every event, kept per episode
 * table instead of scanned: the number of rows in each status, how many queued rows wait out a back-off, and a
 * lower bound of the earliest instant a row needs attention (a lease deadline or the end of a back-off). `decide`
 * updates it row by row as it writes (O(rows the event changes)); the scans that need every row (leases, back-offs)
 * run only once the clock reaches that bound, and recompute it exactly.
 *
 * The index is derived data, not part of the stored state: it is memoised per (immutable) episode table in a
 * WeakMap — a pure function's cache — and computed from the rows for a table it has not seen (a state rebuilt from
 * storage, or one a test built by hand).
 */
import type { EpisodeRow, EpisodeStatus, EpisodeTable } from "./state.ts";

/** Counts and bounds of one episode table. Instants are epoch ms. */
export interface EpisodeIndex {
  /** rows per status */
  counts: Record<EpisodeStatus, number>;
  /** queued rows with a pending back-off (`notBeforeMs` set) */
  backedOff: number;
  /**
   * at most the earliest `deadlineAtMs` of an in-flight row and `notBeforeMs` of a queued row (+Infinity when none): a lower
   * bound, exact right after {@link exactEarliestMs}; a write only ever lowers it, so it may sit below the truth
   */
  earliestMs: number;
}

const EMPTY_COUNTS: Readonly<Record<EpisodeStatus, number>> = { queued: 0, dispatched: 0, running: 0, reporting: 0, ended: 0, failed: 0, aborted: 0, dropped: 0 };
const memo = new WeakMap<EpisodeTable, EpisodeIndex>();

/** When a row needs the core next: an in-flight row's lease deadline, a queued row's back-off end (+Infinity: never). */
export function attentionAtMs(row: EpisodeRow): number {
  if (row.status === "queued") return row.notBeforeMs ?? Number.POSITIVE_INFINITY;
  if (row.status === "dispatched" || row.status === "running" || row.status === "reporting") return row.deadlineAtMs ?? Number.POSITIVE_INFINITY;
  return Number.POSITIVE_INFINITY;
}

/** Adds (`sign` 1) or removes (`sign` −1) one row's share of the counts (the bound is handled by the caller). */
export function countRow(index: EpisodeIndex, row: EpisodeRow, sign: 1 | -1): void {
  index.counts[row.status] += sign;
  if (row.status === "queued" && row.notBeforeMs !== null) index.backedOff += sign;
}

/** The exact earliest attention instant over `rows` (+Infinity when none). */
export function exactEarliestMs(rows: Iterable<EpisodeRow>): number {
  let at = Number.POSITIVE_INFINITY;
  for (const row of rows) at = Math.min(at, attentionAtMs(row));
  return at;
}

/**
 * The index of a table: the memoised one, else computed from its rows (O(n), once per table). An empty table is
 * never memoised: immutable's empty Map is one shared value, so a bound remembered for one run's emptied table would
 * become every fresh run's bound in the same isolate.
 */
export function episodeIndex(table: EpisodeTable): EpisodeIndex {
  if (table.size === 0) return { counts: { ...EMPTY_COUNTS }, backedOff: 0, earliestMs: Number.POSITIVE_INFINITY };
  let index = memo.get(table);
  if (!index) {
    index = { counts: { ...EMPTY_COUNTS }, backedOff: 0, earliestMs: Number.POSITIVE_INFINITY };
    for (const row of table.values()) {
      countRow(index, row, 1);
      index.earliestMs = Math.min(index.earliestMs, attentionAtMs(row));
    }
    memo.set(table, index);
  }
  return index;
}

/** Records `index` as the index of `table` (the Draft's incrementally maintained one, for the table it produced). */
export function rememberIndex(table: EpisodeTable, index: EpisodeIndex): void {
  memo.set(table, index); // never read back for the shared empty table (see episodeIndex)
}

/** A copy the caller may change. */
export function copyIndex(index: EpisodeIndex): EpisodeIndex {
  return { counts: { ...index.counts }, backedOff: index.backedOff, earliestMs: index.earliestMs };
}

/** Dispatched + running + reporting: the rows that hold one of the `maxParallel` slots. */
export function inFlightCount(index: EpisodeIndex): number {
  return index.counts.dispatched + index.counts.running + index.counts.reporting;
}
