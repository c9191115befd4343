/**
 * @module edge/dispatcher — how episodes leave the scheduler: a two-method interface (issue 3 §3), implemented by
 * a Cloudflare Queue (`sendBatch`, at most 100 messages per call). A service-binding dispatcher could replace it;
 * note the production cap of 32 service-binding invocations per request if you do (toolchain.md).
 */
import type { EpisodeMessage } from "../runtime/messages.ts";

/** Sends episode messages for at-least-once delivery to an episode consumer. */
export interface Dispatcher {
  readonly name: string;
  /** @throws when the messages could not be handed over; none of them should then be assumed sent */
  dispatch(messages: readonly EpisodeMessage[]): Promise<void>;
}

/** Queue limit: messages per `sendBatch` call (Queues limits page). */
export const MAX_BATCH_MESSAGES = 100;

/** Dispatch through a Cloudflare Queue producer binding, in chunks of {@link MAX_BATCH_MESSAGES}. */
export class QueueDispatcher implements Dispatcher {
  readonly name = "queue";
  constructor(private readonly queue: Queue<EpisodeMessage>) {}

  async dispatch(messages: readonly EpisodeMessage[]): Promise<void> {
    for (let i = 0; i < messages.length; i += MAX_BATCH_MESSAGES) {
      await this.queue.sendBatch(messages.slice(i, i + MAX_BATCH_MESSAGES).map((body) => ({ body, contentType: "json" as const })));
    }
  }
}
