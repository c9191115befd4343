/**
 * @module test/chaos/worker — the chaos suite's Worker: the project's Worker (the `createWorker` factory: API,
 * Durable Objects, queue consumer, per-episode entrypoint) with the chaos functions registered next to the shipped
 * ones. Its wrangler config is the project's own wrangler.toml with `main` pointed here (harness.ts writes it).
 */
import { createWorker } from "../../src/edge/worker.ts";
import { rolloutFunctions } from "../../functions/index.ts";
import { chaosFunctions } from "./functions.ts";

export * from "../../src/edge/worker.ts";
export default createWorker({ ...rolloutFunctions, ...chaosFunctions });
