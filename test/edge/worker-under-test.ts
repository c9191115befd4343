/**
 * The edge tests' Worker (vitest.config.ts `main`): the main Worker (API, Durable Objects) and the episode Worker's
 * queue consumer and `EpisodeRunner` in one isolate, because the Workers pool runs one Worker of its own. The two
 * Workers as deployed (two bundles, the consumer reaching the run objects by `script_name`) run in the e2e tests,
 * which start both in local workerd (src/cli/dev/worker-host.ts).
 */
import main from "../../src/edge/index.ts";
import episodes from "../../src/edge/episode.ts";

export { RolloutScheduler, RunIndex, RunQuota, SwarmServer } from "../../src/edge/index.ts";
export { EpisodeRunner } from "../../src/edge/episode.ts";

export default { fetch: main.fetch, queue: episodes.queue };
