/**
 * @module edge — this repository's Worker (wrangler.toml `main`): the factory of `ajet-edge/worker` over the
 * functions of `functions/index.ts`, written as a user's project writes it. The HTTP API and the Durable Object
 * classes come from `./worker.ts`; episodes run in the episode Worker (`./episode.ts`, wrangler.episode.toml).
 */
import "./ground/fence.ts"; // first: function modules loaded below see the fenced global fetch
import { createWorker } from "./worker.ts";
import { rolloutFunctions } from "../../functions/index.ts";

// named, not `export *`: `wrangler types` reads this module's export names to type each binding with its class
export { RolloutScheduler, RunIndex, RunQuota, SwarmServer } from "./worker.ts";
export type { AjetEdgeWorker, Env, RolloutFunctions } from "./worker.ts";
export default createWorker(rolloutFunctions);
