/**
 * @module edge/ground/env — the Worker's environment: its bindings, generated from wrangler.toml by `wrangler types`
 * into `worker-configuration.d.ts` (`Cloudflare.Env`; `npm run cf-typegen` writes it, a unit test fails when it is
 * stale), and its vars and secrets, written here with what each means. The generated file is the one place that names
 * the Durable Object classes for their bindings, so no module here imports a class: the bindings are
 *  - `SCHEDULER`: one `RolloutScheduler` per run (`idFromName(runId)`);
 *  - `RUN_QUOTA`: one `RunQuota` per API token, the runs it has in flight (`AJET_MAX_RUNS_IN_FLIGHT`);
 *  - `SWARM_SERVERS`: one `SwarmServer` per swarm server (`idFromName(normalised URL)`), engine start and status watch;
 *  - `RUN_INDEX`: the one `RunIndex` (`idFromName("runs")`), the registry `GET /runs` pages;
 *  - `EPISODES`: the per-episode queue (producer side; the episode Worker, wrangler.episode.toml, consumes it);
 *  - `DATASETS`: R2 bucket of datasets read as `r2://DATASETS/KEY`; `TRANSCRIPTS`: R2 bucket of episode transcripts.
 */
import type { LimitsEnv } from "./limits-config.ts";

/** The Worker vars and secrets authentication reads. */
export interface AuthEnv {
  /** the read-write token (a secret: `wrangler secret put AJET_API_TOKEN`, or `.dev.vars` for `wrangler dev`) */
  AJET_API_TOKEN?: string;
  /** optional read-only token: GET routes only */
  AJET_READ_TOKEN?: string;
}

/** The vars and secrets of the ajet-edge Worker, all optional strings (docs/security.md lists the security ones). */
export interface WorkerVars extends AuthEnv, LimitsEnv {
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
  /**
   * the episode Worker's wall per invocation, seconds (default 900, the queue consumer's 15 minutes; at most that):
   * a tuning value, since local workerd enforces no wall (edge/consumer/episode-consumer.ts `consumerWallMs`)
   */
  AJET_CONSUMER_WALL_SECONDS?: string;
  /** run secrets that apply to every run (JSON object of strings), e.g. set with `wrangler secret put AJET_SECRETS`; a run cannot shadow them */
  AJET_SECRETS?: string;
  /**
   * the operator's key for secrets at rest (edge/ground/secrets-at-rest; at least 32 characters, e.g. `openssl rand
   * -hex 32`, set with `wrangler secret put AJET_SECRETS_KEY`): each run's secrets are stored encrypted under a data
   * key it wraps. Unset: a run with secrets is refused (503 naming it); `ajet-edge dev` generates one.
   */
  AJET_SECRETS_KEY?: string;
  /** hosts the Worker may connect to for swarms, datasets and judges: comma-separated `host` or `host:port`; unset = none */
  AJET_ALLOWED_HOSTS?: string;
  /** R2 bindings `r2://BUCKET/KEY` may name, comma-separated; default `DATASETS` (edge/ground/dataset-limits.ts) */
  AJET_DATASET_BUCKETS?: string;
  /** dataset limits (edge/ground/dataset-limits.ts): inline rows and bytes, URL rows, row bytes */
  AJET_MAX_INLINE_ROWS?: string;
  AJET_MAX_INLINE_BYTES?: string;
  AJET_MAX_DATASET_ROWS?: string;
  AJET_MAX_ROW_BYTES?: string;
  /** run-spec caps (edge/ground/caps.ts, docs/security-and-limits.md): swarms, datasets, secrets, secret bytes, gateway headers, YAML bytes */
  AJET_MAX_SWARMS?: string;
  AJET_MAX_DATASETS?: string;
  AJET_MAX_SECRETS?: string;
  AJET_MAX_SECRET_BYTES?: string;
  AJET_MAX_GATEWAY_HEADERS?: string;
  AJET_MAX_YAML_BYTES?: string;
  /** dataset host bounds (edge/ground/caps.ts): seconds to the headers, seconds without a byte, least bytes/s, index budgets */
  AJET_DATASET_FIRST_BYTE_SECONDS?: string;
  AJET_DATASET_IDLE_SECONDS?: string;
  AJET_DATASET_MIN_BYTES_PER_SECOND?: string;
  AJET_INLINE_INDEX_SECONDS?: string;
  AJET_INDEX_BUDGET_SECONDS?: string;
  /** total bytes of a run's URL/R2 files above which they are indexed in the background (edge/run/run-indexing.ts) */
  AJET_BACKGROUND_INDEX_BYTES?: string;
  /** days a transcript is kept (default 14) */
  TRANSCRIPT_RETENTION_DAYS?: string;
  /** the largest stored transcript in bytes (default 262144); longer messages are cut with a marker */
  TRANSCRIPT_MAX_BYTES?: string;
  /** the local sandbox server's URL and token (edge/ground/sandbox-backend.ts; `ajet-edge dev` sets both) */
  AJET_SANDBOX_URL?: string;
  AJET_SANDBOX_TOKEN?: string;
  /** Cloudflare sandboxes: JSON {instance type or "type/image": Sandbox binding name} (edge/ground/sandbox-backend.ts) */
  AJET_SANDBOX_CLASSES?: string;
  /**
   * overrides of the price table a run's cost is computed with (edge/run/board/cost `PRICES`): a JSON object of
   * prices in US dollars, e.g. `{"workerRequestsPerMillion": 0.30, "cpuMsPerEpisode": 20}`
   */
  AJET_PRICES?: string;
  /**
   * `1`: the Worker shows stored runs and changes nothing: the objects' alarms do not act (no dispatch, no status
   * poll, no engine start), so a run is seen as it was stored. `ajet-edge dashboard --persist DIR` sets it on a copy
   * of a dev state, with only a read token given out. Never set on a deployed Worker that should run anything.
   */
  AJET_READ_ONLY?: string;
}

/** Whether the Worker runs read-only (`AJET_READ_ONLY=1`): stored runs are shown, nothing acts on them. */
export function isReadOnly(env: Pick<WorkerVars, "AJET_READ_ONLY">): boolean {
  return env.AJET_READ_ONLY === "1" || env.AJET_READ_ONLY === "true";
}

/** The Worker's environment: the generated bindings of wrangler.toml and the vars above. */
export type Env = Cloudflare.Env & WorkerVars;

/**
 * The binding named `name` at run time (a name from a var, e.g. `EPISODE_QUEUES` or an `r2://BUCKET/…` URL): unknown
 * until the caller checks what it is.
 */
export function bindingNamed(env: Env, name: string): unknown {
  return Reflect.get(env, name);
}
