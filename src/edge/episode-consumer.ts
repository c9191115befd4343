/**
 * @module edge/episode-consumer — the queue consumer: each message is one episode (issue 3 §3), run by
 * `runEpisode`. The messages of one batch run side by side (`Promise.allSettled`, BC-34) and share this
 * invocation's limits: at most 6 outbound connections (BC-48) and one subrequest budget (BC-49). Each message is
 * acked or retried on its own.
 */
import { realSleep } from "../client/index.ts";
import type { RolloutFunction } from "../sdk/contract.ts";
import { runEpisode, type EpisodeRunResult } from "../runtime/episode-runner.ts";
import { ConnectionLimiter, SubrequestBudget } from "../runtime/limits.ts";
import { EpisodeMessage, type SchedulerPort } from "../port/index.ts";
import type { Env } from "./env.ts";
// the global fetch fenced by episode key: a function's own client (fromAgentRun) goes through its episode's guards
import { keyFence } from "./fence.ts";
import { jsonLogger } from "./log.ts";
import { outboundFetch, outboundPolicy } from "../runtime/outbound.ts";
import { parseOperatorSecrets } from "./secrets.ts";

/** Queue consumers may run 15 minutes (Queues limits); episodes are stopped early enough to report. */
export const CONSUMER_WALL_LIMIT_MS = 15 * 60 * 1000;
/** Default per-invocation subrequest budget (Workers Paid: 1,000 in older docs, 10,000 now). */
export const DEFAULT_SUBREQUEST_LIMIT = 1000;

/** The consumer's lines that belong to no episode. */
const consumerLog = jsonLogger();

function parseSecrets(raw: string | undefined): Record<string, string> {
  const { secrets, problem } = parseOperatorSecrets(raw);
  if (problem) consumerLog.error(problem);
  return secrets;
}

/** The scheduler port of a run: its Durable Object's RPC methods. */
export function schedulerPort(env: Env, runId: string): SchedulerPort {
  return env.SCHEDULER.get(env.SCHEDULER.idFromName(runId)) as unknown as SchedulerPort;
}

/**
 * Handles one batch: parses each message (a malformed one is acked and logged, never retried forever), runs the
 * episodes side by side, then acks each one — or retries it when nothing reached the server yet and the
 * scheduler could not be told (`retry`).
 */
export async function handleEpisodeBatch(
  batch: MessageBatch<unknown>,
  env: Env,
  functions: Readonly<Record<string, RolloutFunction>>,
  startedAtMs = Date.now(),
): Promise<void> {
  const limiter = new ConnectionLimiter();
  const budget = new SubrequestBudget(Number(env.SUBREQUEST_LIMIT ?? DEFAULT_SUBREQUEST_LIMIT) || DEFAULT_SUBREQUEST_LIMIT);
  const secrets = parseSecrets(env.AJET_SECRETS);
  // every swarm, LLM, judge and tool call of the batch: allowed hosts only, operator credentials only to their endpoint
  // over the platform fetch itself: the global fetch is the key fence, which routes episode keys back here
  const outbound = outboundFetch(keyFence.original, outboundPolicy(env.AJET_ALLOWED_HOSTS, secrets));
  await Promise.allSettled(
    batch.messages.map(async (m) => {
      const parsed = EpisodeMessage.safeParse(m.body);
      if (!parsed.success) {
        consumerLog.error("malformed episode message; dropped", { issues: parsed.error.issues.slice(0, 5) });
        return m.ack();
      }
      const msg = parsed.data;
      const log = jsonLogger({ run: msg.runId, episode: msg.episodeKey, attempt: msg.attempt, task: msg.taskId });
      let result: EpisodeRunResult;
      try {
        result = await runEpisode(msg, {
          port: schedulerPort(env, msg.runId),
          functions,
          fetch: outbound,
          keyFence,
          limiter,
          budget,
          now: () => Date.now(),
          sleep: realSleep,
          random: () => Math.random(),
          log,
          secrets,
          invocationDeadlineAtMs: startedAtMs + CONSUMER_WALL_LIMIT_MS,
        });
      } catch (err) {
        log.error("episode crashed before any outcome; retrying the message", { error: String(err) });
        return m.retry({ delaySeconds: 2 });
      }
      if (result.kind === "retry") {
        log.warn("scheduler unreachable; retrying the message", { reason: result.reason });
        return m.retry({ delaySeconds: 2 });
      }
      // claim failures and stale attempts are normal (engine not ROLLING, a redelivery, a run draining): info
      if (result.kind === "claimFailed" || result.kind === "stale") log.info(`episode ${result.kind}`, { ...result });
      else if (result.kind !== "reported") log.warn(`episode ${result.kind}`, { ...result });
      m.ack();
    }),
  );
}
