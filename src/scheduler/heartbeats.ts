/**
 * @module scheduler/heartbeats — stalls measured in seconds (issue 10 §9). An episode's invocation reports that it
 * started (before it claims) and, while its function runs, that it is alive (`episodeHeartbeat`). The leases that
 * follow (scheduler/leases expires them):
 *  - a dispatch nobody reported starting gets the short **un-started lease** (`dispatchStartLeaseSeconds`, 15 s,
 *    doubling with each such expiry in a row, at most `dispatchLeaseSeconds`): a queue message lost with a workerd
 *    crash is sent again within seconds, not after 300 s. Sending it again is safe: a late invocation of the old
 *    message is told `stale` (its dispatch id is no longer current) at its start or at its claim report, so at most
 *    one claim per dispatch ever runs;
 *  - a started dispatch keeps the long dispatch lease (the claim budget and timeout, checked at creation);
 *  - a running episode gets the **heartbeat lease** (`heartbeatLeaseSeconds`, 30 s) from its claim and from each
 *    heartbeat, never past the run lease from its claim: a consumer that died mid-episode is reconciled (its claims
 *    aborted once, the attempt failed `lease_expired`, retried) within seconds instead of 8 × the discard timeout.
 *    A late report of a consumer given up on is stale (its attempt is closed): it is never ended twice. A
 *    consumer that can pay for no more beats says so once (stage `quiet`): its episode is back on the run lease.
 * The short leases apply once a consumer of the run reported a start (`RunRow.consumersHeartbeat`): a consumer that
 * never heartbeats keeps the long leases. Pure: time is the decision's `nowMs`.
 */
import type { EventAck } from "../port/index.ts";
import type { Draft } from "./draft.ts";
import type { EpisodeHeartbeat } from "./events.ts";
import { isRow, lookupDispatch } from "./episode-lifecycle.ts";
import { resolveGroupIfDone } from "./task-groups.ts";
import { runningDeadlineAtMs } from "./lease-deadlines.ts";
import { heartbeatTiming } from "./tuning.ts";

const APPLIED: EventAck = { status: "applied" };

/**
 * `episodeHeartbeat`. Stage `started`: a dispatched row's invocation is alive — it keeps the long dispatch lease
 * from its dispatch (and the run's consumers are known to heartbeat). While the run drains the dispatch is dropped
 * and answered stale (the consumer skips it: no claim to abort). Stage `running`: a running row's lease moves to
 * the heartbeat lease from now; stage `quiet` (the last beat) back to the run lease from its claim. Only the message whose dispatch is current counts; anything else is `stale` (the
 * consumer stops) or `duplicate` (nothing to move: the outcome is recorded and the report lease applies, or the
 * claim of a function started early is still being reported).
 */
export function onEpisodeHeartbeat(d: Draft, e: EpisodeHeartbeat): EventAck {
  const row = lookupDispatch(d, e);
  if (!isRow(row)) return row;
  if (e.stage === "started") {
    if (row.status === "running" || row.status === "reporting") return { status: "duplicate" };
    if (row.status !== "dispatched") return { status: "stale", reason: `episode is ${row.status}: this dispatch expired and is sent again` };
    if (d.run.phase === "draining") {
      d.patchEpisode(row.episodeKey, { status: "dropped", deadlineAtMs: null, lastCause: "stopped" });
      resolveGroupIfDone(d, row.groupKey);
      return { status: "stale", reason: "the run is stopping: do not claim" };
    }
    if (d.run.consumersHeartbeat !== true) tightenUnstarted(d, row.episodeKey);
    d.run.consumersHeartbeat = true;
    const dispatchedAtMs = row.dispatchedAtMs ?? d.nowMs;
    d.patchEpisode(row.episodeKey, {
      startedAtMs: d.nowMs, heartbeatAtMs: d.nowMs, unstartedExpiries: 0,
      deadlineAtMs: dispatchedAtMs + d.run.config.timing.dispatchLeaseSeconds * 1000,
    });
    return APPLIED;
  }
  // the outcome is recorded (the report lease applies), or the claim is still being reported (a function started
  // early, runtime/episode-runner): nothing to move, and nothing to stop either — the claim answer decides
  if (row.status === "reporting" || row.status === "dispatched") return { status: "duplicate" };
  if (row.status !== "running") return { status: "stale", reason: `episode is ${row.status}, not running` };
  d.run.consumersHeartbeat = true;
  const claimedAtMs = row.claimedAtMs ?? null;
  // a row claimed before claims were timed keeps its run lease; only the heartbeat is noted. A quiet consumer sends
  // no more beats: the run lease from its claim bounds it again
  const deadlineAtMs = claimedAtMs === null
    ? row.deadlineAtMs
    : e.stage === "quiet" ? claimedAtMs + d.run.config.timing.runLeaseSeconds * 1000 : runningDeadlineAtMs(d, claimedAtMs);
  d.patchEpisode(row.episodeKey, { heartbeatAtMs: d.nowMs, deadlineAtMs });
  return APPLIED;
}

/**
 * The run's first start report: its consumers heartbeat, so the dispatches sent before it (given the long dispatch
 * lease, as nobody was known to report starts) that have not reported their start get the un-started lease from their
 * dispatch too, as later dispatches do: an invocation lost or stuck before its start (a busy machine, a crashed
 * workerd) is sent again within seconds, not after the dispatch lease. Once per run (the flag is kept).
 */
function tightenUnstarted(d: Draft, except: string): void {
  const { startLeaseSeconds } = heartbeatTiming(d.run.config.timing);
  for (const r of d.rows()) {
    if (r.status !== "dispatched" || r.episodeKey === except || (r.startedAtMs ?? null) !== null || r.dispatchedAtMs === null) continue;
    const deadlineAtMs = Math.max(d.nowMs, r.dispatchedAtMs + startLeaseSeconds * 1000);
    if (r.deadlineAtMs === null || deadlineAtMs < r.deadlineAtMs) d.patchEpisode(r.episodeKey, { deadlineAtMs });
  }
}
