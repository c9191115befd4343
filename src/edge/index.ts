/**
 * @module edge — the ajet-edge Worker: the HTTP API, the per-episode queue consumer, the RolloutScheduler
 * Durable Object (wrangler.toml binds them) and the `EpisodeRunner` entrypoint of the local `direct` dispatch.
 */
import "./fence.ts"; // first: function modules loaded below see the fenced global fetch
import { rolloutFunctions } from "../../functions/index.ts";
import { createApp } from "./app.ts";
import type { Env } from "./env.ts";
import { handleEpisodeBatch } from "./episode-consumer.ts";

export { RolloutScheduler } from "./rollout-scheduler.ts";
export { RunQuota } from "./run-quota.ts";
export { RunIndex } from "./run-index.ts";
export { SwarmServer } from "./swarm-server.ts";
export { EpisodeRunner } from "./episode-runner-entrypoint.ts";
export type { Env } from "./env.ts";

const app = createApp(rolloutFunctions);

export default {
  fetch: app.fetch,
  async queue(batch, env) {
    await handleEpisodeBatch(batch, env, rolloutFunctions);
  },
} satisfies ExportedHandler<Env, unknown>;
