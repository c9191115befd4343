/**
 * @module protocol/engine — engine status strings and the engine/config endpoints' bodies (spec §2.1, §2.2, §2.11,
 * §3.2–3.6, §3.15). Field names are the server's, byte for byte.
 */
import * as z from "zod/mini";
import "./zod-locale.ts"; // zod's English messages for these schemas

/** The six statuses the server sends (spec §2.1 `VALID_STATUSES`). */
export const EngineStatus = z.enum([
  "ENGINE.OFFLINE",
  "ENGINE.BOOTING",
  "ENGINE.ROLLING",
  "ENGINE.ROLLING_POST",
  "ENGINE.WEIGHT_SYNCING",
  "ENGINE.WEIGHT_EXPORTING",
]);
export type EngineStatus = z.infer<typeof EngineStatus>;

/** Every server status as a constant, so code never spells the strings (spec §2.1). */
export const ENGINE = {
  OFFLINE: "ENGINE.OFFLINE",
  BOOTING: "ENGINE.BOOTING",
  ROLLING: "ENGINE.ROLLING",
  ROLLING_POST: "ENGINE.ROLLING_POST",
  WEIGHT_SYNCING: "ENGINE.WEIGHT_SYNCING",
  WEIGHT_EXPORTING: "ENGINE.WEIGHT_EXPORTING",
} as const satisfies Record<string, EngineStatus>;

/** True in the two states where episodes may be ended and the LLM proxy serves (spec §4.1). */
export function isRollingState(status: string): boolean {
  return status === ENGINE.ROLLING || status === ENGINE.ROLLING_POST;
}

/**
 * `GET /get_engine_status` response (spec §3.6). Read tolerantly: an unknown status string is kept as a string
 * (older servers sent `ENGINE.OFF`), `global_step` may be null (before the first report) and the detail is sticky.
 */
export const EngineStatusResponse = z.looseObject({
  /** one of the ENGINE.* status strings, e.g. ENGINE.ROLLING */
  engine_status: z._default(z.string(), "unknown"),
  engine_status_detail: z._default(z.nullable(z.string()), null),
  /** training step counter; null until first report */
  global_step: z._default(z.nullable(z.int()), null),
});
export type EngineStatusResponse = z.infer<typeof EngineStatusResponse>;

/** `POST /sync_train_config` body (spec §2.2). */
export const SyncTrainConfigRequest = z.object({
  /** the whole AgentJetJob YAML */
  yaml_as_string: z.string(),
});
export type SyncTrainConfigRequest = z.infer<typeof SyncTrainConfigRequest>;

/** `POST /sync_train_config` 200 body: `{success: true}` or `{success: false, error}` (spec §3.2). */
export const SyncTrainConfigResponse = z.looseObject({
  success: z.boolean(),
  error: z.optional(z.string()),
});
export type SyncTrainConfigResponse = z.infer<typeof SyncTrainConfigResponse>;

/**
 * `POST /sync_train_code` 200 body (spec §3.3): `{success: true, message, temp_ajet_code_path}`, or `{success: false,
 * error}`. The request is the raw zip (`Content-Type: application/zip`), not JSON.
 */
export const SyncTrainCodeResponse = z.looseObject({
  success: z.boolean(),
  message: z.optional(z.string()),
  temp_ajet_code_path: z.optional(z.string()),
  error: z.optional(z.string()),
});
export type SyncTrainCodeResponse = z.infer<typeof SyncTrainCodeResponse>;

/** `GET /get_verbose_logs` (spec §3.19): the engine's ephemeral status lines of the last 30 s (`timestamp` in unix seconds). */
export const VerboseLogsResponse = z.looseObject({
  entries: z.array(z.looseObject({ timestamp: z.number(), tag: z.string(), message: z.string() })),
});
export type VerboseLogsResponse = z.infer<typeof VerboseLogsResponse>;

/** `POST /start_engine` 200 body: `{success: true, pid}` or `{success: false, error}` (spec §3.4). */
export const StartEngineResponse = z.looseObject({
  success: z.boolean(),
  pid: z.optional(z.int()),
  error: z.optional(z.string()),
});
export type StartEngineResponse = z.infer<typeof StartEngineResponse>;

/** `BoolResponse` (spec §2.11): `/stop_engine`, engine-facing routes, `/agree_sync_weight`. */
export const BoolResponse = z.looseObject({
  success: z.boolean(),
  failure_reason: z._default(z.string(), ""),
});
export type BoolResponse = z.infer<typeof BoolResponse>;

/** `POST /update_engine_status` body (engine → server, spec §2.11, §3.15). */
export const UpdateEngineStatusRequest = z.object({
  engine_status: z._default(z.string(), ""),
  engine_status_detail: z._default(z.nullable(z.string()), null),
  global_step: z._default(z.nullable(z.int()), null),
});
export type UpdateEngineStatusRequest = z.infer<typeof UpdateEngineStatusRequest>;

/** `GET /get_server_experiment_dir` response (spec §3.7). */
export const ServerExperimentDirResponse = z.looseObject({
  server_experiment_dir: z._default(z.nullable(z.string()), null),
});
export type ServerExperimentDirResponse = z.infer<typeof ServerExperimentDirResponse>;

/** `GET /health` response (spec §1). */
export const HealthResponse = z.looseObject({ status: z.string() });
export type HealthResponse = z.infer<typeof HealthResponse>;

/**
 * The server's cap on registered + claimed episodes at once, across all clients (spec §5.2,
 * `native_parallel_worker.py`): `min(batchSize, ceil(maxEnvWorker / numRepeat)) × numRepeat`, at least one task
 * group. Claims above it only meet "No available episodes"; a run's default `maxParallel`.
 */
export function serverEpisodeCapacity(c: { batchSize: number; maxEnvWorker: number; numRepeat: number }): number {
  return Math.max(1, Math.min(c.batchSize, Math.ceil(c.maxEnvWorker / c.numRepeat))) * c.numRepeat;
}

/**
 * The reference client's maximum episode lifetime, in discard timeouts (spec §5.5, BC-24): past
 * `8 × discard_episode_timeout` after the claim it aborts instead of ending. (Its docs say 2×; the code uses 8.) The one name of this factor: the
 * runtime stops a function at it, the scheduler's run lease outlasts it, and the client's local expiry defaults to it.
 */
export const EPISODE_LIFETIME_FACTOR = 8;

/**
 * How long a queue consumer keeps trying to claim before it reports a claim failure, in ms (the runtime's default
 * claim budget; it is also capped by the dispatch lease and half the discard timeout).
 */
export const CONSUMER_CLAIM_BUDGET_MS = 20_000;

/**
 * The swarm default YAML's batch shape (spec §10.2, `ajet_swarm_default.yaml`): `ajet.data.train_batch_size`,
 * `ajet.rollout.num_repeat`, `ajet.rollout.max_env_worker` when a job or YAML does not set them.
 */
export const SWARM_BATCH_DEFAULTS = { batchSize: 32, numRepeat: 4, maxEnvWorker: 128 } as const;

/** The reference client's `begin_episode(discard_episode_timeout=240)` default, in seconds (spec §5.3). */
export const DEFAULT_DISCARD_EPISODE_TIMEOUT_SECONDS = 240;

/**
 * The newest proxy's keepalive period for a pending streamed LLM call (`STREAM_KEEPALIVE_INTERVAL_SEC`, llm-routes
 * §5), seconds: every hop must pass a frame at least this often or streaming harnesses time out and re-issue.
 */
export const LLM_STREAM_KEEPALIVE_SECONDS = 5;

/**
 * How long the newest proxy waits for one generation before it answers 500 (600 receive slices of 6 s,
 * llm-routes §1 step 5), seconds. A client's per-call timeout should allow this plus slack.
 */
export const LLM_CALL_BUDGET_SECONDS = 3600;
