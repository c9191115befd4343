/**
 * @module edge/run/dispatcher — how episodes leave the scheduler: a two-method interface (issue 3 §3) with two
 * implementations, chosen per deployment by the `AJET_DISPATCH` var ({@link createDispatcher}):
 *  - `queue` (default, production): Cloudflare Queues, `sendBatch` in chunks, spread round-robin over one or more
 *    producer bindings (`EPISODE_QUEUES`) so a run can go past the 250 concurrent consumer invocations of one queue.
 *  - `direct` (local workerd only, set by `ajet-edge dev`): each episode is its own invocation of the episode
 *    Worker's `EpisodeRunner` entrypoint, through the `EPISODE_RUNNER` service binding the dev host adds (or the
 *    loopback `ctx.exports.EpisodeRunner` of a Worker that exports it itself). Miniflare's queue broker delivers one
 *    batch per queue at a time and waits until it is done, so through the local queue no more than `max_batch_size`
 *    episodes could ever be in flight. Not for production: service-binding invocations are capped at 32 per
 *    request there (toolchain.md), and Queues already give one invocation per episode.
 */
import type { EpisodeMessage } from "../../port/index.ts";
import { bindingNamed, type Env } from "../ground/env.ts";

/** Sends episode messages for at-least-once delivery to an episode consumer. */
export interface Dispatcher {
  readonly name: string;
  /** @throws when the messages could not be handed over; none of them should then be assumed sent */
  dispatch(messages: readonly EpisodeMessage[]): Promise<void>;
}

/** Queue limit: messages per `sendBatch` call (Queues limits page). */
export const MAX_BATCH_MESSAGES = 100;
/**
 * Queue limit: 256 KB per `sendBatch` call (Queues limits page). Chunks are cut below it, counting each message's
 * JSON bytes plus {@link MESSAGE_OVERHEAD_BYTES}: a window of large inlined tasks must not fail every dispatch.
 */
export const MAX_BATCH_BYTES = 240_000;
/** Allowance per message for the platform's own framing, bytes. */
export const MESSAGE_OVERHEAD_BYTES = 256;

/** Cuts messages into `sendBatch` chunks within {@link MAX_BATCH_MESSAGES} and {@link MAX_BATCH_BYTES}. */
export function sendBatchChunks(messages: readonly EpisodeMessage[]): EpisodeMessage[][] {
  const encoder = new TextEncoder();
  const chunks: EpisodeMessage[][] = [];
  let chunk: EpisodeMessage[] = [];
  let bytes = 0;
  for (const body of messages) {
    const size = encoder.encode(JSON.stringify(body)).length + MESSAGE_OVERHEAD_BYTES;
    if (chunk.length >= MAX_BATCH_MESSAGES || (chunk.length > 0 && bytes + size > MAX_BATCH_BYTES)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(body);
    bytes += size;
  }
  if (chunk.length) chunks.push(chunk);
  return chunks;
}

/**
 * Dispatch through Cloudflare Queue producer bindings. With several queues (shards, each with its own consumer
 * and its own 250 concurrent invocations), the messages are dealt round-robin across them, continuing where the
 * last dispatch stopped, so in-flight episodes spread evenly.
 */
export class QueueDispatcher implements Dispatcher {
  readonly name = "queue";
  readonly #queues: readonly Queue<EpisodeMessage>[];
  #next = 0;

  /** @throws Error when no queue is given */
  constructor(queues: Queue<EpisodeMessage> | readonly Queue<EpisodeMessage>[]) {
    this.#queues = Array.isArray(queues) ? queues : [queues as Queue<EpisodeMessage>];
    if (this.#queues.length === 0) throw new Error("QueueDispatcher needs at least one queue binding");
  }

  async dispatch(messages: readonly EpisodeMessage[]): Promise<void> {
    const perQueue: EpisodeMessage[][] = this.#queues.map(() => []);
    for (const m of messages) {
      perQueue[this.#next]!.push(m);
      this.#next = (this.#next + 1) % this.#queues.length;
    }
    await Promise.all(
      perQueue.map(async (list, i) => {
        for (const chunk of sendBatchChunks(list)) {
          await this.#queues[i]!.sendBatch(chunk.map((body) => ({ body, contentType: "json" as const })));
        }
      }),
    );
  }
}

/** What the `direct` dispatcher calls: the episode Worker's `EpisodeRunner` entrypoint (edge/consumer/episode-runner-entrypoint.ts). */
export interface EpisodeRunnerService {
  /** Accepts one episode and runs it in its own invocation; resolves once accepted. @throws on a malformed message */
  run(message: EpisodeMessage): Promise<{ accepted: true }>;
}

/**
 * Local-only dispatch: one invocation of `EpisodeRunner` per episode, all started at once (no broker in between,
 * so every episode the scheduler lets out is in flight at once, up to `maxParallel`).
 */
export class DirectDispatcher implements Dispatcher {
  readonly name = "direct";
  constructor(private readonly runner: EpisodeRunnerService) {}

  async dispatch(messages: readonly EpisodeMessage[]): Promise<void> {
    const results = await Promise.allSettled(messages.map((m) => this.runner.run(m)));
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed.length) throw new Error(`${failed.length} of ${messages.length} episodes could not be started: ${String(failed[0]!.reason)}`);
  }
}

/** The service binding to the episode Worker's `EpisodeRunner` entrypoint that the `direct` dispatch calls (added by the dev host). */
export const EPISODE_RUNNER_BINDING = "EPISODE_RUNNER";

/** Dispatch modes of the `AJET_DISPATCH` var. */
export const DISPATCH_MODES = ["queue", "direct"] as const;
export type DispatchMode = (typeof DISPATCH_MODES)[number];

/**
 * The queue bindings to send to: the comma-separated `EPISODE_QUEUES` names (default `EPISODES`).
 * @throws Error naming a listed binding that is not a queue producer
 */
export function episodeQueues(env: Env): Queue<EpisodeMessage>[] {
  const names = (env.EPISODE_QUEUES ?? "EPISODES").split(",").map((s) => s.trim()).filter(Boolean);
  return names.map((name) => {
    const q = bindingNamed(env, name) as Queue<EpisodeMessage> | undefined;
    if (!q || typeof q.sendBatch !== "function") {
      throw new Error(`EPISODE_QUEUES names '${name}', which is not a queue producer binding; add a [[queues.producers]] with binding = "${name}" to wrangler.toml or remove it from EPISODE_QUEUES`);
    }
    return q;
  });
}

/**
 * The dispatcher of this deployment: `AJET_DISPATCH` = `queue` (default) or `direct` (local workerd: needs the
 * `EPISODE_RUNNER` service binding to the episode Worker's entrypoint, which `ajet-edge dev` adds, or a loopback
 * `exports.EpisodeRunner`).
 * @throws Error for an unknown mode, a bad `EPISODE_QUEUES`, or `direct` without the entrypoint
 */
export function createDispatcher(env: Env, exports: unknown): Dispatcher {
  const mode = (env.AJET_DISPATCH ?? "queue") as DispatchMode;
  if (mode === "queue") return new QueueDispatcher(episodeQueues(env));
  if (mode === "direct") {
    const runner =
      (bindingNamed(env, EPISODE_RUNNER_BINDING) as EpisodeRunnerService | undefined) ?? (exports as { EpisodeRunner?: EpisodeRunnerService } | undefined)?.EpisodeRunner;
    if (!runner) {
      throw new Error(`AJET_DISPATCH=direct needs the episode Worker's EpisodeRunner entrypoint (the ${EPISODE_RUNNER_BINDING} service binding \`ajet-edge dev\` adds); use it in local workerd only`);
    }
    return new DirectDispatcher(runner);
  }
  throw new Error(`AJET_DISPATCH is '${String(mode)}'; use one of ${DISPATCH_MODES.join(", ")}`);
}

/**
 * The deployment's dispatcher (queue in production; direct — the episode Worker's entrypoint, local workerd — in
 * `ajet-edge dev`), made on first dispatch, so a bad `AJET_DISPATCH` / `EPISODE_QUEUES` fails that dispatch with its
 * message instead of the object.
 */
export function lazyDispatcher(env: Env, exports: unknown): Dispatcher {
  let made: Dispatcher | null = null;
  return { name: "deployment", dispatch: (messages) => (made ??= createDispatcher(env, exports)).dispatch(messages) };
}
