/**
 * @module runtime/episode-commit — the last steps of an episode attempt, whoever holds it (the queue consumer, or
 * the `EpisodeHost` after a handover): record the outcome (the commit point, BC-26), exactly one of end or abort
 * per claimed episode (BC-34), report how the server answered, store the transcript.
 */
import type { RolloutLogger } from "../sdk/contract.ts";
import type { Task } from "../protocol/index.ts";
import {
  abortAll,
  AbortCause,
  type EpisodeMessage,
  type EpisodeOutcome,
  type EpisodeRef,
  type EpisodeReportResult,
  type EpisodeSignals,
  type EventAck,
  type SentAction,
} from "../port/index.ts";
import type { HeldClaim } from "./claims.ts";
import type { OutcomeDecision } from "./outcome.ts";
import type { EpisodePort } from "./episode-port.ts";
import { endsConfirmedByPool } from "./end-reconcile.ts";
import { sendServerAction } from "./server-action.ts";
import type { TranscriptRecorder, TranscriptSink } from "./transcript.ts";
import type { SleepFn } from "../client/index.ts";

/** How the episode ended, from the invocation's point of view (the queue consumer acks or retries on it). */
export type EpisodeRunResult =
  | { kind: "reported"; result: EpisodeReportResult; outcome: EpisodeOutcome }
  | { kind: "claimFailed"; cause: string }
  | { kind: "stale"; reason: string }
  | { kind: "skipped"; reason: string }
  /** the end/abort or its report did not get through: the scheduler's outbox resolves it (BC-26, BC-51) */
  | { kind: "unresolved"; reason: string }
  /** the scheduler could not be reached before anything was sent: retry the message */
  | { kind: "retry"; reason: string }
  /** the episode moved to its next holder (runtime/handover; `unknown`: it may have): nothing more is sent from here */
  | { kind: "handedOver"; answer: "handed" | "unknown" };

/**
 * Cause reported when the outcome could not be recorded: the claims were aborted, nothing was ended, so the
 * scheduler must close the attempt instead of resending a recorded end from its outbox (BC-26, BC-51).
 */
export const OUTCOME_UNRECORDED = AbortCause.outcomeUnrecorded;

/** A step's way out: the episode is over with this result. */
type Done = { done: EpisodeRunResult };

/**
 * Step 4, the commit point: record the outcome (outbox) before sending anything (BC-26). Null when the episode may
 * go on to its end or abort. When the outcome cannot be recorded the object may still hold it (applied, answer
 * lost): the claims are given back and the object is told that nothing was ended ({@link OUTCOME_UNRECORDED}), or
 * its outbox would resend a recorded end after the lease and a "not found" then would count a reward never sent.
 */
async function commit(msg: EpisodeMessage, decision: OutcomeDecision, held: readonly HeldClaim[], port: EpisodePort, log: RolloutLogger): Promise<Done | null> {
  const ref = episodeRef(msg);
  let recorded: EventAck;
  try {
    ({ answer: recorded } = await port.twice((p) => p.episodeOutcomeRecorded({ ...ref, outcome: decision.outcome, outputs: decision.outputs })));
  } catch (err) {
    if (decision.action !== "none") await abortAll(held);
    log.warn("episodeOutcomeRecorded failed; claims given back, nothing ended", { error: String(err) });
    const result = decision.action === "none" ? "expired" : "aborted";
    const told = await port.once((p) => p.episodeReported({ ...ref, result, cause: OUTCOME_UNRECORDED })).then(() => true, () => false);
    if (!told) return { done: { kind: "retry", reason: `episodeOutcomeRecorded failed: ${String(err)}` } };
    return { done: { kind: "reported", result, outcome: { kind: "abort", cause: OUTCOME_UNRECORDED } } };
  }
  if (recorded.status !== "stale" && recorded.status !== "unknown") return null;
  if (decision.action !== "none") await abortAll(held);
  return { done: { kind: "stale", reason: recorded.reason } };
}

/** Steps 5 and 6: exactly one of end or abort per claim (BC-34), then report how the server answered. */
async function closeAndReport(
  msg: EpisodeMessage,
  decision: OutcomeDecision,
  held: readonly HeldClaim[],
  taskId: string,
  port: EpisodePort,
  deps: { sleep: SleepFn; log: RolloutLogger; signals?: () => EpisodeSignals },
): Promise<EpisodeRunResult> {
  let sent: SentAction = await sendServerAction(decision, held, taskId, deps.sleep);
  // an end whose outcome is unknown: the server's completed tasks may say it was delivered, at once (BC-26)
  if (sent.kind === "unresolved" && decision.action === "end" && (await endsConfirmedByPool(held, taskId))) {
    deps.log.info("end_episode outcome unknown, but the server lists the episode as completed: reported ended", { reason: sent.reason });
    sent = { kind: "sent", result: "ended" };
  }
  if (sent.kind === "unresolved") {
    // tell the run at once: it resolves the end from the server's record within seconds, not after the report lease
    if (decision.action === "end") {
      const reached = sent.reached === true;
      await port.twice((p) => p.episodeReported({ ...episodeRef(msg), result: "unknown", reached, cause: sent.reason.slice(0, 300) })).catch(() => undefined);
    }
    return { kind: "unresolved", reason: sent.reason };
  }
  if (sent.cause === AbortCause.abortUnconfirmed) deps.log.warn("abort not confirmed by the server after retries; the scheduler releases the claim", { outcome: outcomeCause(decision.outcome) });
  try {
    const partial = sent.endedSwarms ? { endedSwarms: sent.endedSwarms } : {};
    // what the attempt measured rides on its end report (no call of its own)
    const signals = deps.signals ? { signals: deps.signals() } : {};
    await port.twice((p) => p.episodeReported({ ...episodeRef(msg), result: sent.result, cause: sent.cause, ...partial, ...signals }));
  } catch (err) {
    return { kind: "unresolved", reason: `episodeReported failed: ${String(err)}` };
  }
  return { kind: "reported", result: sent.result, outcome: decision.outcome };
}

/** Step 7: the attempt's transcript, after the report (a failing store costs the record, never the reward). */
async function saveTranscript(
  sink: TranscriptSink,
  recorder: TranscriptRecorder,
  msg: EpisodeMessage,
  task: Task,
  claimedAtMs: number,
  decision: OutcomeDecision,
  done: EpisodeRunResult,
  log: RolloutLogger,
): Promise<void> {
  const outputs = Object.fromEntries(
    Object.entries(decision.outputs ?? {}).map(([swarm, o]) => [swarm, { reward: o.reward, metadata: o.metadata, log_metrics: o.log_metrics }]),
  );
  const outcome = decision.outcome;
  const record = recorder.finish({
    runId: msg.runId, episodeKey: msg.episodeKey, attempt: msg.attempt, taskId: msg.taskId, functionName: msg.functionName,
    episodeType: msg.episodeType, query: task.main_query ?? null, task, claimedAtMs,
    result: done.kind === "reported" ? done.result : null, outcome,
    reward: outcome.kind === "end" || outcome.kind === "score" ? outcome.reward : null,
    outputs, error: decision.error,
  });
  try {
    await sink.save(record);
  } catch (err) {
    log.warn("episode transcript not stored", { error: String(err) });
  }
}

const episodeRef = (msg: EpisodeMessage): EpisodeRef => ({ episodeKey: msg.episodeKey, attempt: msg.attempt });

function outcomeCause(o: EpisodeOutcome): string {
  return o.kind === "abort" ? o.cause : o.kind;
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** What the last steps of an attempt need. */
export interface FinishDeps {
  sleep: SleepFn;
  log: RolloutLogger;
  /** where the transcript goes; none: no transcript */
  transcripts?: TranscriptSink;
}

/**
 * Steps 4 to 7 of an attempt whose function is over, for whichever holder has it: commit (record the outcome), end
 * or abort each claim once and report, then store the transcript (after `before`, e.g. the sandbox's destruction).
 * @param measured the attempt's meter and recorder (the end report's signals, the transcript)
 */
export async function finishAttempt(
  a: { msg: EpisodeMessage; task: Task; held: readonly HeldClaim[]; claimedAtMs: number },
  decision: OutcomeDecision,
  port: EpisodePort,
  deps: FinishDeps,
  measured: { meter: { signals(withTranscript: boolean): EpisodeSignals }; recorder: TranscriptRecorder | undefined },
  before?: Promise<unknown>,
): Promise<EpisodeRunResult> {
  const { msg, held } = a;
  if (decision.error) deps.log.warn(`episode outcome: abort (${outcomeCause(decision.outcome)})`, { error: describe(decision.error) });
  const committed = await commit(msg, decision, held, port, deps.log);
  const done = committed ? committed.done : await closeAndReport(msg, decision, held, a.task.task_id, port, { ...deps, signals: () => measured.meter.signals(measured.recorder !== undefined) });
  await before;
  if (measured.recorder && deps.transcripts) await saveTranscript(deps.transcripts, measured.recorder, msg, a.task, a.claimedAtMs, decision, done, deps.log);
  return done;
}
