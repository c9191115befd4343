/**
 * @module edge/episode — this repository's episode Worker (wrangler.episode.toml `main`): `ajet-edge/episode-worker`
 * over the functions of `functions/index.ts`, written as a user's project writes it.
 */
import { createEpisodeWorker } from "./episode-worker.ts"; // first: the global fetch is fenced before any function loads
import { rolloutFunctions } from "../../functions/index.ts";

export { EpisodeRunner, EpisodeHost } from "./episode-worker.ts";
export default createEpisodeWorker(rolloutFunctions);
