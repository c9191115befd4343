/**
 * @module runtime/messages — what crosses between the scheduler Durable Object and an episode invocation: the
 * queue message (one episode) and the scheduler port the consumer reports through (docs/design/episode-lifecycle.md).
 */
import { z } from "zod";
import { EpisodeType, SwarmThrottlePolicy, Task, type ValidWorkflowOutput } from "../protocol/index.ts";
import type {
  ClaimFailed,
  EpisodeClaimed,
  EpisodeOutcomeRecorded,
  EpisodeReported,
  EventAck,
} from "../scheduler/index.ts";

/** Queue messages are at most 128 KB (Queues limits); tasks larger than this are fetched from the DO (BC-53). */
export const MAX_INLINE_TASK_BYTES = 64 * 1024;

/** A swarm server of a run: its name in the run spec and its URL. */
export const SwarmRef = z.object({ name: z.string().min(1), url: z.string().min(1) });
export type SwarmRef = z.infer<typeof SwarmRef>;

/**
 * One queue message = one try of one logical episode (issue 3 §3). Everything the consumer needs to claim, run
 * and report; the task is inline when it is small, else `taskRef` names it and the consumer asks the DO.
 */
export const EpisodeMessage = z.object({
  v: z.literal(1),
  runId: z.string().min(1),
  episodeKey: z.string().min(1),
  attempt: z.number().int().min(1),
  /** which queue message of this attempt (1-based): tells a redelivery of an older dispatch apart */
  dispatchId: z.number().int().min(1),
  /** the run's client uuid: every claim/end/abort of the run uses it (spec §8.1) */
  clientUuid: z.string().min(1),
  functionName: z.string().min(1),
  episodeType: EpisodeType,
  /** the swarms to claim on, in the function's order; the first one's global step attributes the episode */
  swarms: z.array(SwarmRef).min(1),
  discardEpisodeTimeoutSeconds: z.number().positive(),
  /** per-swarm throttle policy (spec §7), null for eval claims */
  throttlePolicy: SwarmThrottlePolicy.nullable(),
  taskId: z.string().min(1),
  task: Task.optional(),
  taskRef: z.object({ source: z.string(), taskIndex: z.number().int().min(0) }),
  /** epoch ms: report the claim before this instant or the scheduler's lease expires the attempt */
  leaseDeadlineAtMs: z.number(),
  /** the model name functions put in requests (swarm servers ignore it, spec §9.3) */
  model: z.string().default("agentjet-policy"),
});
export type EpisodeMessage = z.infer<typeof EpisodeMessage>;

/** `episodeOutcomeRecorded` plus the full outputs per swarm, kept in the DO's outbox for resends (BC-26, BC-51). */
export type OutcomeReport = Omit<EpisodeOutcomeRecorded, "type"> & {
  outputs?: Record<string, ValidWorkflowOutput>;
};

/** The answer to `episodeClaimed`: the core's ack, plus the run's secrets when the episode may go on. */
export type ClaimAck = EventAck & { secrets?: Record<string, string> };

/**
 * The scheduler as seen from an episode invocation: the Durable Object's RPC methods (idempotent by
 * `(episodeKey, attempt)`, answering with the core's {@link EventAck}).
 */
export interface SchedulerPort {
  episodeClaimed(report: Omit<EpisodeClaimed, "type">): Promise<ClaimAck>;
  claimFailed(report: Omit<ClaimFailed, "type">): Promise<EventAck>;
  episodeOutcomeRecorded(report: OutcomeReport): Promise<EventAck>;
  episodeReported(report: Omit<EpisodeReported, "type">): Promise<EventAck>;
  /** the task of a message whose task was too large to inline (BC-53) */
  getTask(ref: { source: string; taskIndex: number }): Promise<Task> | Task;
}

/**
 * One server episode whose reward the server accepted (`/end_episode` answered success, BC-26 resends included):
 * a row of the run's ledger, `GET /runs/:id/episodes`.
 */
export interface EndedEpisode {
  episodeKey: string;
  attempt: number;
  swarm: string;
  episodeUuid: string;
  taskId: string;
  /** the swarm's `global_step` read right after the claim: the training step the episode belongs to */
  globalStep: number | null;
  reward: number;
  /** epoch ms when the DO recorded it */
  atMs: number;
}
