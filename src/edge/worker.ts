/**
 * @module ajet-edge/worker — the main Worker built from a project's rollout functions: the runs API, the dashboard and
 * the Durable Objects. Episodes run in the slim episode Worker (`ajet-edge/episode-worker`, wrangler.episode.toml;
 * docs/design/episode-worker.md), which consumes the episode queue this Worker's runs send to. A project's Worker
 * entry (wrangler.toml `main`) is three lines:
 *
 * ```ts
 * import { createWorker } from "ajet-edge/worker"; // first: the Worker's own modules load before the functions
 * import { rolloutFunctions } from "../functions/index.ts";
 * export * from "ajet-edge/worker"; // the Durable Object classes wrangler.toml binds
 * export default createWorker(rolloutFunctions);
 * ```
 *
 * Every Durable Object class and entrypoint the Worker needs is re-exported here, so a new class reaches every
 * project through `export *`; only its wrangler.toml binding and migration must be added (the template's
 * wrangler.toml is this repository's). Add a new class to the export list below.
 */
import "./ground/fence.ts"; // first: the global fetch is fenced by episode key before any function module loads
import { createApp } from "./api/app.ts";
import type { Env } from "./ground/env.ts";
import { setRolloutFunctions, type RolloutFunctions } from "./consumer/functions-registry.ts";

// The Durable Object classes and entrypoints (each bound in wrangler.toml).
export { RolloutScheduler } from "./run/rollout-scheduler.ts";
export { RunQuota } from "./api/run-quota.ts";
export { RunIndex } from "./api/run-index.ts";
export { SwarmServer } from "./swarm-server/swarm-server.ts";

export type { Env } from "./ground/env.ts";
export type { RolloutFunctions } from "./consumer/functions-registry.ts";

/** The Worker's default export: the HTTP API (episodes run in the episode Worker, `ajet-edge/episode-worker`). */
export interface AjetEdgeWorker {
  fetch(request: Request, env: Env, ctx?: ExecutionContext): Response | Promise<Response>;
}

/**
 * Builds the Worker's handlers over `functions` (name → function, the key equal to the function's `name`) and
 * registers them for the classes of this isolate. Call it once, at module load, and export the result as default.
 * @throws Error when a key differs from its function's `name`
 */
export function createWorker(functions: RolloutFunctions): AjetEdgeWorker {
  setRolloutFunctions(functions);
  const app = createApp(functions);
  return {
    fetch: (request, env, ctx) => app.fetch(request, env, ctx),
  };
}
