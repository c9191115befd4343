/**
 * @module scheduler/failure-streak — a plain bug in a rollout function fails every attempt the same way; the run
 * stops early instead of burning `maxAttempts` tries on every task. Each failed attempt with a `detail` (the
 * error's name, message and first stack frames, recorded with the abort outcome) extends or restarts the streak;
 * the first one is kept as the run's `firstFailure` (shown by the status and the CLI). Pure.
 */
import { AbortCause } from "../port/index.ts";

/** Failed attempts in a row with the same error, before any episode ended, that stop the run (`functionError`). */
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
 */
export function noteFailedAttempt(run: FailureRecord, cause: string, detail: string | undefined, nowMs: number): void {
  if (detail && !run.firstFailure) run.firstFailure = { cause, detail, atMs: nowMs };
  if (!detail || !STREAK_CAUSES.has(cause)) return;
  const same = run.failureStreak && signature(run.failureStreak.detail) === signature(detail);
  run.failureStreak = same ? { detail: run.failureStreak!.detail, count: run.failureStreak!.count + 1 } : { detail, count: 1 };
}

/** True when the run should stop: {@link DETERMINISTIC_FAILURE_ATTEMPTS} identical function errors and nothing ended yet. */
export function isDeterministicFailure(run: FailureRecord): boolean {
  return run.totals.episodesEnded === 0 && (run.failureStreak?.count ?? 0) >= DETERMINISTIC_FAILURE_ATTEMPTS;
}
