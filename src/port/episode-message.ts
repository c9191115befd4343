/**
 * @module port/episode-message — the queue message: one try of one logical episode, sent by the scheduler Durable
 * Object, read by the queue consumer (docs/design/episode-lifecycle.md).
 */
import * as z from "zod/mini";
import "../protocol/zod-locale.ts"; // zod's English messages for these schemas
import { EpisodeType, SwarmThrottlePolicy, Task } from "../protocol/index.ts";
import { EpisodeSandboxConfig } from "./sandbox.ts";

/** Queue messages are at most 128 KB (Queues limits); tasks larger than this are fetched from the DO (BC-53). */
export const MAX_INLINE_TASK_BYTES = 64 * 1024;

/**
 * A swarm server of a run: its name in the run spec, its URL and, when it sits behind a gateway, its header
 * *templates* (`{secret:NAME}`, see protocol/gateway-headers.ts). Secret values never travel in a queue message:
 * the consumer asks the scheduler for the resolved headers (`SchedulerPort.swarmHeaders`).
 */
export const SwarmRef = z.object({ name: z.string().check(z.minLength(1)), url: z.string().check(z.minLength(1)), headers: z.optional(z.record(z.string(), z.string())) });
export type SwarmRef = z.infer<typeof SwarmRef>;

/**
 * One queue message = one try of one logical episode (issue 3 §3). Everything the consumer needs to claim, run
 * and report; the task is inline when it is small, else `taskRef` names it and the consumer asks the DO.
 */
export const EpisodeMessage = z.object({
  v: z.literal(1),
  runId: z.string().check(z.minLength(1)),
  episodeKey: z.string().check(z.minLength(1)),
  attempt: z.int().check(z.gte(1)),
  /** which queue message of this attempt (1-based): tells a redelivery of an older dispatch apart */
  dispatchId: z.int().check(z.gte(1)),
  /** the run's client uuid: every claim/end/abort of the run uses it (spec §8.1) */
  clientUuid: z.string().check(z.minLength(1)),
  functionName: z.string().check(z.minLength(1)),
  episodeType: EpisodeType,
  /** the swarms to claim on, in the function's order; the first one's global step attributes the episode */
  swarms: z.array(SwarmRef).check(z.minLength(1)),
  discardEpisodeTimeoutSeconds: z.number().check(z.positive()),
  /** per-swarm throttle policy (spec §7), null for eval claims */
  throttlePolicy: z.nullable(SwarmThrottlePolicy),
  taskId: z.string().check(z.minLength(1)),
  task: z.optional(Task),
  taskRef: z.object({ source: z.string(), taskIndex: z.int().check(z.gte(0)) }),
  /** epoch ms: report the claim before this instant or the scheduler's lease expires the attempt */
  leaseDeadlineAtMs: z.number(),
  /** seconds between the running episode's heartbeats (`SchedulerPort.episodeHeartbeat`); absent: none are sent */
  heartbeatSeconds: z.optional(z.number().check(z.positive())),
  /** the model name functions put in requests (swarm servers ignore it, spec §9.3) */
  model: z._default(z.string(), "agentjet-policy"),
  /**
   * the run has secrets (their values come only with the claim report's answer): the function then starts once
   * that answer is in. False: the function starts while the claim is being reported (claim → first LLM call without
   * the scheduler's round trip); nothing is committed before the answer. Absent (older messages): true.
   */
  runHasSecrets: z.optional(z.boolean()),
  /** the run's `sandbox` block, resolved (port/sandbox); absent: the run's functions get no sandbox */
  sandbox: z.optional(EpisodeSandboxConfig),
});
export type EpisodeMessage = z.infer<typeof EpisodeMessage>;
