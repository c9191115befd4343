/**
 * @module test/chaos/episode-worker — the chaos suite's episode Worker: the project's episode Worker (the
 * `createEpisodeWorker` factory: queue consumer, per-episode entrypoint) with the chaos functions registered next to
 * the shipped ones. Its wrangler config is the project's wrangler.episode.toml with `main` pointed here (harness.ts).
 */
import { createEpisodeWorker } from "../../src/edge/episode-worker.ts";
import { rolloutFunctions } from "../../functions/index.ts";
import { chaosFunctions } from "./functions.ts";

export { EpisodeRunner, EpisodeHost } from "../../src/edge/episode-worker.ts";
export default createEpisodeWorker({ ...rolloutFunctions, ...chaosFunctions });
