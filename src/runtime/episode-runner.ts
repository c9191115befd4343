/**
 * @module runtime/episode-runner — one queue message = one episode (issue 3 §3; docs/design/episode-lifecycle.md):
 * claim on every swarm → report the claim → run the rollout function → decide → record the outcome (outbox) →
 * exactly one of end or abort per claimed episode (BC-34) → report. Platform-free: the queue consumer in
 * `src/edge` and the Node tests drive it with their own fetch, clock and scheduler port.
 */
import { SwarmClient, type SleepFn } from "../client/index.ts";
import type { RolloutFunction, RolloutLogger } from "../sdk/contract.ts";
import { bindSwarms, swarmsOf } from "../sdk/contract.ts";
import { EPISODE_LIFETIME_FACTOR, endpoints, type Task } from "../protocol/index.ts";
import { abortAll, AbortCause, EpisodeAbortError, type ClaimAck, type EpisodeMessage, type EpisodeOutcome, type EpisodeReportResult, type EventAck, type SchedulerPort, type SentAction } from "../port/index.ts";
import { claimAll, type HeldClaim } from "./claims.ts";
import { guardFetch, type BudgetReservation, type ConnectionLimiter, type FetchLike, type SubrequestBudget } from "./limits.ts";
import { endsConfirmedByPool } from "./end-reconcile.ts";
import { decideOutcome, type OutcomeDecision } from "./outcome.ts";
import { createEpisodeStop, StopCause, type EpisodeStop } from "./episode-stop.ts";
import { EPISODE_OVER, type KeyFence } from "./key-fence.ts";
import { createRolloutContext } from "./rollout-context.ts";
import { sendServerAction } from "./server-action.ts";

/** The reference client's local lifetime factor: abort instead of end past 8 × discard timeout (spec §5.5, BC-24). */
export const LIFETIME_FACTOR = EPISODE_LIFETIME_FACTOR;

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
  secrets: Readonly<Record<string, string>>;
  /** epoch ms by which this invocation must be done (queue consumer wall limit); the function is stopped before */
  invocationDeadlineAtMs?: number;
  /** longest time spent claiming (ms); default 20 s, and never more than half the discard timeout (BC-33) */
  claimBudgetMs?: number;
  /** time kept for recording, ending and reporting after the function is stopped (ms); default 20 s */
  reportReserveMs?: number;
  /**
   * the global-fetch fence (the queue consumer installs one): requests a function sends with the global fetch and
   * an episode key go through that episode's guards, and are refused once it stopped (fromAgentRun, BC-23)
   */
  keyFence?: KeyFence;
  /** the episode's stop, when the caller fires it too (e.g. the run was stopped); default a fresh one */
  stop?: EpisodeStop;
}

/** How the episode ended, from the invocation's point of view (the queue consumer acks or retries on it). */
export type EpisodeRunResult =
  | { kind: "reported"; result: EpisodeReportResult; outcome: EpisodeOutcome }
  | { kind: "claimFailed"; cause: string }
  | { kind: "stale"; reason: string }
  | { kind: "skipped"; reason: string }
  /** the end/abort or its report did not get through: the scheduler's outbox resolves it (BC-26, BC-51) */
  | { kind: "unresolved"; reason: string }
  /** the scheduler could not be reached before anything was sent: retry the message */
  | { kind: "retry"; reason: string };

const isGo = (ack: EventAck) => ack.status === "applied";

/** Pause before sending a failed scheduler RPC once more (ms, on the injected clock). */
export const RPC_RETRY_DELAY_MS = 1_000;
/**
 * Cause reported when the outcome could not be recorded: the claims were aborted, nothing was ended, so the
 * scheduler must close the attempt instead of resending a recorded end from its outbox (BC-26, BC-51).
 */
export const OUTCOME_UNRECORDED = AbortCause.outcomeUnrecorded;

/** The swarm calls that give a claim back: paid from the episode's reservation, never from the shared budget (BC-49). */
const CLOSING_PATHS = [endpoints.endEpisode.path, endpoints.abortEpisode.path];

/**
 * The budget of an episode's swarm calls: `/end_episode` and `/abort_episode` spend the episode's reservation; the
 * claims, the status read and `ctx.canContinue()` are ordinary work on the shared budget (BC-49).
 */
function swarmBudget(shared: SubrequestBudget | undefined, reservation: BudgetReservation | undefined) {
  if (!reservation) return shared;
  return {
    take(url = "") {
      if (CLOSING_PATHS.some((path) => url.endsWith(path))) reservation.take();
      else shared?.take(url);
    },
  };
}

/** Runs one episode. Never throws for episode-level failures: they become outcomes and reports. */
export async function runEpisode(msg: EpisodeMessage, deps: EpisodeRunnerDeps): Promise<EpisodeRunResult> {
  const log = deps.log;
  if (deps.now() > msg.leaseDeadlineAtMs) return { kind: "skipped", reason: "the dispatch lease expired before delivery" };
  const fn = deps.functions[msg.functionName];
  if (!fn) return { kind: "skipped", reason: `no rollout function '${msg.functionName}' in functions/index.ts` };
  const swarmNames = swarmsOf(fn);
  const { urls: swarmUrls, missing } = bindSwarms(fn, msg.swarms);
  if (missing.length) return { kind: "skipped", reason: `the run names no swarm ${missing.join(", ")} that '${fn.name}' needs` };

  const reservation = deps.budget?.reserve(swarmNames.length * 3 + 4, "episode end/abort and reports");
  /** a Durable Object RPC: counts as a subrequest, paid from the reservation */
  const rpc = <T>(call: () => Promise<T>): Promise<T> => {
    reservation?.take();
    return call();
  };
  /**
   * An idempotent port call (keyed by episodeKey and attempt) sent once more when it fails: the object may have
   * applied it before its answer was lost (a reset, BC-51), and the second answer then says `duplicate`.
   * @returns the answer and whether it came from the second send
   */
  const rpcTwice = async <T>(call: () => Promise<T>): Promise<{ answer: T; resent: boolean }> => {
    try {
      return { answer: await rpc(call), resent: false };
    } catch (err) {
      log.warn("scheduler RPC failed; sending it once more", { error: String(err) });
      await deps.sleep(RPC_RETRY_DELAY_MS);
      return { answer: await rpc(call), resent: true };
    }
  };
  // Ordinary calls (claims, LLM) spend the shared budget; the end/abort and reports spend this episode's reservation.
  const fetch = guardFetch(deps.fetch, deps.limiter, deps.budget);
  const swarmFetch = guardFetch(deps.fetch, deps.limiter, swarmBudget(deps.budget, reservation));
  try {
    const clients = swarmNames.map((name) => ({
      name,
      client: new SwarmClient({ baseURL: swarmUrls.get(name)!, clientUuid: msg.clientUuid, fetch: swarmFetch, logger: log }),
    }));
    const task: Task = msg.task ?? (await rpc(async () => deps.port.getTask(msg.taskRef)));

    // 1. claim, all or nothing (BC-33)
    const claimBudgetMs = Math.min(deps.claimBudgetMs ?? 20_000, (msg.discardEpisodeTimeoutSeconds * 1000) / 2);
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
      const f = claimed.failure;
      await rpc(() => deps.port.claimFailed({ episodeKey: msg.episodeKey, attempt: msg.attempt, dispatchId: msg.dispatchId, kind: f.kind, swarm: f.swarm, engineStatus: f.engineStatus, detail: f.detail })).catch((err) =>
        log.warn("claimFailed report failed; the dispatch lease will requeue", { error: String(err) }),
      );
      return { kind: "claimFailed", cause: f.kind };
    }
    const held = claimed.held;
    const claimedAtMs = deps.now();
    const claims = await Promise.all(held.map(async (h) => ({ swarm: h.swarm, episodeUuid: h.episodeUuid, globalStep: await globalStepOf(h.client) })));
    const abortHeld = async () => {
      const unconfirmed = await abortAll(held, deps.sleep);
      if (unconfirmed.length) log.warn("abort not confirmed by the server after retries; the scheduler releases the claim", { swarms: unconfirmed.map((c) => c.swarm) });
      return unconfirmed;
    };

    // 2. report the claim; anything but "applied" means another delivery owns this attempt or it is closed
    let ack: ClaimAck;
    let resent: boolean;
    try {
      ({ answer: ack, resent } = await rpcTwice(() => deps.port.episodeClaimed({ episodeKey: msg.episodeKey, attempt: msg.attempt, dispatchId: msg.dispatchId, claims })));
    } catch (err) {
      await abortHeld();
      return { kind: "retry", reason: `episodeClaimed failed: ${String(err)}` };
    }
    // after a lost answer, `duplicate` means our first report (these very claims) was applied: the episode is ours
    if (!isGo(ack) && !(resent && ack.status === "duplicate")) {
      await abortHeld();
      return { kind: "stale", reason: ack.status === "duplicate" ? "duplicate delivery" : ack.reason };
    }

    // 3. run the function, stopped at the local lifetime (BC-24) or before the invocation's wall limit
    // LLM calls go through the guarded fetch: they share the 6 connections (BC-48) and the budget (BC-49)
    // ctx.canContinue() is the function's own work: it spends the shared budget, never the end/report reserve (BC-49)
    const decision = await runFunction(fn, task, msg, { ...deps, fetch, secrets: { ...deps.secrets, ...ack.secrets } }, held, claimedAtMs);
    if (decision.error) log.warn(`episode outcome: abort (${outcomeCause(decision.outcome)})`, { error: describe(decision.error) });

    // 4. commit point: record the outcome (outbox) before sending anything (BC-26)
    let recorded: EventAck;
    try {
      ({ answer: recorded } = await rpcTwice(() => deps.port.episodeOutcomeRecorded({ episodeKey: msg.episodeKey, attempt: msg.attempt, outcome: decision.outcome, outputs: decision.outputs })));
    } catch (err) {
      // The object may hold the outcome (applied, answer lost): tell it nothing was ended, or its outbox would
      // resend a recorded end after the lease, and a "not found" then would count a reward never sent (BC-26).
      if (decision.action !== "none") await abortHeld();
      log.warn("episodeOutcomeRecorded failed; claims given back, nothing ended", { error: String(err) });
      const result = decision.action === "none" ? "expired" : "aborted";
      const told = await Promise.resolve().then(() => rpc(() => deps.port.episodeReported({ episodeKey: msg.episodeKey, attempt: msg.attempt, result, cause: OUTCOME_UNRECORDED }))).then(
        () => true,
        () => false,
      );
      if (!told) return { kind: "retry", reason: `episodeOutcomeRecorded failed: ${String(err)}` };
      return { kind: "reported", result, outcome: { kind: "abort", cause: OUTCOME_UNRECORDED } };
    }
    if (recorded.status === "stale" || recorded.status === "unknown") {
      if (decision.action !== "none") await abortHeld();
      return { kind: "stale", reason: recorded.reason };
    }

    // 5. exactly one of end or abort per claim (BC-34), then report
    let sent: SentAction = await sendServerAction(decision, held, task.task_id, deps.sleep);
    // an end whose outcome is unknown: the server's completed tasks may say it was delivered, at once (BC-26)
    if (sent.kind === "unresolved" && decision.action === "end" && (await endsConfirmedByPool(held, task.task_id))) {
      log.info("end_episode outcome unknown, but the server lists the episode as completed: reported ended", { reason: sent.reason });
      sent = { kind: "sent", result: "ended" };
    }
    if (sent.kind === "unresolved") return sent;
    if (sent.kind === "sent" && sent.cause === AbortCause.abortUnconfirmed) log.warn("abort not confirmed by the server after retries; the scheduler releases the claim", { outcome: outcomeCause(decision.outcome) });
    try {
      await rpcTwice(() => deps.port.episodeReported({ episodeKey: msg.episodeKey, attempt: msg.attempt, result: sent.result, cause: sent.cause }));
    } catch (err) {
      return { kind: "unresolved", reason: `episodeReported failed: ${String(err)}` };
    }
    return { kind: "reported", result: sent.result, outcome: decision.outcome };
  } finally {
    reservation?.release();
  }
}

/** The swarm's global step right after the claim (design note: it attributes the episode to a training step). */
async function globalStepOf(client: SwarmClient): Promise<number | null> {
  try {
    return (await client.getEngineStatus()).globalStep;
  } catch {
    return null;
  }
}

async function runFunction(
  fn: RolloutFunction,
  task: Task,
  msg: EpisodeMessage,
  deps: EpisodeRunnerDeps,
  held: HeldClaim[],
  claimedAtMs: number,
): Promise<OutcomeDecision> {
  const lifetimeEndsAtMs = claimedAtMs + LIFETIME_FACTOR * msg.discardEpisodeTimeoutSeconds * 1000;
  const stopAtMs = Math.min(lifetimeEndsAtMs, (deps.invocationDeadlineAtMs ?? Infinity) - (deps.reportReserveMs ?? 20_000));
  // the stop reason is the outcome's cause: past the local lifetime (BC-24), out of invocation time, or idle (BC-23)
  const hardStop = stopAtMs >= lifetimeEndsAtMs
    ? { cause: StopCause.lifetime, message: `episode past ${LIFETIME_FACTOR} × discard timeout (BC-24)` }
    : { cause: StopCause.timeLimit, message: "episode stopped to leave time to report before the invocation's wall limit" };
  const stop = deps.stop ?? createEpisodeStop();
  const stopped = new Promise<never>((_, reject) => {
    const fire = () => reject(stop.signal.reason);
    if (stop.signal.aborted) fire();
    else stop.signal.addEventListener("abort", fire, { once: true });
  });
  stopped.catch(() => undefined);
  const primary = held[0]!;
  // the watchdog: one timer at the earliest local deadline, re-armed whenever LLM activity changes
  let timer: ReturnType<typeof setTimeout> | null = null;
  let built: ReturnType<typeof createRolloutContext> | undefined;
  const arm = () => {
    if (!built || stop.signal.aborted) return;
    if (timer !== null) clearTimeout(timer);
    const at = built.localDeadlineAtMs();
    if (!Number.isFinite(at)) return; // a call is in flight on every swarm: activity, re-armed when it ends
    const why = built.deadlineStop();
    timer = setTimeout(() => stop.stop(why.cause, why.message), Math.max(0, at - deps.now()));
  };
  built = createRolloutContext(
    {
      fetch: deps.fetch,
      episodes: Object.fromEntries(held.map((h) => [h.swarm, { swarm: h.swarm, episodeUuid: h.episodeUuid, baseUrl: h.episode.baseUrl, apiKey: h.episode.apiKey }])),
      episodeType: msg.episodeType,
      stop,
      discardEpisodeTimeoutSeconds: msg.discardEpisodeTimeoutSeconds,
      hardStopAtMs: stopAtMs,
      hardStop,
      canContinue: () => primary.client.canContinueEpisode(primary.episodeUuid).catch(() => false),
      log: deps.log,
      secrets: { ...deps.secrets },
      model: msg.model,
      now: deps.now,
      sleep: deps.sleep,
      random: deps.random,
      onActivity: () => arm(),
      ...(deps.keyFence ? { keyFence: deps.keyFence } : {}),
    },
    claimedAtMs,
  );
  const { ctx, activity } = built;
  arm();
  let result: unknown;
  let error: unknown;
  let threw = false;
  const running = Promise.resolve().then(() => fn.run(task, ctx));
  running.catch(() => undefined); // a function that fails after it was stopped is not an unhandled rejection
  try {
    // a function that ignores ctx.signal is not waited for past the stop: its claims must still be reported
    result = await Promise.race([running, stopped]);
  } catch (err) {
    threw = true;
    const reason = stop.reason;
    error = reason ? new EpisodeAbortError(reason.reason, reason.message, { cause: err }) : err;
  } finally {
    if (timer !== null) clearTimeout(timer);
    built.close(); // no request with these keys leaves the runtime any more (BC-23)
    if (!stop.signal.aborted) stop.stop(EPISODE_OVER, "the episode is over");
  }
  const nowMs = deps.now();
  return decideOutcome({
    result,
    error,
    threw,
    swarms: held.map((h) => h.swarm),
    activity,
    episodeType: msg.episodeType,
    discardEpisodeTimeoutSeconds: msg.discardEpisodeTimeoutSeconds,
    lifetimeExceeded: nowMs > lifetimeEndsAtMs,
    nowMs,
  });
}

function outcomeCause(o: EpisodeOutcome): string {
  return o.kind === "abort" ? o.cause : o.kind;
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
