/**
 * @module scheduler/dispatch — turning queued episodes into queue messages: only through an open engine gate
 * (BC-25), never more than `maxParallel` in flight, slots reserved in the same step (BC-47), groups in order, and
 * the claim back-off with jitter from the run's seeded RNG.
 */
import type { EpisodeDispatch } from "./commands.ts";
import type { Draft } from "./draft.ts";
import { backoffDelayMs } from "../util/backoff.ts";
import { nextRandom } from "./rng.ts";
import type { EpisodeRow } from "./state.ts";
import { inFlightCount } from "./episode-index.ts";
import { heartbeatTiming, type SchedulerTiming } from "./tuning.ts";
import { dispatchDeadlineAtMs } from "./lease-deadlines.ts";

/** The delay is multiplied by a factor in this range: up to 25 % is added as jitter (openai-node uses 25 %). */
const JITTER: readonly [number, number] = [1, 1.25];
const NOT_ROLLING_KINDS = new Set(["syncing", "postRolling", "notReady", "other", "deadline"]);

/**
 * Back-off before re-dispatching after a claim (or dispatch) failure: base × 2^(failures−1), capped, plus up to 25 %
 * jitter. Base: `claimRetryMs` (2 s) for "No available episodes" and dispatch failures, `claimRetryNotRollingMs`
 * (15 s) when the engine was not ROLLING or a multi-swarm deadline passed (spec §8.3; the ROLLING edge releases it).
 * @param failures consecutive failures of this attempt, ≥ 1
 * @returns `[delayMs, nextRngState]`
 */
export function claimBackoffMs(timing: SchedulerTiming, kind: string, failures: number, rngState: number): readonly [number, number] {
  const firstMs = NOT_ROLLING_KINDS.has(kind) ? timing.claimRetryNotRollingMs : timing.claimRetryMs;
  const [u, next] = nextRandom(rngState);
  return [Math.round(backoffDelayMs({ firstMs, maxMs: timing.claimRetryMaxMs, jitter: JITTER }, failures, u)), next];
}

/**
 * Queued episodes whose back-off has passed (or every back-off, `all`: a ROLLING edge) lose their `notBeforeMs`, so
 * no alarm is ever set in the past. Scans the rows only when a back-off is pending and, unless `all`, due.
 */
export function releaseBackoffs(d: Draft, all = false): void {
  if (d.index.backedOff === 0 || (!all && d.index.earliestMs > d.nowMs)) return;
  for (const row of d.rows()) {
    if (row.status === "queued" && row.notBeforeMs !== null && (all || row.notBeforeMs <= d.nowMs)) {
      d.patchEpisode(row.episodeKey, { notBeforeMs: null });
    }
  }
}

/** Free `maxParallel` slots right now. */
export function freeSlots(d: Draft): number {
  return Math.max(0, d.run.config.maxParallel - inFlightCount(d.index));
}

/** Queued rows ready to go (no back-off pending), in dispatch order (lowest seq first: retries and whole groups). */
function readyQueue(d: Draft): EpisodeRow[] {
  return d.rows()
    .filter((r) => r.status === "queued" && r.notBeforeMs === null)
    .sort((a, b) => a.seq - b.seq);
}

/**
 * Dispatches ready episodes into the free slots: each becomes `dispatched` (the slot is reserved in this very
 * decision, BC-47) with a dispatch lease (the short un-started one once the run's consumers report starts,
 * scheduler/heartbeats; the message carries the long one), and one `dispatchEpisodes` command lists them all. The
 * caller has checked the gate and the phase.
 * @returns how many were dispatched
 */
export function dispatchReady(d: Draft): number {
  const { config } = d.run;
  const free = freeSlots(d);
  // nothing to do without a free slot or a ready row: no scan (the common case while every episode is in flight)
  if (free === 0 || d.index.counts.queued - d.index.backedOff <= 0) return 0;
  const ready = readyQueue(d).slice(0, free);
  const leaseDeadlineAtMs = d.nowMs + config.timing.dispatchLeaseSeconds * 1000;
  const { heartbeatSeconds } = heartbeatTiming(config.timing);
  for (const row of ready) {
    const dispatchId = row.dispatchId + 1;
    d.patchEpisode(row.episodeKey, {
      status: "dispatched", dispatchId, dispatchedAtMs: d.nowMs, deadlineAtMs: dispatchDeadlineAtMs(d, row),
      startedAtMs: null, heartbeatAtMs: null, claimedAtMs: null,
    });
    d.run.totals.dispatches++;
    const step = row.windowIndex === null ? undefined : d.steps[String(row.windowIndex)];
    if (step && step.firstDispatchAtMs === null) d.patchStep(step.windowIndex, { firstDispatchAtMs: d.nowMs });
    const message: EpisodeDispatch = {
      episodeKey: row.episodeKey, attempt: row.attempt, dispatchId, groupKey: row.groupKey, source: row.source,
      taskIndex: row.taskIndex, epoch: row.epoch, repeat: row.repeat, windowIndex: row.windowIndex,
      episodeType: config.episodeType, swarms: [...config.swarms],
      discardEpisodeTimeoutSeconds: config.discardEpisodeTimeoutSeconds,
      throttle: config.episodeType === "train"
        ? { ratio: config.throttleRatio, expected_batch_size: config.batchSize, expected_num_repeat: config.numRepeat }
        : null,
      leaseDeadlineAtMs,
      heartbeatSeconds,
    };
    d.dispatch(message);
  }
  return ready.length;
}
