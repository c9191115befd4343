/**
 * @module edge/swarm-server/swarm-watch — the adaptive schedule of the one status watcher of a swarm server (issue 11 §3), pure:
 * time is an input. Quick polls around the edges it expects (a status just changed; ROLLING_POST / WEIGHT_SYNCING,
 * which always lead back to ROLLING; a run said its batch window is complete, so ROLLING → ROLLING_POST is due),
 * a middle pace while BOOTING, slow otherwise — and never more than `maxPollsPerMinute` polls in any 60 s (a token
 * bucket whose burst is part of that bound). Paced by what the engine can do next (issue 23): when the status is
 * known to have lasted some time the last time (a weight sync, a rollout), the quick polls begin `leadMs` before that
 * much time has passed again, and until then the watcher polls at most every `pacedMaxMs`.
 */
import { ENGINE } from "../../protocol/index.ts";

/** The watcher's timing. Milliseconds unless named otherwise. */
export interface WatchTiming {
  /** interval around an expected edge */
  quickMs: number;
  /** interval while BOOTING (a real boot takes minutes: no need for the quick pace) */
  bootingMs: number;
  /** interval when no edge is expected (ROLLING mid-batch, OFFLINE waiting for someone else) */
  slowMs: number;
  /** how long after a status change the watcher stays quick (the next edge often follows, e.g. POST → SYNC → ROLLING) */
  edgeBurstMs: number;
  /** polls in any 60 s window, at most (burst included) */
  maxPollsPerMinute: number;
  /** bucket size: polls that may come back to back before the refill rate applies */
  burst: number;
  /** near an edge whose time is expected (the status lasted this long the last time): quick polls begin this long before it */
  leadMs: number;
  /** near an edge whose time is expected, the longest interval before the quick polls begin */
  pacedMaxMs: number;
}

/** Defaults for a real server: 250 ms near edges, 2 s while booting, 5 s otherwise, ≤ 120 polls per minute. */
export const DEFAULT_WATCH_TIMING: WatchTiming = {
  quickMs: 250,
  bootingMs: 2_000,
  slowMs: 5_000,
  edgeBurstMs: 10_000,
  maxPollsPerMinute: 120,
  burst: 20,
  leadMs: 1_000,
  pacedMaxMs: 2_000,
};

/** A token bucket of polls: `tokens` available at instant `atMs` (epoch ms). */
export interface PollBucket {
  tokens: number;
  atMs: number;
}

/** What the schedule looks at. Instants are epoch ms. */
export interface WatchView {
  /** last status seen (a server status, `ENGINE.CANNOT_CONNECT` or `unknown`) */
  engineStatus: string;
  /** when the status (or global step) last changed, null before the first poll */
  changedAtMs: number | null;
  /** a run expects an edge (its window is complete) until this instant, else null */
  expectEdgeUntilMs: number | null;
  /** an engine start this watcher made is in progress (BOOTING expected to end) */
  booting: boolean;
  /** when the current status is expected to end (it lasted this long the last time), null when not known */
  expectedChangeAtMs?: number | null;
}

const LEADS_TO_ROLLING = new Set<string>([ENGINE.ROLLING_POST, ENGINE.WEIGHT_SYNCING]);

/** Refill rate in tokens per ms: what the bucket may add in 60 s is `maxPollsPerMinute − burst`. */
function refillPerMs(t: WatchTiming): number {
  return Math.max(1, t.maxPollsPerMinute - t.burst) / 60_000;
}

/** A full bucket at `nowMs`. */
export function freshBucket(t: WatchTiming, nowMs: number): PollBucket {
  return { tokens: Math.max(1, Math.min(t.burst, t.maxPollsPerMinute)), atMs: nowMs };
}

/** The bucket refilled up to `nowMs` (never above its size). */
export function refill(b: PollBucket, t: WatchTiming, nowMs: number): PollBucket {
  const size = Math.max(1, Math.min(t.burst, t.maxPollsPerMinute));
  return { tokens: Math.min(size, b.tokens + Math.max(0, nowMs - b.atMs) * refillPerMs(t)), atMs: Math.max(b.atMs, nowMs) };
}

/** The bucket after one poll at `nowMs`. @throws Error when no token is available (the caller polled too early) */
export function spend(b: PollBucket, t: WatchTiming, nowMs: number): PollBucket {
  const r = refill(b, t, nowMs);
  if (r.tokens < 1 - 1e-9) throw new Error("poll budget exhausted: schedule with nextPollAtMs");
  return { tokens: r.tokens - 1, atMs: r.atMs };
}

/** Spends a token; a poll a subscribe needed at once may overdraw by one (the schedule then waits longer). */
export function spendOrOverdraw(b: PollBucket, t: WatchTiming, nowMs: number): PollBucket {
  const r = refill(b, t, nowMs);
  return r.tokens >= 1 ? spend(r, t, nowMs) : { tokens: r.tokens - 1, atMs: r.atMs };
}

/** The interval the view asks for, before the rate bound: quick, booting or slow. */
export function desiredIntervalMs(v: WatchView, t: WatchTiming, nowMs: number): number {
  // a run said the edge is due (its window is complete): quick, whatever the last time said
  if (v.expectEdgeUntilMs !== null && nowMs < v.expectEdgeUntilMs) return t.quickMs;
  const nearEdge = LEADS_TO_ROLLING.has(v.engineStatus) || (v.changedAtMs !== null && nowMs - v.changedAtMs < t.edgeBurstMs);
  if (nearEdge) {
    // an edge whose time is known from the last time: wait for it at a slower pace until `leadMs` before it
    const paced = v.expectedChangeAtMs == null ? 0 : v.expectedChangeAtMs - t.leadMs - nowMs;
    return paced > t.quickMs ? Math.min(paced, t.pacedMaxMs) : t.quickMs;
  }
  if (v.engineStatus === ENGINE.BOOTING || v.booting) return t.bootingMs;
  return t.slowMs;
}

/**
 * The instant of the next poll after one at `lastPollAtMs`: the desired interval, delayed until the bucket holds a
 * token again. Over any 60 s this admits at most `maxPollsPerMinute` polls.
 */
export function nextPollAtMs(v: WatchView, bucket: PollBucket, t: WatchTiming, lastPollAtMs: number): number {
  const wanted = lastPollAtMs + desiredIntervalMs(v, t, lastPollAtMs);
  const b = refill(bucket, t, lastPollAtMs);
  if (b.tokens >= 1) return wanted;
  const untilToken = Math.ceil((1 - b.tokens) / refillPerMs(t));
  return Math.max(wanted, lastPollAtMs + untilToken);
}
