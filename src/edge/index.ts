/**
 * @module edge — the ajet-edge Worker: the HTTP API, the per-episode queue consumer and the RolloutScheduler
 * Durable Object (wrangler.toml binds them).
 */
import "./fence.ts"; // first: function modules loaded below see the fenced global fetch
import { rolloutFunctions } from "../../functions/index.ts";
import { createApp } from "./app.ts";
import type { Env } from "./env.ts";
import { handleEpisodeBatch } from "./episode-consumer.ts";

export { RolloutScheduler } from "./rollout-scheduler.ts";
export { RunQuota } from "./run-quota.ts";
export type { Env } from "./env.ts";

const app = createApp(rolloutFunctions);

export default {
  fetch: app.fetch,
  async queue(batch, env) {
    await handleEpisodeBatch(batch, env, rolloutFunctions);
  },
} satisfies ExportedHandler<Env, unknown>;
