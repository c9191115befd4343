/**
 * @module scheduler/lease-deadlines — the deadlines of the in-flight leases that depend on heartbeats (the rule is
 * described in scheduler/heartbeats): the un-started dispatch lease and the heartbeat lease of a running episode.
 * Instants are epoch ms; pure.
 */
import type { Draft } from "./draft.ts";
import type { EpisodeRow } from "./state.ts";
import { heartbeatTiming } from "./tuning.ts";

/**
 * The lease deadline (epoch ms) of a dispatch sent at `nowMs`: the un-started lease (doubled per un-started expiry
 * in a row, at most the dispatch lease) once the run's consumers report starts, else the dispatch lease.
 */
export function dispatchDeadlineAtMs(d: Draft, row: Pick<EpisodeRow, "unstartedExpiries">): number {
  const { timing } = d.run.config;
  if (d.run.consumersHeartbeat !== true) return d.nowMs + timing.dispatchLeaseSeconds * 1000;
  const { startLeaseSeconds } = heartbeatTiming(timing);
  const seconds = Math.min(timing.dispatchLeaseSeconds, startLeaseSeconds * 2 ** (row.unstartedExpiries ?? 0));
  return d.nowMs + seconds * 1000;
}

/** True when an expired dispatched row expired on its un-started lease (nobody reported its start). */
export function expiredUnstarted(d: Draft, row: EpisodeRow): boolean {
  return d.run.consumersHeartbeat === true && (row.startedAtMs ?? null) === null;
}

/**
 * The lease deadline (epoch ms) of a running episode at `nowMs` (its claim or a heartbeat): the heartbeat lease,
 * capped at the run lease from the claim; the run lease alone when the run's consumers do not heartbeat.
 * @param claimedAtMs when the claim was reported (epoch ms)
 */
export function runningDeadlineAtMs(d: Draft, claimedAtMs: number): number {
  const { timing } = d.run.config;
  const runDeadline = claimedAtMs + timing.runLeaseSeconds * 1000;
  if (d.run.consumersHeartbeat !== true) return runDeadline;
  return Math.min(runDeadline, d.nowMs + heartbeatTiming(timing).heartbeatLeaseSeconds * 1000);
}
