/** @module edge/env — the Worker's bindings (wrangler.toml) and vars. */
import type { EpisodeMessage } from "../port/index.ts";
import type { AuthEnv } from "./auth.ts";
import type { LimitsEnv } from "./limits-config.ts";
import type { RolloutScheduler } from "./rollout-scheduler.ts";
import type { RunQuota } from "./run-quota.ts";

/** Bindings and vars of the ajet-edge Worker (README, "Security", lists the security ones). */
export interface Env extends AuthEnv, LimitsEnv {
  /** one RolloutScheduler Durable Object per run (`idFromName(runId)`) */
  SCHEDULER: DurableObjectNamespace<RolloutScheduler>;
  /** one RunQuota Durable Object per API token: the runs it has in flight (`AJET_MAX_RUNS_IN_FLIGHT`) */
  RUN_QUOTA: DurableObjectNamespace<RunQuota>;
  /** the per-episode queue (producer side; the same Worker consumes it) */
  EPISODES: Queue<EpisodeMessage>;
  /** subrequests one invocation may make (BC-49): 50 on Free, 1000+ on Paid; default 1000 */
  SUBREQUEST_LIMIT?: string;
  /** run secrets that apply to every run (JSON object of strings), e.g. set with `wrangler secret put AJET_SECRETS`; a run cannot shadow them */
  AJET_SECRETS?: string;
  /** hosts the Worker may connect to for swarms, datasets and judges: comma-separated `host` or `host:port`; unset = none */
  AJET_ALLOWED_HOSTS?: string;
}
