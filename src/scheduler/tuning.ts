/**
 * @module scheduler/tuning — the run's timing knobs (status polling, leases, claim back-off) with their defaults and
 * units. Leases are in seconds (they scale with `discardEpisodeTimeoutSeconds`); polls and back-offs in ms.
 */
import { z } from "zod";
import { CONSUMER_CLAIM_BUDGET_MS, EPISODE_LIFETIME_FACTOR, endpoints } from "../protocol/index.ts";

/** Extra time on top of the consumer's own lifetime cap (8 × discard timeout) before the DO reconciles (BC-51). */
export const RUN_LEASE_MARGIN_SECONDS = 60;

/**
 * Default report lease: the consumer's `end_episode` and its one resend, each up to the end timeout (2 × 330 s),
 * + 60 s, so the outbox never resends while the consumer's end may still be in flight (BC-26).
 */
const DEFAULT_REPORT_LEASE_SECONDS = (2 * endpoints.endEpisode.timeoutMs) / 1000 + 60;

/** The `/end_episode` client timeout in seconds (330 s: the server may hold the answer ~300 s for the engine's ack). */
export const END_TIMEOUT_SECONDS = endpoints.endEpisode.timeoutMs / 1000;
/** The `/claim_episode` client timeout in seconds. */
const CLAIM_TIMEOUT_SECONDS = endpoints.claimEpisode.timeoutMs / 1000;
/** The consumer's claim budget in seconds (it keeps claiming this long before it reports a claim failure). */
const CLAIM_BUDGET_SECONDS = CONSUMER_CLAIM_BUDGET_MS / 1000;

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
    `a claimed episode must record its outcome within this (default ${EPISODE_LIFETIME_FACTOR} × discardEpisodeTimeoutSeconds + ${RUN_LEASE_MARGIN_SECONDS} s)`,
  ),
  reportLeaseSeconds: positive("reportLeaseSeconds", "seconds", String(DEFAULT_REPORT_LEASE_SECONDS)).describe(
    `an outcome must be reported (end/abort answered) within this (default ${DEFAULT_REPORT_LEASE_SECONDS} s: the consumer's end and its one resend, 2 × ${endpoints.endEpisode.timeoutMs / 1000} s, + 60 s), so the outbox never resends while the consumer's end may still be in flight`,
  ),
  claimRetryMs: positive("claimRetryMs", "milliseconds", "2000").describe(
    'first back-off after "No available episodes" (default 2000 ms, as the Python client)',
  ),
  claimRetryNotRollingMs: positive("claimRetryNotRollingMs", "milliseconds", "15000").describe(
    "first back-off after a claim failed because the engine was not ROLLING (default 15000 ms, as the Python client); the edge back to ROLLING also releases it",
  ),
  claimRetryMaxMs: positive("claimRetryMaxMs", "milliseconds", "60000").describe(
    "longest claim back-off before jitter (default 60000 ms)",
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
  };
}

/** One lease relation that does not hold: the `tuning.*` path and a message naming both values and the fix. */
export interface LeaseIssue {
  path: (string | number)[];
  message: string;
}

/**
 * The lease and timeout relations exactly-once delivery depends on, checked when a run is created (every value
 * resolved, defaults included):
 *  - `reportLeaseSeconds` > 2 × the `/end_episode` timeout (330 s): the consumer's end and its one resend may each
 *    be held that long by a slow engine ack; an outbox resend before both are over could be accepted too, and the
 *    reward would be posted twice (BC-26);
 *  - `runLeaseSeconds` > 8 × `discardEpisodeTimeoutSeconds`: the consumer's own lifetime cap (BC-24); a shorter
 *    lease reconciles episodes that are still running, whose end then races the abort;
 *  - `dispatchLeaseSeconds` > the consumer's claim budget (20 s) + the `/claim_episode` timeout (30 s): a shorter
 *    lease re-dispatches while the first consumer's claim may still succeed, so one repeat runs twice.
 * @param t the resolved timing; @param discardEpisodeTimeoutSeconds the run's idle timeout (seconds)
 * @returns one issue per relation that does not hold (empty when all hold)
 */
export function leaseIssues(t: SchedulerTiming, discardEpisodeTimeoutSeconds: number): LeaseIssue[] {
  const issues: LeaseIssue[] = [];
  const endWindow = 2 * END_TIMEOUT_SECONDS;
  if (t.reportLeaseSeconds <= endWindow) {
    issues.push({
      path: ["tuning", "reportLeaseSeconds"],
      message:
        `tuning.reportLeaseSeconds ${t.reportLeaseSeconds} must exceed 2 × the end_episode timeout ${END_TIMEOUT_SECONDS} s = ${endWindow} s ` +
        `(the consumer's end and its one resend may each wait that long; a resend from the run before both are over could post the reward twice); ` +
        `use more than ${endWindow} or omit it for the default ${DEFAULT_REPORT_LEASE_SECONDS}`,
    });
  }
  const lifetime = EPISODE_LIFETIME_FACTOR * discardEpisodeTimeoutSeconds;
  if (t.runLeaseSeconds <= lifetime) {
    issues.push({
      path: ["tuning", "runLeaseSeconds"],
      message:
        `tuning.runLeaseSeconds ${t.runLeaseSeconds} must exceed ${EPISODE_LIFETIME_FACTOR} × discardEpisodeTimeoutSeconds ${discardEpisodeTimeoutSeconds} = ${lifetime} s ` +
        `(the consumer's own lifetime cap), or live episodes would be reconciled while they may still end; omit it for the default`,
    });
  }
  const claimWindow = CLAIM_BUDGET_SECONDS + CLAIM_TIMEOUT_SECONDS;
  if (t.dispatchLeaseSeconds <= claimWindow) {
    issues.push({
      path: ["tuning", "dispatchLeaseSeconds"],
      message:
        `tuning.dispatchLeaseSeconds ${t.dispatchLeaseSeconds} must exceed the consumer's claim budget ${CLAIM_BUDGET_SECONDS} s + the claim_episode timeout ${CLAIM_TIMEOUT_SECONDS} s = ${claimWindow} s ` +
        `(a shorter lease dispatches the episode again while the first claim may still succeed, so one repeat would run twice); omit it for the default 300`,
    });
  }
  return issues;
}
