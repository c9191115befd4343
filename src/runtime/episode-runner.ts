/**
 * @module runtime/episode-runner — one queue message = one episode (issue 3 §3; docs/design/episode-lifecycle.md),
 * as named steps: claim on every swarm → report the claim → run the rollout function (runtime/run-function) →
 * commit: record the outcome (outbox) → exactly one of end or abort per claimed episode (BC-34) → report. The
 * scheduler is reached through one retrying wrapper (runtime/episode-port). Platform-free: the queue consumer in
 * `src/edge` and the Node tests drive it with their own fetch, clock and scheduler port.
 */
import { SwarmClient, type SleepFn } from "../client/index.ts";
import type { RolloutFunction, RolloutLogger } from "../sdk/contract.ts";
import { bindSwarms, serverOfSwarm, swarmsOf } from "../sdk/contract.ts";
import { CONSUMER_CLAIM_BUDGET_MS, endpoints, type Task } from "../protocol/index.ts";
import {
  abortAll,
  declaresClientActive,
  AbortCause,
  type ClaimAck,
  type DispatchRef,
  type EpisodeClaim,
  type EpisodeMessage,
  type EpisodeRef,
  type EventAck,
  type SchedulerPort,
} from "../port/index.ts";
import { claimAll, type ClaimTarget, type HeldClaim } from "./claims.ts";
import { guardFetch, type BudgetReservation, type ConnectionLimiter, type FetchLike, type SubrequestBudget } from "./limits.ts";
import { EpisodePort } from "./episode-port.ts";
import { runFunction } from "./run-function.ts";
import { createEpisodeStop, type EpisodeStop } from "./episode-stop.ts";
import { finishAttempt, type EpisodeRunResult } from "./episode-commit.ts";
import type { KeyFence } from "./key-fence.ts";
import { TranscriptRecorder, type TranscriptSink } from "./transcript.ts";
import { EpisodeMeter } from "./episode-meter.ts";
import type { HandoverPlan } from "./handover.ts";
import type { JournalEntry } from "./call-journal.ts";
import type { AttemptSandboxes, SandboxProvider } from "../sandbox/attempt.ts";
import { attemptSandboxesOf, sandboxVerdict } from "./episode-sandboxes.ts";

/** Everything one episode needs from its invocation. */
export interface EpisodeRunnerDeps {
  port: SchedulerPort;
  functions: Readonly<Record<string, RolloutFunction>>;
  /** the platform fetch; every swarm and LLM call goes through it, guarded by `limiter` and `budget` */
  fetch: FetchLike;
  /** the invocation's connection limiter, shared by all its episodes (BC-48) */
  limiter: ConnectionLimiter;
  /** the invocation's subrequest budget; each episode reserves its end/abort and reports up front (BC-49) */
  budget?: SubrequestBudget;
  now(): number;
  sleep: SleepFn;
  random(): number;
  log: RolloutLogger;
  /** the operator's secrets; they win over a run's own secrets of the same name (a run cannot shadow them) */
  secrets: Readonly<Record<string, string>>;
  /** epoch ms by which this invocation must be done (queue consumer wall limit); the function is stopped before */
  invocationDeadlineAtMs?: number;
  /** longest time spent claiming (ms); default 20 s, and never more than half the discard timeout (BC-33) */
  claimBudgetMs?: number;
  /** time kept for recording, ending and reporting after the function is stopped (ms); default 20 s */
  reportReserveMs?: number;
  /** where each attempt's transcript goes once it is reported (the Worker: R2); none: no transcript is kept */
  transcripts?: TranscriptSink;
  /**
   * the global-fetch fence (the queue consumer installs one): requests a function sends with the global fetch and
   * an episode key go through that episode's guards, and are refused once it stopped (fromAgentRun, BC-23)
   */
  keyFence?: KeyFence;
  /** the episode's stop, when the caller fires it too (e.g. the run was stopped); default a fresh one */
  stop?: EpisodeStop;
  /**
   * where the attempt's sandbox comes from (sandbox/attempt): the backend and the run's ledger. Absent: a function
   * that asks for one is told the Worker has no sandbox backend. Nothing is paid by a function that never asks.
   */
  sandboxes?: SandboxProvider;
  /**
   * the message was delivered before (a queue redelivery): its attempt is likely someone else's or closed, so the
   * function waits for the claim answer instead of starting while the claim is reported (no LLM call for a stale
   * attempt). Default false.
   */
  redelivery?: boolean;
  /**
   * the handover of this attempt to the next holder before the wall (runtime/handover), built once it is claimed;
   * undefined (or absent) when it cannot move (the consumer without an `EpisodeHost`)
   */
  handover?(state: ClaimedAttempt): HandoverPlan | undefined;
}

/** A claimed attempt, as its handover sees it. */
export interface ClaimedAttempt {
  msg: EpisodeMessage;
  task: Task;
  held: readonly HeldClaim[];
  /** epoch ms of the claim */
  claimedAtMs: number;
  /** whether the scheduler applied the claim report (the handover waits for it: only an applied claim moves) */
  claimApplied(): Promise<boolean>;
}

export { OUTCOME_UNRECORDED, type EpisodeRunResult } from "./episode-commit.ts";

/** The swarm calls that give a claim back: paid from the episode's reservation, never from the shared budget (BC-49). */
const CLOSING_PATHS = [endpoints.endEpisode.path, endpoints.abortEpisode.path];

/**
 * The budget of an episode's swarm calls: `/end_episode` and `/abort_episode` spend the episode's reservation; the
 * claims, the status read and `ctx.canContinue()` are ordinary work on the shared budget (BC-49).
 */
export function swarmBudget(shared: SubrequestBudget | undefined, reservation: BudgetReservation | undefined) {
  if (!reservation) return shared;
  return {
    take(url = "") {
      if (CLOSING_PATHS.some((path) => url.endsWith(path))) reservation.take();
      else shared?.take(url);
    },
  };
}

/** Whether a swarm of `msg` has gateway header templates (their values come from the scheduler only). */
export function hasGatewayHeaders(msg: EpisodeMessage): boolean {
  return msg.swarms.some((s) => s.headers && Object.keys(s.headers).length > 0);
}

/**
 * The gateway headers of each of the function's swarms (`names`), from the scheduler's answer keyed by the run's
 * server names; a swarm without any gets `{}`.
 */
export function headersBySwarm(names: readonly string[], msg: EpisodeMessage, byServer: Record<string, Record<string, string>>): Record<string, Record<string, string>> {
  return Object.fromEntries(names.map((name) => [name, byServer[serverOfSwarm(name, msg.swarms)?.name ?? ""] ?? {}]));
}

/** The swarm client an attempt claims, ends and aborts with on one server (`baseURL` without `/v1`). */
export function swarmClientOf(baseURL: string, msg: EpisodeMessage, fetch: FetchLike, logger: RolloutLogger, headers: Record<string, string>): SwarmClient {
  return new SwarmClient({ baseURL, clientUuid: msg.clientUuid, fetch, logger, headers, declareClientActive: declaresClientActive(msg.episodeType) });
}

/** A step's way out: the episode is over with this result. */
export type Done = { done: EpisodeRunResult };

/**
 * Runs one episode as named steps: claim → report the claim → run the function → commit (record the outcome) →
 * end or abort → report. Never throws for episode-level failures: they become outcomes and reports.
 */
export async function runEpisode(msg: EpisodeMessage, deps: EpisodeRunnerDeps): Promise<EpisodeRunResult> {
  let sandboxes: AttemptSandboxes | null = null;
  const target = deliverable(msg, deps);
  if ("done" in target) return target.done;
  const meter = new EpisodeMeter(deps.now);
  // the end/abort per swarm, the reports, and the start report and the last (quiet) beat when the port takes heartbeats
  const reservation = deps.budget?.reserve(target.swarms.length * 3 + 4 + (deps.port.episodeHeartbeat ? 2 : 0), "episode end/abort and reports");
  const port = new EpisodePort(deps.port, reservation, deps);
  // Ordinary calls (claims, LLM) spend the shared budget; the end/abort and reports spend this episode's reservation.
  const fetch = guardFetch(deps.fetch, deps.limiter, deps.budget);
  const swarmFetch = guardFetch(deps.fetch, deps.limiter, swarmBudget(deps.budget, reservation));
  try {
    const start = await reportStart(msg, port, deps.log);
    if (start) return start.done;
    const gateway = await gatewayHeaders(msg, port);
    if ("done" in gateway) return gateway.done;
    const headers = headersBySwarm(target.swarms, msg, gateway.headers);
    const clients = target.swarms.map((name) => ({ name, client: swarmClientOf(target.urls.get(name)!, msg, swarmFetch, deps.log, headers[name]!) }));
    const task: Task = msg.task ?? (await port.once((p) => p.getTask(msg.taskRef)));
    const claimed = await claim(msg, deps, clients, port);
    if ("done" in claimed) return claimed.done;
    // a run with secrets (their values come with the claim report's answer) or a redelivered message waits for it
    const early = msg.runHasSecrets === false && deps.redelivery !== true;
    // started early, the function is stopped before the claims are given back (its keys closed first, BC-23)
    const reported = reportClaim(msg, claimed, port, !early);
    const go = early ? null : await reported;
    if (go && "done" in go) return go.done;
    // LLM calls and ctx.canContinue() go through the guarded fetch: the 6 connections (BC-48) and the shared budget,
    // never the end/report reserve (BC-49)
    const recorder = deps.transcripts ? new TranscriptRecorder(deps.now) : undefined;
    const stop = deps.stop ?? createEpisodeStop();
    // started while the claim is reported: an answer other than applied stops the function (its claims were given back)
    if (early) void reported.then((ack) => "done" in ack && stop.stop(AbortCause.aborted, "the claim report was not applied"), () => undefined);
    // the operator's secrets win over the run's (POST /runs refuses a run that names one; this holds regardless)
    const secrets = { ...(go?.secrets ?? {}), ...deps.secrets };
    sandboxes = msg.sandbox || deps.sandboxes ? attemptSandboxesOf(msg, deps, secrets, claimed.held, stop, recorder) : null;
    const claimApplied = async () => {
      const ack = go ?? (await reported.catch(() => null));
      return ack !== null && !("done" in ack);
    };
    const plan = deps.handover?.({ msg, task, held: claimed.held, claimedAtMs: claimed.atMs, claimApplied });
    // the attempt's sandbox is destroyed before the next holder makes its own (a replay builds it again)
    const handover = plan && sandboxes ? { ...plan, hand: async (entries: JournalEntry[]) => (await sandboxes?.close(), plan.hand(entries)) } : plan;
    const ran = await runFunction(target.fn, task, msg, { ...deps, fetch, secrets, gatewayHeaders: headers, recorder, meter, stop, ...(reservation ? { reserve: reservation } : {}), ...(sandboxes ? { sandbox: sandboxes.get } : {}), handover }, claimed.held, claimed.atMs);
    // the episode moved on: its next holder runs it again from its journal and ends it; nothing more is sent from here
    if (ran.handedOver) return { kind: "handedOver", answer: ran.handedOver };
    // the sandbox is destroyed while the outcome is committed (its attempt is over); a sandbox failure decides the outcome
    const closing = sandboxes?.close();
    const decision = sandboxVerdict(ran, sandboxes);
    // the commit waits for the claim's answer: an outcome is only recorded for a claim the scheduler applied (the
    // claim report is the fence: nothing is ended for an attempt the scheduler does not hold as running)
    const answer = go ?? (await reported);
    if ("done" in answer) {
      await abortAll(claimed.held);
      return answer.done;
    }
    return await finishAttempt({ msg, task, held: claimed.held, claimedAtMs: claimed.atMs }, decision, port, deps, { meter, recorder }, closing);
  } finally {
    // every way out destroys what the attempt created (close is idempotent); the run's sweep covers a crash
    await sandboxes?.close();
    reservation?.release();
  }
}

/** Step 0: whether this message can run here at all — its lease, its function, the swarms that function needs. */
function deliverable(msg: EpisodeMessage, deps: EpisodeRunnerDeps): Done | { fn: RolloutFunction; swarms: readonly string[]; urls: Map<string, string> } {
  const skipped = (reason: string): Done => ({ done: { kind: "skipped", reason } });
  if (deps.now() > msg.leaseDeadlineAtMs) return skipped("the dispatch lease expired before delivery");
  const fn = deps.functions[msg.functionName];
  if (!fn) return skipped(`no rollout function '${msg.functionName}' in functions/index.ts`);
  const { urls, missing } = bindSwarms(fn, msg.swarms);
  if (missing.length) return skipped(`the run names no swarm ${missing.join(", ")} that '${fn.name}' needs`);
  return { fn, swarms: swarmsOf(fn), urls };
}

/**
 * Step 0a: tell the run this message's invocation started (before any claim), so a dispatch whose message was lost
 * is sent again after a short lease while this one keeps the long one (scheduler/heartbeats). `stale`/`unknown`:
 * the dispatch is no longer current (sent again already, or the run stops): skip it, nothing was claimed. A failed
 * report is not fatal: the claim report decides (a stale claim is given back).
 */
async function reportStart(msg: EpisodeMessage, port: EpisodePort, log: RolloutLogger): Promise<Done | null> {
  let ack: EventAck | undefined;
  try {
    ack = await port.once((p) => (p.episodeHeartbeat ? p.episodeHeartbeat({ ...dispatchRef(msg), stage: "started" }) : undefined));
  } catch (err) {
    log.warn("start report failed; claiming anyway (the claim report decides)", { error: String(err) });
    return null;
  }
  if (ack && (ack.status === "stale" || ack.status === "unknown")) return { done: { kind: "stale", reason: ack.reason } };
  return null;
}

/**
 * Step 0b: the gateway headers of the run's swarms (by run-spec swarm name), asked of the scheduler before the claim
 * and only when a swarm has header templates — their values are secrets, never in the queue message. A later holder
 * of a handed-over attempt asks again the same way (runtime/episode-resume). @returns the headers, or a `skipped`
 * (the port cannot resolve them) / `stale` (refused: the dispatch is no longer current) result
 */
export async function gatewayHeaders(msg: EpisodeMessage, port: EpisodePort): Promise<Done | { headers: Record<string, Record<string, string>> }> {
  if (!hasGatewayHeaders(msg)) return { headers: {} };
  const got = await port.once((p) => (p.swarmHeaders ? p.swarmHeaders(dispatchRef(msg)) : undefined));
  if (got === undefined) return { done: { kind: "skipped", reason: "the run's swarms have gateway headers, but this scheduler port cannot resolve them" } };
  if (got === null) return { done: { kind: "stale", reason: "the dispatch is no longer current (gateway headers refused)" } };
  return { headers: got };
}

/** Step 1: claim on every swarm, all or nothing (BC-33); a failure is reported (best effort) and ends the episode. */
async function claim(
  msg: EpisodeMessage,
  deps: EpisodeRunnerDeps,
  clients: readonly ClaimTarget[],
  port: EpisodePort,
): Promise<Done | { held: HeldClaim[]; claims: EpisodeClaim[]; atMs: number }> {
  const claimBudgetMs = Math.min(deps.claimBudgetMs ?? CONSUMER_CLAIM_BUDGET_MS, (msg.discardEpisodeTimeoutSeconds * 1000) / 2);
  const claimed = await claimAll(clients, {
    episodeType: msg.episodeType,
    discardEpisodeTimeoutSeconds: msg.discardEpisodeTimeoutSeconds,
    throttlePolicy: msg.throttlePolicy,
    deadlineAtMs: Math.min(deps.now() + claimBudgetMs, msg.leaseDeadlineAtMs),
    now: deps.now,
    sleep: deps.sleep,
    random: deps.random,
  });
  if ("failure" in claimed) {
    const { kind, swarm, engineStatus, detail } = claimed.failure;
    await port
      .once((p) => p.claimFailed({ ...dispatchRef(msg), kind, swarm, engineStatus, detail }))
      .catch((err) => deps.log.warn("claimFailed report failed; the dispatch lease will requeue", { error: String(err) }));
    return { done: { kind: "claimFailed", cause: kind } };
  }
  const atMs = deps.now();
  const claims = await Promise.all(claimed.held.map(async (h) => ({ swarm: h.swarm, episodeUuid: h.episodeUuid, globalStep: h.globalStep !== undefined ? h.globalStep : await globalStepOf(h.client) })));
  return { held: claimed.held, claims, atMs };
}

/**
 * Step 2: report the claim (`giveBack` false: the caller gives the claims back itself when the answer is not
 * applied, after stopping a function it started meanwhile). Anything but `applied` means another delivery owns this attempt or it is closed — except
 * `duplicate` after a lost answer, which means our first report (these very claims) was applied: the episode is ours.
 */
async function reportClaim(msg: EpisodeMessage, claimed: { held: HeldClaim[]; claims: EpisodeClaim[] }, port: EpisodePort, giveBack = true): Promise<Done | ClaimAck> {
  let sent: { answer: ClaimAck; resent: boolean };
  try {
    sent = await port.twice((p) => p.episodeClaimed({ ...dispatchRef(msg), claims: claimed.claims }));
  } catch (err) {
    if (giveBack) await abortAll(claimed.held);
    return { done: { kind: "retry", reason: `episodeClaimed failed: ${String(err)}` } };
  }
  const { answer: ack, resent } = sent;
  if (ack.status === "applied" || (resent && ack.status === "duplicate")) return ack;
  if (giveBack) await abortAll(claimed.held);
  return { done: { kind: "stale", reason: ack.status === "duplicate" ? "duplicate delivery" : ack.reason } };
}

const episodeRef = (msg: EpisodeMessage): EpisodeRef => ({ episodeKey: msg.episodeKey, attempt: msg.attempt });
const dispatchRef = (msg: EpisodeMessage): DispatchRef => ({ ...episodeRef(msg), dispatchId: msg.dispatchId });

/** The swarm's global step right after the claim (design note: it attributes the episode to a training step). */
async function globalStepOf(client: SwarmClient): Promise<number | null> {
  try {
    return (await client.getEngineStatus()).globalStep;
  } catch {
    return null;
  }
}
