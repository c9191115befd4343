/**
 * @module scheduler/tuning — the run's timing knobs (status polling, leases, claim back-off) with their defaults and
 * units. Leases are in seconds (they scale with `discardEpisodeTimeoutSeconds`); polls and back-offs in ms.
 */
import { z } from "zod";
import { rangedNumber, type RangedField } from "./spec-ranges.ts";
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

/** Default un-started dispatch lease (s): a lost queue message (a workerd crash) is sent again after this. */
export const DEFAULT_DISPATCH_START_LEASE_SECONDS = 15;
/** Default interval of a running episode's heartbeats (s). */
export const DEFAULT_HEARTBEAT_SECONDS = 10;
/** Default lease of a running episode after a heartbeat (s): three intervals, so two lost heartbeats cost nothing. */
export const DEFAULT_HEARTBEAT_LEASE_SECONDS = 3 * DEFAULT_HEARTBEAT_SECONDS;

/** A tuning knob within its range (scheduler/spec-ranges: finite, from a minimum to a maximum that mean something). */
const positive = (field: string, unit: string, example: string) =>
  z
    .number({ error: `tuning.${field} must be a number of ${unit}` })
    .positive({ error: `tuning.${field} must be > 0 ${unit}, e.g. ${example}` })
    .pipe(rangedNumber(`tuning.${field}` as RangedField, `tuning.${field}`, example))
    .optional();

/** Optional timing knobs of a run spec (`tuning`); every field has a default (see {@link resolveTuning}). */
export const RunTuning = z.strictObject({
  statusPollWaitingMs: positive("statusPollWaitingMs", "milliseconds", "1000").describe(
    "engine status poll interval while the gate is closed (default 1000 ms)",
  ),
  statusPollRollingMs: positive("statusPollRollingMs", "milliseconds", "3000").describe(
    "engine status poll interval while every swarm is ROLLING (default 3000 ms)",
  ),
  dispatchLeaseSeconds: positive("dispatchLeaseSeconds", "seconds", "300").describe(
    "a dispatched episode whose invocation started must be claimed within this (default 300 s), else it is dispatched again",
  ),
  dispatchStartLeaseSeconds: positive("dispatchStartLeaseSeconds", "seconds", "15").describe(
    `a dispatched episode whose invocation has not reported its start within this is dispatched again (default ${DEFAULT_DISPATCH_START_LEASE_SECONDS} s or dispatchLeaseSeconds if shorter, doubling with each such expiry in a row up to dispatchLeaseSeconds; only once the run's consumers report starts)`,
  ),
  heartbeatSeconds: positive("heartbeatSeconds", "seconds", "10").describe(
    `how often a running episode's invocation tells the run it is alive (default ${DEFAULT_HEARTBEAT_SECONDS} s)`,
  ),
  heartbeatLeaseSeconds: positive("heartbeatLeaseSeconds", "seconds", "30").describe(
    `a running episode whose invocation sent no heartbeat within this is reconciled (default ${DEFAULT_HEARTBEAT_LEASE_SECONDS} s = 3 × heartbeatSeconds); runLeaseSeconds still bounds the whole run`,
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
    // never longer than the dispatch lease it gives way to (a shorter dispatch lease set alone keeps its own)
    dispatchStartLeaseSeconds: t.dispatchStartLeaseSeconds ?? Math.min(DEFAULT_DISPATCH_START_LEASE_SECONDS, t.dispatchLeaseSeconds ?? 300),
    heartbeatSeconds: t.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS,
    heartbeatLeaseSeconds: t.heartbeatLeaseSeconds ?? DEFAULT_HEARTBEAT_LEASE_SECONDS,
    runLeaseSeconds: t.runLeaseSeconds ?? EPISODE_LIFETIME_FACTOR * discardEpisodeTimeoutSeconds + RUN_LEASE_MARGIN_SECONDS,
    reportLeaseSeconds: t.reportLeaseSeconds ?? DEFAULT_REPORT_LEASE_SECONDS,
    claimRetryMs: t.claimRetryMs ?? 2000,
    claimRetryNotRollingMs: t.claimRetryNotRollingMs ?? 15_000,
    claimRetryMaxMs: t.claimRetryMaxMs ?? 60_000,
    stopGraceSeconds: t.stopGraceSeconds ?? 30,
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
 *    lease re-dispatches while the first consumer's claim may still succeed, so one repeat runs twice;
 *  - `dispatchStartLeaseSeconds` ≤ `dispatchLeaseSeconds`: the un-started lease is the short one (a longer one would
 *    outlast the started lease it gives way to);
 *  - `heartbeatLeaseSeconds` > 2 × `heartbeatSeconds`: one late or lost heartbeat must not reconcile a live episode
 *    (a reconciled episode is never ended twice — its late reports are stale — but its work is thrown away).
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
  if (t.dispatchStartLeaseSeconds > t.dispatchLeaseSeconds) {
    issues.push({
      path: ["tuning", "dispatchStartLeaseSeconds"],
      message:
        `tuning.dispatchStartLeaseSeconds ${t.dispatchStartLeaseSeconds} must not exceed tuning.dispatchLeaseSeconds ${t.dispatchLeaseSeconds} ` +
        `(the lease of a dispatch whose invocation has not started is the short one); lower it or omit it for the default ${DEFAULT_DISPATCH_START_LEASE_SECONDS}`,
    });
  }
  if (t.heartbeatLeaseSeconds <= 2 * t.heartbeatSeconds) {
    issues.push({
      path: ["tuning", "heartbeatLeaseSeconds"],
      message:
        `tuning.heartbeatLeaseSeconds ${t.heartbeatLeaseSeconds} must exceed 2 × tuning.heartbeatSeconds ${t.heartbeatSeconds} = ${2 * t.heartbeatSeconds} s ` +
        `(one late heartbeat would otherwise give up an episode that is still running); raise it, lower heartbeatSeconds, or omit both for the defaults ${DEFAULT_HEARTBEAT_LEASE_SECONDS} and ${DEFAULT_HEARTBEAT_SECONDS}`,
    });
  }
  return issues;
}

/**
 * The heartbeat timing of a run, defaults filled for a config stored before these knobs existed (seconds).
 * @returns the un-started dispatch lease, the heartbeat interval and the heartbeat lease
 */
export function heartbeatTiming(t: Partial<SchedulerTiming>): { startLeaseSeconds: number; heartbeatSeconds: number; heartbeatLeaseSeconds: number } {
  return {
    startLeaseSeconds: t.dispatchStartLeaseSeconds ?? DEFAULT_DISPATCH_START_LEASE_SECONDS,
    heartbeatSeconds: t.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS,
    heartbeatLeaseSeconds: t.heartbeatLeaseSeconds ?? DEFAULT_HEARTBEAT_LEASE_SECONDS,
  };
}
