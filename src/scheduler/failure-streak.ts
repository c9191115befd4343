/**
 * @module scheduler/failure-streak — a plain bug in a rollout function fails every attempt the same way; the run
 * stops early instead of burning `maxAttempts` tries on every task. Each failed attempt with a `detail` (the
 * error's name, message and first stack frames, recorded with the abort outcome) extends or restarts the streak;
 * the first one is kept as the run's `firstFailure` (shown by the status and the CLI). Pure.
 */
import { AbortCause } from "../port/index.ts";

/**
 * Failed attempts in a row with the same error, before any episode ended, that stop the run (`functionError`); at
 * least one of them must be a retry (attempt ≥ 2) of a repeat that already failed: a plain bug fails its retries
 * too, while a function that fails on some episodes only (a flaky tool, a hard task) usually passes on the retry.
 */
export const DETERMINISTIC_FAILURE_ATTEMPTS = 3;

/** The causes a streak counts: the function's own errors (not infrastructure, not the model's answers). */
const STREAK_CAUSES: ReadonlySet<string> = new Set([AbortCause.functionError]);

/** The first failure of a run: its cause, detail (with file:line) and when it was recorded (epoch ms). */
export interface FirstFailure {
  cause: string;
  detail: string;
  atMs: number;
}

/** The streak of identical function errors: the error's detail (stack frames are part of it) and its length. */
export interface FailureStreak {
  detail: string;
  count: number;
  /** how many of them were retries (attempt ≥ 2); absent in older rows */
  retries?: number;
}

/** What a streak reads and writes of the run's row (scheduler/state `RunRow`). */
export interface FailureRecord {
  firstFailure?: FirstFailure | null;
  failureStreak?: FailureStreak | null;
  totals: { episodesEnded: number };
}

/** The signature two failures share: the detail without the numbers that vary per episode (ids, line columns kept). */
function signature(detail: string): string {
  return detail.replace(/[0-9a-f]{32}/g, "<uuid>");
}

/**
 * Records one failed attempt in `run` (mutates `firstFailure` and `failureStreak`).
 * @param detail the abort outcome's detail, if the function threw
 * @param attempt the failed attempt's number (1-based)
 */
export function noteFailedAttempt(run: FailureRecord, cause: string, detail: string | undefined, nowMs: number, attempt = 1): void {
  if (detail && !run.firstFailure) run.firstFailure = { cause, detail, atMs: nowMs };
  if (!detail || !STREAK_CAUSES.has(cause)) return;
  const retry = attempt > 1 ? 1 : 0;
  const streak = run.failureStreak;
  run.failureStreak = streak && signature(streak.detail) === signature(detail)
    ? { detail: streak.detail, count: streak.count + 1, retries: (streak.retries ?? 0) + retry }
    : { detail, count: 1, retries: retry };
}

/**
 * True when the run should stop: {@link DETERMINISTIC_FAILURE_ATTEMPTS} identical function errors (a retry among
 * them) and nothing ended yet — not even an end recorded but not yet reported (its reward may already be on the server: the function works
 * on some tasks, and stopping now would leave that reward in a batch that never trains).
 * @param endRecorded a live episode of the run has recorded an `end` outcome (or ended)
 */
export function isDeterministicFailure(run: FailureRecord, endRecorded = false): boolean {
  const streak = run.failureStreak;
  return !endRecorded && run.totals.episodesEnded === 0 && (streak?.count ?? 0) >= DETERMINISTIC_FAILURE_ATTEMPTS && (streak?.retries ?? 0) >= 1;
}
