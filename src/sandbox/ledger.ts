/**
 * @module sandbox/ledger — the rules of a run's sandbox ledger, pure (the run's Durable Object keeps the rows in
 * SQLite and does the I/O; docs/design/sandboxes.md): an intent is answered by the pacing and recorded before
 * anything is created; a release closes the row; the sweep picks every row whose attempt is over and whose destroy
 * is not confirmed, and spaces its tries with a back-off until the backend confirms. A row the sweep destroyed
 * without its attempt ever releasing it is destroyed once more a little later (a create still in flight when the
 * first destroy went out would otherwise outlive it on a backend without tombstones). The counts and seconds per
 * window feed the run's status and figures.
 */
import type { SandboxEnd, SandboxIntent, SandboxIntentAnswer, SandboxRelease } from "../port/sandbox.ts";
import { backoffDelayMs, type BackoffPolicy } from "../util/backoff.ts";
import { paceIntent, type PacerState } from "./pacing.ts";

/** One sandbox in the run's ledger. Times are epoch ms. */
export interface SandboxRow {
  sandboxId: string;
  episodeKey: string;
  attempt: number;
  backend: string;
  instanceType: string;
  /** the run's window (0-based) the attempt belongs to, when known */
  window: number | null;
  recordedAtMs: number;
  /** `live`: may exist; `destroyed`: the backend confirmed it is gone */
  state: "live" | "destroyed";
  /** how it ended: the attempt's own word, or `swept` when the run's sweep destroyed it */
  end: SandboxEnd | "swept" | null;
  releasedAtMs: number | null;
  destroyedAtMs: number | null;
  /** seconds it may have been alive: from the intent to the confirmed destroy */
  seconds: number;
  commands: number;
  /** an infrastructure failure its attempt saw */
  failure: string | null;
  /** destroys the sweep sent */
  sweepTries: number;
  /** when the sweep may try it next (null: not before its attempt is over) */
  nextSweepAtMs: number | null;
  /** the sweep must destroy it once more at `nextSweepAtMs` (it destroyed it without a release) */
  recheck: boolean;
}

/** The sweep's back-off between destroys of one row: 2 s doubling to 30 s, ×0.5–1.5. */
export const SWEEP_BACKOFF: BackoffPolicy = { firstMs: 2_000, maxMs: 30_000, jitter: [0.5, 1.5] };
/** When the sweep destroys a row once more after destroying it without a release, ms. */
export const SWEEP_RECHECK_MS = 20_000;

/**
 * Answers an intent: a row already recorded answers `go` again (the intent was sent twice); a live-cap or rate
 * limit answers `wait`; else the row is recorded (returned) and the answer is `go` with the pacing's delay.
 * The caller answers `stale` itself for an attempt that is not current.
 */
export function answerIntent(
  rows: ReadonlyMap<string, SandboxRow>,
  pacer: PacerState,
  intent: SandboxIntent,
  o: { nowMs: number; maxLive: number; createsPerSecond: number; u: number; window: number | null },
): { answer: SandboxIntentAnswer; pacer: PacerState; row: SandboxRow | null } {
  if (rows.has(intent.sandboxId)) return { answer: { status: "go", delayMs: 0 }, pacer, row: null };
  const live = liveCount(rows.values());
  const paced = paceIntent(pacer, { nowMs: o.nowMs, live, maxLive: o.maxLive, createsPerSecond: o.createsPerSecond, u: o.u });
  if (paced.answer.status === "wait") return { answer: paced.answer, pacer: paced.state, row: null };
  const row: SandboxRow = {
    sandboxId: intent.sandboxId,
    episodeKey: intent.episodeKey,
    attempt: intent.attempt,
    backend: intent.backend,
    instanceType: intent.instanceType,
    window: o.window,
    recordedAtMs: o.nowMs,
    state: "live",
    end: null,
    releasedAtMs: null,
    destroyedAtMs: null,
    seconds: 0,
    commands: 0,
    failure: null,
    sweepTries: 0,
    nextSweepAtMs: null,
    recheck: false,
  };
  return { answer: paced.answer, pacer: paced.state, row };
}

/** Rows that may still exist on a backend (recorded and not confirmed destroyed). */
export function liveCount(rows: Iterable<SandboxRow>): number {
  let n = 0;
  for (const r of rows) if (r.state === "live") n++;
  return n;
}

/**
 * Applies an attempt's release: a confirmed destroy (or a failed create, destroyed after) closes the row; an
 * unconfirmed one leaves it to the sweep. @returns the new row, or null when it was closed already (a duplicate)
 */
export function applyRelease(row: SandboxRow, release: SandboxRelease, nowMs: number): SandboxRow | null {
  if (row.state === "destroyed" && row.releasedAtMs !== null) return null;
  const confirmed = release.end === "destroyed" || release.end === "create_failed";
  return {
    ...row,
    end: row.state === "destroyed" ? row.end : release.end,
    releasedAtMs: nowMs,
    commands: release.commands,
    failure: release.failure ?? row.failure,
    ...(confirmed ? { state: "destroyed" as const, destroyedAtMs: row.destroyedAtMs ?? nowMs, seconds: release.seconds, recheck: false } : { seconds: release.seconds, nextSweepAtMs: nowMs }),
  };
}

/**
 * The rows the sweep destroys now: live ones whose attempt is over and whose next try is due, and destroyed ones
 * due for their one recheck.
 * @param attemptOver whether the row's attempt is over (ended, aborted, expired, given up on, run stopped)
 */
export function sweepDue(rows: Iterable<SandboxRow>, attemptOver: (episodeKey: string, attempt: number) => boolean, nowMs: number): SandboxRow[] {
  const due: SandboxRow[] = [];
  for (const r of rows) {
    if (r.nextSweepAtMs !== null && r.nextSweepAtMs > nowMs) continue;
    if (r.state === "live" && attemptOver(r.episodeKey, r.attempt)) due.push(r);
    else if (r.state === "destroyed" && r.recheck) due.push(r);
  }
  return due;
}

/**
 * The row after one sweep destroy: confirmed → destroyed (with a recheck when no attempt released it), else the
 * next try after the back-off. @param u a uniform draw in [0, 1)
 */
export function afterSweep(row: SandboxRow, confirmed: boolean, nowMs: number, u: number): SandboxRow {
  if (!confirmed) {
    const tries = row.sweepTries + 1;
    return { ...row, sweepTries: tries, nextSweepAtMs: nowMs + backoffDelayMs(SWEEP_BACKOFF, tries, u) };
  }
  if (row.state === "destroyed") return { ...row, recheck: false, nextSweepAtMs: null, sweepTries: row.sweepTries + 1 };
  const unreleased = row.releasedAtMs === null;
  return {
    ...row,
    state: "destroyed",
    end: row.end === "destroy_unconfirmed" || row.end === null ? "swept" : row.end,
    destroyedAtMs: nowMs,
    seconds: Math.max(row.seconds, (nowMs - row.recordedAtMs) / 1000),
    sweepTries: row.sweepTries + 1,
    recheck: unreleased,
    nextSweepAtMs: unreleased ? nowMs + SWEEP_RECHECK_MS : null,
  };
}

/** When the sweep must look again: the earliest due try, or null when nothing is pending. */
export function nextSweepAt(rows: Iterable<SandboxRow>, nowMs: number): number | null {
  let at: number | null = null;
  for (const r of rows) {
    if (r.state === "destroyed" && !r.recheck) continue;
    const t = r.nextSweepAtMs ?? nowMs;
    at = at === null ? t : Math.min(at, t);
  }
  return at;
}

/** Sandbox counts and seconds: alive now, created (recorded), destroyed (confirmed), failed (an infrastructure failure or a failed create). */
export interface SandboxCounts {
  alive: number;
  created: number;
  destroyed: number;
  failed: number;
  /** seconds sandboxes were (or may have been) alive: intent → confirmed destroy, or → now for live ones */
  seconds: number;
}

/** The run's counts, and the same per window (`"none"` for rows without one). */
export function sandboxCounts(rows: Iterable<SandboxRow>, nowMs: number): { total: SandboxCounts; byWindow: Record<string, SandboxCounts> } {
  const zero = (): SandboxCounts => ({ alive: 0, created: 0, destroyed: 0, failed: 0, seconds: 0 });
  const total = zero();
  const byWindow: Record<string, SandboxCounts> = {};
  for (const r of rows) {
    const w = (byWindow[r.window === null ? "none" : String(r.window)] ??= zero());
    for (const c of [total, w]) {
      c.created++;
      if (r.state === "live") c.alive++;
      else c.destroyed++;
      if (r.failure !== null || r.end === "create_failed") c.failed++;
      c.seconds += r.state === "live" ? Math.max(r.seconds, (nowMs - r.recordedAtMs) / 1000) : r.seconds;
    }
  }
  const round = (c: SandboxCounts) => (c.seconds = Math.round(c.seconds * 10) / 10);
  round(total);
  Object.values(byWindow).forEach(round);
  return { total, byWindow };
}
