/**
 * @module edge/run/report-ledger — what the run object writes around the core's answer to an episode's reports: the
 * outbox of an outcome's outputs (kept until the report is settled), the ledger of ended episodes, the attempt rows
 * of the dashboard, and the resend of an abort the consumer could not confirm. {@link recordOutcome} and
 * {@link recordResult} wrap the core's answer (`apply`) with them; the ledger is paged by {@link endedPage}.
 */
import { AbortCause, type EndedEpisode, type EventAck, type OutcomeReport, type ResultReport } from "../../port/index.ts";
import { reportedReward, type ClosedAttempt, type EpisodeRow } from "../../scheduler/index.ts";
import type { ValidWorkflowOutput } from "../../protocol/index.ts";
import { attemptRow, closedAttemptRow } from "./attempts.ts";
import type { RunLog } from "../ground/log.ts";
import type { SchedulerStorage } from "./storage.ts";

/**
 * The ledger rows of one ended episode: one per claimed swarm, each with the reward sent to that swarm (its
 * recorded output), else the episode's reward (the core's `reportedReward`).
 * @param outputs the outbox's outputs per swarm, when the outcome was recorded with them
 */
export function ledgerRows(
  row: Pick<EpisodeRow, "episodeKey" | "attempt" | "claims">,
  taskId: string,
  outputs: Readonly<Record<string, ValidWorkflowOutput>> | undefined,
  reward: number,
  atMs: number,
): EndedEpisode[] {
  return row.claims.map((c) => ({
    episodeKey: row.episodeKey, attempt: row.attempt, swarm: c.swarm, episodeUuid: c.episodeUuid, taskId,
    globalStep: c.globalStep, reward: outputs?.[c.swarm]?.reward ?? reward, atMs,
  }));
}

/** The attempt rows of the attempts a decision closed on a lease expiry (no report will bring them). */
export function recordClosedAttempts(storage: SchedulerStorage, closed: readonly ClosedAttempt[] | undefined): void {
  for (const c of closed ?? []) storage.recordAttempt(closedAttemptRow(c.row, c.cause, storage.taskId(c.row.source, c.row.taskIndex), c.atMs));
}

/** Before the core hears of an outcome: its outputs go to the outbox (the current attempt only). */
export function stashOutputs(storage: SchedulerStorage, row: EpisodeRow | undefined, report: OutcomeReport): void {
  if (report.outputs && row && row.attempt === report.attempt) storage.putOutbox(report.episodeKey, report.attempt, storage.taskId(row.source, row.taskIndex), report.outputs);
}

/** After the core's answer to an outcome: a stale or unknown one's outbox row goes (no resend will carry it). */
export function settleOutcome(storage: SchedulerStorage, report: OutcomeReport, ack: EventAck): void {
  if (ack.status === "stale" || ack.status === "unknown") storage.deleteOutbox(report.episodeKey, report.attempt);
}

/**
 * After the core's answer to an episode's report: an unconfirmed abort of the current attempt with claims is queued
 * again; an applied report of the current attempt writes its attempt row and, when ended, its ledger rows (the
 * reward by the core's own rule, `reportedReward`) — when refused on some swarms but accepted on others
 * (`endedSwarms`), the rows of those; the outbox row goes unless the report was stale or says the end's outcome is
 * unknown (its resend needs it).
 * @param row the episode's row before the report was applied; `box` its outbox row read then
 * @returns true when the alarm must fire at once (an abort was queued)
 */
export function settleReport(
  storage: SchedulerStorage,
  log: RunLog,
  input: { row: EpisodeRow | undefined; box: ReturnType<SchedulerStorage["outbox"]>; report: ResultReport; ack: EventAck; nowMs: number },
): boolean {
  const { row, box, report, ack, nowMs } = input;
  const current = !!row && row.attempt === report.attempt;
  let abortQueued = false;
  if (report.cause === AbortCause.abortUnconfirmed && row && current && row.claims.length) {
    // the consumer's abort failed after its retries: the claims may still be held (an engine slot, the weight
    // sync); the alarm sends the abort again at once, and the claim sweep catches whatever is left
    log("warn", "an episode's abort was not confirmed by the server; the run sends it again", { episodeKey: report.episodeKey, claims: row.claims.map((c) => c.episodeUuid).join(",") });
    storage.queueCommands([{ type: "abortEpisodes", episodes: [{ episodeKey: row.episodeKey, attempt: row.attempt, claims: row.claims, reason: AbortCause.abortUnconfirmed }] }]);
    abortQueued = true;
  }
  if (ack.status === "applied" && row && current) {
    const taskId = box?.taskId ?? storage.taskId(row.source, row.taskIndex);
    // applied + ended: the core found a finite reward by the same rule
    if (report.result === "ended") storage.recordEnded(ledgerRows(row, taskId, box?.outputs, reportedReward(row.outcome, report) ?? 0, nowMs));
    // refused on one server, accepted on others (a multi-swarm episode): those rewards are on their servers, so in the ledger
    else if (report.endedSwarms?.length) {
      const swarms = new Set(report.endedSwarms);
      storage.recordEnded(ledgerRows({ ...row, claims: row.claims.filter((c) => swarms.has(c.swarm)) }, taskId, box?.outputs, reportedReward(row.outcome, report) ?? 0, nowMs));
    }
    storage.recordAttempt(attemptRow(row, report, taskId, box?.outputs, nowMs));
  }
  // an end whose outcome is unknown is sent again from the outbox while the server holds the episode: its row stays
  // until the end is settled (ended or lost); dropping it here turned every resend into outbox_missing and re-ran the repeat
  if (ack.status !== "stale" && report.result !== "unknown") storage.deleteOutbox(report.episodeKey, report.attempt);
  return abortQueued;
}

/**
 * An `episodeOutcomeRecorded`: the outputs go to the outbox, the core decides (`apply`, the report without its
 * outputs), a stale or unknown outcome's outbox row goes.
 * @param row the episode's row before the report is applied
 */
export async function recordOutcome(storage: SchedulerStorage, row: EpisodeRow | undefined, report: OutcomeReport, apply: (event: Omit<OutcomeReport, "outputs">) => Promise<EventAck>): Promise<EventAck> {
  stashOutputs(storage, row, report);
  const { outputs: _outputs, ...event } = report;
  const ack = await apply(event);
  settleOutcome(storage, report, ack);
  return ack;
}

/**
 * An `episodeReported`: the core decides (`apply`), then {@link settleReport} with the row and outbox read before.
 * @param row the episode's row before the report is applied
 * @returns the core's ack, and `wakeNow` when the alarm must fire at once (an abort was queued)
 */
export async function recordResult(storage: SchedulerStorage, log: RunLog, row: EpisodeRow | undefined, report: ResultReport, apply: (event: ResultReport) => Promise<EventAck>): Promise<{ ack: EventAck; wakeNow: boolean }> {
  const box = storage.outbox(report.episodeKey, report.attempt);
  const ack = await apply(report);
  return { ack, wakeNow: settleReport(storage, log, { row, box, report, ack, nowMs: Date.now() }) };
}

/** A page of the ledger (`GET /runs/:id/episodes`), optionally of one global step: at most 1000 rows by default, 10 000 in all. */
export function endedPage(storage: SchedulerStorage, query: { globalStep?: number; limit?: number; offset?: number }): EndedEpisode[] {
  return storage.endedEpisodes({ globalStep: query.globalStep, limit: Math.min(query.limit ?? 1000, 10_000), offset: query.offset ?? 0 });
}
