/**
 * @module ajet-edge/episode-worker — the slim episode Worker (docs/design/episode-worker.md): the per-episode queue
 * consumer and the `EpisodeRunner` entrypoint (local `direct` dispatch), over a project's rollout functions. It
 * loads the runtime, the protocol client and the functions; not the HTTP API, the dashboard, run creation's YAML and
 * schema machinery or the Durable Object classes, which live in the main Worker (`ajet-edge/worker`). It reaches the
 * runs' objects through the `SCHEDULER` binding with `script_name` = the main Worker. A project's episode entry
 * (wrangler.episode.toml `main`) is four lines (`EpisodeHost` holds episodes past the consumer's wall,
 * docs/design/long-episodes.md):
 *
 * ```ts
 * import { createEpisodeWorker } from "ajet-edge/episode-worker"; // first: the global fetch is fenced before any function loads
 * import { rolloutFunctions } from "../functions/index.ts";
 * export { EpisodeRunner, EpisodeHost } from "ajet-edge/episode-worker";
 * export default createEpisodeWorker(rolloutFunctions);
 * ```
 */
import "./ground/fence.ts"; // first: the global fetch is fenced by episode key before any function module loads
import type { Env } from "./ground/env.ts";
import { handleEpisodeBatch } from "./consumer/episode-consumer.ts";
import { setRolloutFunctions, type RolloutFunctions } from "./consumer/functions-registry.ts";

export { EpisodeRunner } from "./consumer/episode-runner-entrypoint.ts";
export { EpisodeHost } from "./episode-host.ts";
export type { Env } from "./ground/env.ts";
export type { RolloutFunctions } from "./consumer/functions-registry.ts";

/** The episode Worker's default export: the queue consumer, and a `fetch` that only says where the API is. */
export interface EpisodeWorker {
  fetch(request: Request, env: Env, ctx?: ExecutionContext): Response;
  queue(batch: MessageBatch<unknown>, env: Env, ctx?: ExecutionContext): Promise<void>;
}

/** What the episode Worker answers any HTTP request with: it has no routes. */
export const EPISODE_WORKER_HTTP_ANSWER = "this is the ajet-edge episode Worker: it only runs episodes from the queue; the runs API is on the main Worker\n";

/**
 * Builds the episode Worker over `functions` (name → function, the key equal to the function's `name`) and registers
 * them for the `EpisodeRunner` entrypoint of this isolate. Call it once, at module load, and export the result as default.
 * @throws Error when a key differs from its function's `name`
 */
export function createEpisodeWorker(functions: RolloutFunctions): EpisodeWorker {
  setRolloutFunctions(functions);
  return {
    fetch: () => new Response(EPISODE_WORKER_HTTP_ANSWER, { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } }),
    async queue(batch, env) {
      await handleEpisodeBatch(batch, env, functions);
    },
  };
}
