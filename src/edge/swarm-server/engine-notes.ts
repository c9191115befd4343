/**
 * @module edge/swarm-server/engine-notes — what a swarm server's object tells its runs, pure (part of
 * edge/swarm-server/engine-watch.ts): each run's observation and the note that says in plain words what the engine
 * means for it, which runs must hear of a change, and the watcher's pace for the runs on the server (the quickest and
 * strictest of their settings, edge/swarm-server/swarm-watch.ts). Instants are inputs (epoch ms).
 */
import { ENGINE } from "../../protocol/index.ts";
import type { EngineNote, EngineObservation } from "./engine-note.ts";
import type { Seen, Subscriber, WatchState } from "./engine-state.ts";
import { DEFAULT_WATCH_TIMING, freshBucket, nextPollAtMs, type PollBucket, type WatchTiming } from "./swarm-watch.ts";

/** The quickest / strictest watcher settings of the runs on this server. */
export function watchTimingOf(subs: readonly Pick<Subscriber, "pollQuickMs" | "pollSlowMs" | "maxPollsPerMinute">[]): WatchTiming {
  const min = (values: (number | undefined)[], fallback: number) => values.reduce<number>((m, v) => (v !== undefined && v < m ? v : m), fallback);
  const quickMs = min(subs.map((s) => s.pollQuickMs), DEFAULT_WATCH_TIMING.quickMs);
  const slowMs = Math.max(quickMs, min(subs.map((s) => s.pollSlowMs), DEFAULT_WATCH_TIMING.slowMs));
  const maxPollsPerMinute = min(subs.map((s) => s.maxPollsPerMinute), DEFAULT_WATCH_TIMING.maxPollsPerMinute);
  return { ...DEFAULT_WATCH_TIMING, quickMs, slowMs, bootingMs: Math.min(DEFAULT_WATCH_TIMING.bootingMs, slowMs), maxPollsPerMinute, burst: Math.min(DEFAULT_WATCH_TIMING.burst, maxPollsPerMinute) };
}

/**
 * The observation a run gets: the core's `engineStatusSeen` fields, the restart count and its note.
 * @param s the run's subscriber (`state.subs[runId]`)
 */
export function observationFor(state: WatchState, s: Subscriber, nowMs: number): EngineObservation {
  const { seen } = state;
  return { swarm: s.swarm, engineStatus: seen.engineStatus, globalStep: seen.globalStep, seenAtMs: seen.seenAtMs, restarts: seen.restarts, note: noteFor(s, state, nowMs) };
}

/**
 * What the engine means for one run, in plain words (edge/swarm-server/engine-note.ts `EngineNote`): failed, the
 * server unreachable, this object starting it, booting (with the run's timeout), OFFLINE after it ran (stopped
 * elsewhere), OFFLINE with a run that never starts it (waiting for a start), or ok.
 */
export function noteFor(s: Subscriber, state: Pick<WatchState, "seen" | "boot">, nowMs: number): EngineNote {
  const { seen, boot } = state;
  if (s.failed !== null) return { kind: "failed", message: s.failed };
  if (seen.lastError !== null) return { kind: "unreachable", error: seen.lastError };
  if (boot.phase === "starting") return { kind: "starting", sinceMs: boot.sinceMs ?? nowMs };
  if (seen.engineStatus === ENGINE.BOOTING || boot.phase === "booting") {
    const since = boot.sinceMs ?? seen.changedAtMs ?? nowMs;
    return { kind: "booting", sinceMs: since, timeoutAtMs: since + s.bootTimeoutSeconds * 1000 };
  }
  if (seen.engineStatus === ENGINE.OFFLINE) {
    if (s.sawRolling || (seen.stoppedElsewhereAtMs !== null && s.start === "never")) return { kind: "stoppedElsewhere", atMs: seen.stoppedElsewhereAtMs ?? seen.seenAtMs ?? nowMs };
    if (s.start === "never") return { kind: "waitingForStart" };
  }
  return { kind: "ok" };
}

/**
 * Which runs must hear of a change (all but `except`): every run when the status, step or restart count changed,
 * else the runs whose note is not the one they last heard (`lastNotes`, by run).
 * @returns the runs to tell and the notes to remember (every run's, as it stands now)
 */
export function changedRuns(before: Seen, state: WatchState, lastNotes: Readonly<Record<string, string>>, except: string | null, nowMs: number): { runIds: string[]; notes: Record<string, string> } {
  const { seen } = state;
  const statusChanged = before.engineStatus !== seen.engineStatus || before.globalStep !== seen.globalStep || before.restarts !== seen.restarts;
  const runIds: string[] = [];
  const notes: Record<string, string> = {};
  for (const s of Object.values(state.subs)) {
    const note = noteFor(s, state, nowMs);
    // a booting note's timeout depends on the run: what it heard is the start, not its own deadline
    const key = JSON.stringify(note.kind === "booting" ? { kind: "booting", sinceMs: note.sinceMs } : note);
    notes[s.runId] = key;
    if (s.runId !== except && (statusChanged || lastNotes[s.runId] !== key)) runIds.push(s.runId);
  }
  return { runIds, notes };
}

/**
 * When the watcher polls next after a poll at `nowMs`: the pace of the runs still live (not failed), with the end of
 * the current status expected when it lasted some time the last time (`seen.dwellMs`), delayed until the poll budget holds a token (edge/swarm-server/swarm-watch.ts); null when no live run is left (the watcher sleeps
 * until the next subscribe).
 * @param bucket the poll budget (kept in the object's memory; null: a full one)
 */
export function nextWatchAtMs(state: WatchState, bucket: PollBucket | null, nowMs: number): number | null {
  const live = Object.values(state.subs).filter((s) => s.failed === null);
  if (live.length === 0) return null;
  const timing = watchTimingOf(live);
  const expect = live.map((s) => s.expectEdgeUntilMs ?? 0).reduce((a, b) => Math.max(a, b), 0);
  const { seen } = state;
  const dwell = seen.dwellMs?.[seen.engineStatus];
  const expectedChangeAtMs = dwell !== undefined && seen.statusSinceMs != null ? seen.statusSinceMs + dwell : null;
  const view = { engineStatus: seen.engineStatus, changedAtMs: seen.changedAtMs, expectEdgeUntilMs: expect || null, booting: state.boot.phase !== "idle", expectedChangeAtMs };
  return nextPollAtMs(view, bucket ?? freshBucket(timing, nowMs), timing, nowMs);
}
