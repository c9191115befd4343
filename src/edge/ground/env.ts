/** @module edge/ground/env — the Worker's bindings (wrangler.toml) and vars. */
import type { EpisodeMessage } from "../../port/index.ts";
import type { LimitsEnv } from "./limits-config.ts";
import type { RolloutScheduler } from "../run/rollout-scheduler.ts";
import type { RunQuota } from "../api/run-quota.ts";
import type { RunIndex } from "../api/run-index.ts";
import type { SwarmServer } from "../swarm-server/swarm-server.ts";

/** The Worker vars and secrets authentication reads. */
export interface AuthEnv {
  /** the read-write token (a secret: `wrangler secret put AJET_API_TOKEN`, or `.dev.vars` for `wrangler dev`) */
  AJET_API_TOKEN?: string;
  /** optional read-only token: GET routes only */
  AJET_READ_TOKEN?: string;
}

/** Bindings and vars of the ajet-edge Worker (README, "Security", lists the security ones). */
export interface Env extends AuthEnv, LimitsEnv {
  /** one RolloutScheduler Durable Object per run (`idFromName(runId)`) */
  SCHEDULER: DurableObjectNamespace<RolloutScheduler>;
  /** one RunQuota Durable Object per API token: the runs it has in flight (`AJET_MAX_RUNS_IN_FLIGHT`) */
  RUN_QUOTA: DurableObjectNamespace<RunQuota>;
  /** one SwarmServer Durable Object per swarm server (`idFromName(normalised URL)`): engine start and status watch */
  SWARM_SERVERS: DurableObjectNamespace<SwarmServer>;
  /** the one RunIndex Durable Object (`idFromName("runs")`): the registry `GET /runs` pages */
  RUN_INDEX: DurableObjectNamespace<RunIndex>;
  /** the per-episode queue (producer side; the same Worker consumes it) */
  EPISODES: Queue<EpisodeMessage>;
  /**
   * comma-separated names of the queue producer bindings episodes are spread over (default `EPISODES`); each
   * queue needs its own `[[queues.consumers]]` entry. One queue runs at most 250 consumer invocations at once.
   */
  EPISODE_QUEUES?: string;
  /**
   * how the scheduler hands episodes to invocations: `queue` (default; production) or `direct` (local workerd
   * only: one `EpisodeRunner` invocation per episode; `ajet-edge dev` sets it). See edge/run/dispatcher.ts.
   */
  AJET_DISPATCH?: string;
  /** subrequests one invocation may make (BC-49): 50 on Free, 1000+ on Paid; default 1000 */
  SUBREQUEST_LIMIT?: string;
  /** run secrets that apply to every run (JSON object of strings), e.g. set with `wrangler secret put AJET_SECRETS`; a run cannot shadow them */
  AJET_SECRETS?: string;
  /** hosts the Worker may connect to for swarms, datasets and judges: comma-separated `host` or `host:port`; unset = none */
  AJET_ALLOWED_HOSTS?: string;
  /** R2 bucket of datasets read as `r2://DATASETS/KEY` (optional; wrangler.toml binds it) */
  DATASETS?: R2Bucket;
  /** R2 bindings `r2://BUCKET/KEY` may name, comma-separated; default `DATASETS` (edge/ground/dataset-limits.ts) */
  AJET_DATASET_BUCKETS?: string;
  /** dataset limits (edge/ground/dataset-limits.ts): inline rows and bytes, URL rows, row bytes */
  AJET_MAX_INLINE_ROWS?: string;
  AJET_MAX_INLINE_BYTES?: string;
  AJET_MAX_DATASET_ROWS?: string;
  AJET_MAX_ROW_BYTES?: string;
  /** R2 bucket of episode transcripts (edge/ground/transcripts); without it no transcript is kept */
  TRANSCRIPTS?: R2Bucket;
  /** days a transcript is kept (default 14) */
  TRANSCRIPT_RETENTION_DAYS?: string;
  /** the largest stored transcript in bytes (default 262144); longer messages are cut with a marker */
  TRANSCRIPT_MAX_BYTES?: string;
}
