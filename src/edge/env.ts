/** @module edge/env — the Worker's bindings (wrangler.toml) and vars. */
import type { EpisodeMessage } from "../port/index.ts";
import type { RolloutScheduler } from "./rollout-scheduler.ts";
import type { RunIndex } from "./run-index.ts";
import type { SwarmServer } from "./swarm-server.ts";

/** Bindings and vars of the ajet-edge Worker. */
export interface Env {
  /** one RolloutScheduler Durable Object per run (`idFromName(runId)`) */
  SCHEDULER: DurableObjectNamespace<RolloutScheduler>;
  /** one SwarmServer Durable Object per swarm server (`idFromName(normalised URL)`): engine start and status watch */
  SWARM_SERVERS: DurableObjectNamespace<SwarmServer>;
  /** the one RunIndex Durable Object (`idFromName("runs")`): the registry `GET /runs` pages */
  RUN_INDEX: DurableObjectNamespace<RunIndex>;
  /** the per-episode queue (producer side; the same Worker consumes it) */
  EPISODES: Queue<EpisodeMessage>;
  /** subrequests one invocation may make (BC-49): 50 on Free, 1000+ on Paid; default 1000 */
  SUBREQUEST_LIMIT?: string;
  /** run secrets that apply to every run (JSON object of strings), e.g. set with `wrangler secret put AJET_SECRETS` */
  AJET_SECRETS?: string;
}
