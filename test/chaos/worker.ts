/**
 * @module test/chaos/worker — the chaos suite's Worker: the project's Worker (API, Durable Object, queue consumer)
 * with the chaos functions registered next to the shipped ones.
 */
import "../../src/edge/fence.ts";
import { rolloutFunctions } from "../../functions/index.ts";
import { createApp } from "../../src/edge/app.ts";
import type { Env } from "../../src/edge/env.ts";
import { handleEpisodeBatch } from "../../src/edge/episode-consumer.ts";
import { chaosFunctions } from "./functions.ts";

export { RolloutScheduler } from "../../src/edge/rollout-scheduler.ts";
export { RunQuota } from "../../src/edge/run-quota.ts";

const functions = { ...rolloutFunctions, ...chaosFunctions };
const app = createApp(functions);

export default {
  fetch: app.fetch,
  async queue(batch, env) {
    await handleEpisodeBatch(batch, env, functions);
  },
} satisfies ExportedHandler<Env, unknown>;
