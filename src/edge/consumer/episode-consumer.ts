/**
 * @module edge/consumer/episode-consumer — the queue consumer: each message is one episode (issue 3 §3), run by
 * `runEpisode`. wrangler.toml sets `max_batch_size` 1, so each episode has an invocation of its own; should a
 * batch hold more, its messages run side by side (`Promise.allSettled`, BC-34) and share this invocation's limits:
 * at most 6 outbound connections (BC-48) and one subrequest budget (BC-49). Each message is acked or retried on its
 * own. `runEpisodeMessage` is the same path for the local `direct` dispatch (edge/consumer/episode-runner-entrypoint.ts).
 */
import { realSleep } from "../../client/index.ts";
import type { RolloutFunction } from "../../sdk/contract.ts";
import { runEpisode, type EpisodeRunResult } from "../../runtime/episode-runner.ts";
import { ConnectionLimiter, SubrequestBudget } from "../../runtime/limits.ts";
import { EpisodeMessage, type SandboxLedgerPort, type SchedulerPort } from "../../port/index.ts";
import { isReadOnly, type Env } from "../ground/env.ts";
// the global fetch fenced by episode key: a function's own client (fromAgentRun) goes through its episode's guards
import { keyFence } from "../ground/fence.ts";
import { jsonLogger } from "../ground/log.ts";
import { outboundFetch, outboundPolicy, type OutboundFetch } from "../../runtime/outbound.ts";
import { parseOperatorSecrets } from "../ground/secrets.ts";
import { r2TranscriptSink } from "../ground/transcripts.ts";
import { episodeSandboxes } from "./sandboxes.ts";
import { consumerHandover, reportReserveMs } from "./handover-plan.ts";

/** Queue consumers may run 15 minutes (Queues limits); episodes are stopped early enough to report. */
export const CONSUMER_WALL_LIMIT_MS = 15 * 60 * 1000;

/**
 * The wall one invocation has, ms: `AJET_CONSUMER_WALL_SECONDS` (a tuning value: local workerd enforces no wall, so
 * a test can give a short one), else {@link CONSUMER_WALL_LIMIT_MS}. A value that is not a number of seconds in
 * (0, 900] is ignored with one logged line: the platform's wall cannot be lengthened by a var.
 */
export function consumerWallMs(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === "") return CONSUMER_WALL_LIMIT_MS;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds * 1000 > CONSUMER_WALL_LIMIT_MS) {
    consumerLog.error(`AJET_CONSUMER_WALL_SECONDS is ${JSON.stringify(raw)}; give seconds in (0, ${CONSUMER_WALL_LIMIT_MS / 1000}]; using ${CONSUMER_WALL_LIMIT_MS / 1000}`);
    return CONSUMER_WALL_LIMIT_MS;
  }
  return seconds * 1000;
}
/** Default per-invocation subrequest budget (Workers Paid: 1,000 in older docs, 10,000 now). */
export const DEFAULT_SUBREQUEST_LIMIT = 1000;

/** The consumer's lines that belong to no episode. */
const consumerLog = jsonLogger();

function parseSecrets(raw: string | undefined): Record<string, string> {
  const { secrets, problem } = parseOperatorSecrets(raw);
  if (problem) consumerLog.error(problem);
  return secrets;
}

/** The scheduler port of a run: its Durable Object's RPC methods (the episode's reports and its sandbox ledger). */
export function schedulerPort(env: Env, runId: string): SchedulerPort & SandboxLedgerPort {
  return env.SCHEDULER.get(env.SCHEDULER.idFromName(runId));
}

/** What one invocation's episodes share: the 6-connection limiter (BC-48), the subrequest budget (BC-49), the run secrets and the wall deadline. */
export interface InvocationShare {
  limiter: ConnectionLimiter;
  budget: SubrequestBudget;
  secrets: Record<string, string>;
  /** every swarm, LLM, judge and tool call: allowed hosts only, operator credentials only to their endpoint */
  outbound: OutboundFetch;
  /** where each episode's transcript goes (R2 `TRANSCRIPTS`; nowhere without the binding) */
  transcripts: ReturnType<typeof r2TranscriptSink>;
  /** epoch ms when this invocation started (its wall limit counts from here) */
  startedAtMs: number;
  /** epoch ms of this invocation's wall: `startedAtMs` + {@link consumerWallMs} */
  wallAtMs: number;
}

/** A fresh {@link InvocationShare} for one invocation. */
export function invocationShare(env: Env, startedAtMs = Date.now()): InvocationShare {
  const secrets = parseSecrets(env.AJET_SECRETS);
  return {
    limiter: new ConnectionLimiter(),
    budget: new SubrequestBudget(Number(env.SUBREQUEST_LIMIT ?? DEFAULT_SUBREQUEST_LIMIT) || DEFAULT_SUBREQUEST_LIMIT),
    secrets,
    // over the platform fetch itself: the global fetch is the key fence, which routes episode keys back here
    outbound: outboundFetch(keyFence.original, outboundPolicy(env.AJET_ALLOWED_HOSTS, secrets)),
    transcripts: r2TranscriptSink(env),
    startedAtMs,
    wallAtMs: startedAtMs + consumerWallMs(env.AJET_CONSUMER_WALL_SECONDS),
  };
}

/**
 * What every holder of an episode in this Worker runs it with (the queue consumer, the direct dispatch and each
 * EpisodeHost leg): the run's scheduler port, the invocation's share (limits, secrets, outbound policy, transcripts,
 * wall) and the platform's clock, sleep and randomness. The caller adds its report reserve and handover.
 */
export function holderDeps(msg: EpisodeMessage, env: Env, share: InvocationShare, functions: Readonly<Record<string, RolloutFunction>>, log: ReturnType<typeof jsonLogger>) {
  const port = schedulerPort(env, msg.runId);
  return {
    port,
    ...episodeSandboxes(msg, env, share, port),
    functions,
    fetch: share.outbound,
    keyFence,
    limiter: share.limiter,
    budget: share.budget,
    now: () => Date.now(),
    sleep: realSleep,
    random: () => Math.random(),
    log,
    secrets: share.secrets,
    invocationDeadlineAtMs: share.wallAtMs,
    transcripts: share.transcripts,
  };
}

/** What the delivery should do with a message after its episode: drop it (done) or deliver it again later. */
export type MessageVerdict = { kind: "ack" } | { kind: "retry"; delaySeconds: number };

/** Pause before a message is delivered again (scheduler unreachable, or a crash before any outcome), seconds. */
export const MESSAGE_RETRY_DELAY_SECONDS = 2;

/**
 * Runs the episode of one message body: a malformed body is dropped (logged, never retried forever); a retry is
 * asked for only when nothing reached the server yet and the scheduler could not be told. A read-only Worker
 * (`AJET_READ_ONLY`, a stored state reopened to be looked at) runs nothing: the message is dropped before any claim,
 * and the run's dispatch lease brings the episode back when the run runs again. Never throws.
 */
export async function runEpisodeMessage(
  body: unknown,
  env: Env,
  functions: Readonly<Record<string, RolloutFunction>>,
  share: InvocationShare,
  /** how many times this message was delivered, this one included (the queue's `attempts`; 1 = first) */
  deliveries = 1,
): Promise<MessageVerdict> {
  const parsed = EpisodeMessage.safeParse(body);
  if (!parsed.success) {
    consumerLog.error("malformed episode message; dropped", { issues: parsed.error.issues.slice(0, 5) });
    return { kind: "ack" };
  }
  const msg = parsed.data;
  const log = jsonLogger({ run: msg.runId, episode: msg.episodeKey, attempt: msg.attempt, task: msg.taskId });
  if (isReadOnly(env)) {
    log.info("read-only Worker (AJET_READ_ONLY): episode not run; the run dispatches it again when it runs again");
    return { kind: "ack" };
  }
  let result: EpisodeRunResult;
  try {
    result = await runEpisode(msg, {
      ...holderDeps(msg, env, share, functions, log),
      reportReserveMs: reportReserveMs(share.wallAtMs - share.startedAtMs),
      redelivery: deliveries > 1,
      // past the wall the episode goes on in its EpisodeHost (docs/design/long-episodes.md)
      handover: consumerHandover(env, { atMs: share.wallAtMs, ms: share.wallAtMs - share.startedAtMs }),
    });
  } catch (err) {
    log.error("episode crashed before any outcome; retrying the message", { error: String(err) });
    return { kind: "retry", delaySeconds: MESSAGE_RETRY_DELAY_SECONDS };
  }
  if (result.kind === "retry") {
    log.warn("scheduler unreachable; retrying the message", { reason: result.reason });
    return { kind: "retry", delaySeconds: MESSAGE_RETRY_DELAY_SECONDS };
  }
  // claim failures and stale attempts are normal (engine not ROLLING, a redelivery, a run draining): info
  if (result.kind === "claimFailed" || result.kind === "stale") log.info(`episode ${result.kind}`, { ...result });
  else if (result.kind === "handedOver") log.info("episode handed over to its host", { ...result });
  else if (result.kind !== "reported") log.warn(`episode ${result.kind}`, { ...result });
  return { kind: "ack" };
}

/**
 * Handles one queue batch (production: `max_batch_size` 1, so one episode per invocation): runs the episodes side
 * by side, sharing the invocation's limits, then acks or retries each one on its own.
 */
export async function handleEpisodeBatch(
  batch: MessageBatch<unknown>,
  env: Env,
  functions: Readonly<Record<string, RolloutFunction>>,
  startedAtMs = Date.now(),
): Promise<void> {
  const share = invocationShare(env, startedAtMs);
  await Promise.allSettled(
    batch.messages.map(async (m) => {
      const verdict = await runEpisodeMessage(m.body, env, functions, share, m.attempts);
      if (verdict.kind === "retry") m.retry({ delaySeconds: verdict.delaySeconds });
      else m.ack();
    }),
  );
}
