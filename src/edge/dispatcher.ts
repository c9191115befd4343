/**
 * @module edge/dispatcher — how episodes leave the scheduler: a two-method interface (issue 3 §3), implemented by
 * a Cloudflare Queue (`sendBatch`, at most 100 messages per call). A service-binding dispatcher could replace it;
 * note the production cap of 32 service-binding invocations per request if you do (toolchain.md).
 */
import type { EpisodeMessage } from "../port/index.ts";

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

/** Dispatch through a Cloudflare Queue producer binding, in chunks within {@link MAX_BATCH_MESSAGES} and {@link MAX_BATCH_BYTES}. */
export class QueueDispatcher implements Dispatcher {
  readonly name = "queue";
  constructor(private readonly queue: Queue<EpisodeMessage>) {}

  async dispatch(messages: readonly EpisodeMessage[]): Promise<void> {
    const encoder = new TextEncoder();
    let chunk: EpisodeMessage[] = [];
    let bytes = 0;
    const flush = async () => {
      if (chunk.length) await this.queue.sendBatch(chunk.map((body) => ({ body, contentType: "json" as const })));
      chunk = [];
      bytes = 0;
    };
    for (const body of messages) {
      const size = encoder.encode(JSON.stringify(body)).length + MESSAGE_OVERHEAD_BYTES;
      if (chunk.length >= MAX_BATCH_MESSAGES || (chunk.length > 0 && bytes + size > MAX_BATCH_BYTES)) await flush();
      chunk.push(body);
      bytes += size;
    }
    await flush();
  }
}
