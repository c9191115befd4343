/**
 * @module scheduler/tuning — the run's timing knobs (status polling, leases, claim back-off) with their defaults and
 * units. Leases are in seconds (they scale with `discardEpisodeTimeoutSeconds`); polls and back-offs in ms.
 */
import { z } from "zod";
import { EPISODE_LIFETIME_FACTOR, endpoints } from "../protocol/index.ts";

/** Extra time on top of the consumer's own lifetime cap (8 × discard timeout) before the DO reconciles (BC-51). */
export const RUN_LEASE_MARGIN_SECONDS = 60;

/**
 * Default report lease: the consumer's `end_episode` and its one resend, each up to the end timeout (2 × 330 s),
 * + 60 s, so the outbox never resends while the consumer's end may still be in flight (BC-26).
 */
const DEFAULT_REPORT_LEASE_SECONDS = (2 * endpoints.endEpisode.timeoutMs) / 1000 + 60;

const positive = (field: string, unit: string, example: string, min = 0) =>
  z
    .number({ error: `tuning.${field} must be a number of ${unit}` })
    .positive({ error: `tuning.${field} must be > 0 ${unit}, e.g. ${example}` })
    .min(min, { error: `tuning.${field} must be ≥ ${min} ${unit} (each poll is a request to the swarm server), e.g. ${example}` })
    .optional();

/** Optional timing knobs of a run spec (`tuning`); every field has a default (see {@link resolveTuning}). */
export const RunTuning = z.strictObject({
  statusPollWaitingMs: positive("statusPollWaitingMs", "milliseconds", "1000", 100).describe(
    "engine status poll interval while the gate is closed (default 1000 ms)",
  ),
  statusPollRollingMs: positive("statusPollRollingMs", "milliseconds", "3000", 100).describe(
    "engine status poll interval while every swarm is ROLLING (default 3000 ms)",
  ),
  dispatchLeaseSeconds: positive("dispatchLeaseSeconds", "seconds", "300").describe(
    "a dispatched episode must be claimed within this (default 300 s), else the attempt is closed",
  ),
  runLeaseSeconds: positive("runLeaseSeconds", "seconds", "1980").describe(
    `a claimed episode must record its outcome within this (default ${EPISODE_LIFETIME_FACTOR} × discardEpisodeTimeoutSeconds + ${RUN_LEASE_MARGIN_SECONDS} s, BC-24)`,
  ),
  reportLeaseSeconds: positive("reportLeaseSeconds", "seconds", String(DEFAULT_REPORT_LEASE_SECONDS)).describe(
    `an outcome must be reported (end/abort answered) within this (default ${DEFAULT_REPORT_LEASE_SECONDS} s: the consumer's end and its one resend, 2 × ${endpoints.endEpisode.timeoutMs / 1000} s, + 60 s, BC-26), so the outbox never resends while the consumer's end may still be in flight`,
  ),
  claimRetryMs: positive("claimRetryMs", "milliseconds", "2000").describe(
    'first back-off after "No available episodes" (default 2000 ms, spec §8.3)',
  ),
  claimRetryNotRollingMs: positive("claimRetryNotRollingMs", "milliseconds", "15000").describe(
    "first back-off after a claim failed because the engine was not ROLLING (default 15000 ms, spec §8.3); the edge back to ROLLING also releases it",
  ),
  claimRetryMaxMs: positive("claimRetryMaxMs", "milliseconds", "60000").describe(
    "longest claim back-off before jitter (default 60000 ms)",
  ),
  stopGraceSeconds: positive("stopGraceSeconds", "seconds", "30").describe(
    "after a stop, how long a function may run on once ctx.signal fired before it is cut and its claim aborted (default 30 s)",
  ),
});
export type RunTuningInput = z.infer<typeof RunTuning>;

/** Resolved timing of a run: every {@link RunTuning} field present (units in the names, meanings on the schema). */
export type SchedulerTiming = Required<RunTuningInput>;

/**
 * Fills the defaults of {@link RunTuning}.
 * @param discardEpisodeTimeoutSeconds the run's idle timeout; the run lease defaults to 8× it + 60 s (BC-24, BC-51)
 */
export function resolveTuning(t: RunTuningInput, discardEpisodeTimeoutSeconds: number): SchedulerTiming {
  return {
    statusPollWaitingMs: t.statusPollWaitingMs ?? 1000,
    statusPollRollingMs: t.statusPollRollingMs ?? 3000,
    dispatchLeaseSeconds: t.dispatchLeaseSeconds ?? 300,
    runLeaseSeconds: t.runLeaseSeconds ?? EPISODE_LIFETIME_FACTOR * discardEpisodeTimeoutSeconds + RUN_LEASE_MARGIN_SECONDS,
    reportLeaseSeconds: t.reportLeaseSeconds ?? DEFAULT_REPORT_LEASE_SECONDS,
    claimRetryMs: t.claimRetryMs ?? 2000,
    claimRetryNotRollingMs: t.claimRetryNotRollingMs ?? 15_000,
    claimRetryMaxMs: t.claimRetryMaxMs ?? 60_000,
    stopGraceSeconds: t.stopGraceSeconds ?? 30,
  };
}
