/**
 * @module edge/consumer/episode-runner-entrypoint — `EpisodeRunner`, the Worker entrypoint the local `direct` dispatcher
 * invokes once per episode (edge/run/dispatcher.ts). Each call is its own invocation with its own 6 connections and
 * subrequest budget, like a queue consumer invocation with `max_batch_size` 1; it answers as soon as the message
 * is accepted and runs the episode in `waitUntil`. The queue's redelivery is kept: an episode that asks for a
 * retry (scheduler unreachable before anything reached the server) is run again after the same delay, at most
 * {@link DIRECT_MAX_RETRIES} times (wrangler.toml's `max_retries`); beyond that the scheduler's dispatch lease
 * brings the episode back. Local workerd only (`AJET_DISPATCH=direct`).
 */
import { WorkerEntrypoint } from "cloudflare:workers";
import { realSleep } from "../../client/index.ts";
import { EpisodeMessage } from "../../port/index.ts";
import type { Env } from "../ground/env.ts";
import { rolloutFunctions } from "./functions-registry.ts";
import { invocationShare, runEpisodeMessage } from "./episode-consumer.ts";
import { jsonLogger } from "../ground/log.ts";

/** Redeliveries of one direct-dispatched message, as wrangler.toml's `max_retries` for the queue. */
export const DIRECT_MAX_RETRIES = 3;

/** One episode per invocation, for the local `direct` dispatch. */
export class EpisodeRunner extends WorkerEntrypoint<Env> {
  /**
   * Accepts one episode message and runs it after answering.
   * @throws Error naming the first bad field when the message is malformed (nothing is started)
   */
  async run(message: unknown): Promise<{ accepted: true }> {
    const parsed = EpisodeMessage.safeParse(message);
    if (!parsed.success) {
      const i = parsed.error.issues[0];
      throw new Error(`malformed episode message: ${i?.path.join(".") || "(body)"}: ${i?.message}`);
    }
    const env = this.env;
    this.ctx.waitUntil(
      (async () => {
        const share = invocationShare(env); // one invocation: one limiter, one budget, one wall deadline
        for (let attempt = 0; ; attempt++) {
          const verdict = await runEpisodeMessage(parsed.data, env, rolloutFunctions(), share, attempt + 1);
          if (verdict.kind === "ack") return;
          if (attempt >= DIRECT_MAX_RETRIES) {
            jsonLogger({ run: parsed.data.runId, episode: parsed.data.episodeKey }).warn("message dropped after its retries; the dispatch lease brings the episode back");
            return;
          }
          await realSleep(verdict.delaySeconds * 1000);
        }
      })(),
    );
    return { accepted: true };
  }
}
