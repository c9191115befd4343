/**
 * @module edge — this repository's Worker (wrangler.toml `main`): the factory of `ajet-edge/worker` over the
 * functions of `functions/index.ts`, written as a user's project writes it. The HTTP API, the per-episode queue
 * consumer and the Durable Object classes all come from `./worker.ts`.
 */
import "./ground/fence.ts"; // first: function modules loaded below see the fenced global fetch
import { createWorker } from "./worker.ts";
import { rolloutFunctions } from "../../functions/index.ts";

export * from "./worker.ts";
export default createWorker(rolloutFunctions);
