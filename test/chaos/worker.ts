/**
 * @module test/chaos/worker — the chaos suite's main Worker: the project's Worker (the `createWorker` factory: API,
 * Durable Objects) with the chaos functions registered next to the shipped ones (run creation checks the names; the
 * episodes run in test/chaos/episode-worker.ts). Its wrangler config is the project's own wrangler.toml with `main` pointed here (harness.ts writes it).
 */
import { createWorker } from "../../src/edge/worker.ts";
import { rolloutFunctions } from "../../functions/index.ts";
import { chaosFunctions } from "./functions.ts";

export * from "../../src/edge/worker.ts";
export default createWorker({ ...rolloutFunctions, ...chaosFunctions });
