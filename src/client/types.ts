/**
 * @module client/types — SwarmClient options and the discriminated results of its methods (issue 2 §3). Wire
 * fields stay snake_case inside `raw`; everything the client owns is camelCase.
 */
import type { z } from "zod";
import type {
  ClaimEpisodeResponse,
  ClaimFailureKind,
  EndpointName,
  EngineStatus,
  EpisodeType,
  SwarmThrottlePolicy,
  Task,
  WorkflowOutput,
} from "../protocol/index.ts";
import type { SwarmAPIError, SwarmError } from "./errors.ts";
import type { SwarmBackoff, SleepFn, WaitOptions } from "./timing.ts";
import type { SwarmFetch, SwarmRequestOptions } from "./transport.ts";

/**
 * Structured logger. A rollout function's `RolloutLogger` (src/sdk/contract.ts) is one as it is (pass it
 * directly, no adapter); `debug` is optional here so callers may pass a logger without it.
 */
export interface SwarmLogger {
  debug?(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/**
 * Local expiry of claimed episodes (the reference client's "max_episode_time", spec §5.5, BC-24). When `enabled`,
 * `endEpisode` on an episode claimed by THIS client object more than `lifetimeFactor × discard_episode_timeout`
 * ago sends exactly one `/abort_episode` and no `/end_episode`. Off by default: in ajet-edge the episode consumer
 * owns that decision (docs/design/episode-lifecycle.md step 3) and a per-invocation client cannot know claims it
 * did not make. Unlike Python, an episode this object never claimed is ENDED (not converted to an abort), because
 * another client object with the same `clientUuid` (the DO's outbox) may legitimately end it.
 */
export interface LocalExpiryOptions {
  enabled: boolean;
  /** cap = factor × discard_episode_timeout; the reference code uses 8 (its docs say 2) */
  lifetimeFactor: number;
}

/** An AgentJetJob as the client needs it (src/job `AgentJetJob` satisfies this). */
export interface SyncableJob {
  /** the whole job YAML, sent verbatim as `yaml_as_string` (spec §2.2, §10.5) */
  toYaml(): string;
  /** `ajet.swarm_mode_sample_collection_method`; throttle policies need `rollout_until_finish_enough_tasks` */
  readonly sampleCollectionMethod?: string;
}

/** SwarmClient constructor options (camelCase; issue 2 §3). */
export interface SwarmClientOptions {
  /** the swarm server URL, e.g. `http://127.0.0.1:10086` or `https://gw.example.com/ajet/` (prefix kept, BC-37) */
  baseURL: string;
  /** sent with every claim/end/abort; default `crypto.randomUUID()` (one per client object, spec §8.1) */
  clientUuid?: string;
  /** the only network I/O of the client; default `globalThis.fetch` */
  fetch?: SwarmFetch;
  /** per-endpoint timeout overrides (ms); defaults from `endpoints` (end 330 s, start/stop 600 s, rest 30 s) */
  timeoutsMs?: Partial<Record<EndpointName, number>>;
  /** extra request headers (e.g. a gateway token) */
  headers?: Record<string, string>;
  /** default: silent for debug/info, `console` for warn/error */
  logger?: SwarmLogger;
  /** local expiry (BC-24); `true` = enabled with factor 8; default off */
  localExpiry?: boolean | Partial<LocalExpiryOptions>;
  /** back-off table overrides (ms) */
  backoff?: Partial<SwarmBackoff>;
  /** clock (epoch ms); default `Date.now` */
  now?: () => number;
  /** sleep; default `setTimeout`-based */
  sleep?: SleepFn;
  /** uniform [0, 1) for jitter; default `Math.random` */
  random?: () => number;
  /**
   * the `declare_client_active` every end and abort of this client sends unless the call overrides it; default true
   * (the Python client's). False for a client that never votes `/agree_sync_weight` (an eval run): listed by the
   * server, it would hold every other client's sync in the all-agree mode until it ages out (spec §3.10, §7.3)
   */
  declareClientActive?: boolean;
}

/** `GET /get_engine_status` in camelCase (spec §3.6). `status` is the wire string (tolerant: unknown kept). */
export interface EngineStatusSnapshot {
  status: EngineStatus | (string & {});
  /** `engine_status_detail`: free text, sticky */
  detail: string | null;
  /** `global_step`: null before the first report, 0 after an engine exit */
  globalStep: number | null;
}

/** The client-only pseudo status when the status poll failed (spec §2.1); never mixed into the wire type. */
export interface CannotConnectSnapshot {
  status: "ENGINE.CANNOT_CONNECT";
  detail: null;
  globalStep: null;
  /** why the poll failed */
  error: SwarmError;
}

/** True for the client-only `ENGINE.CANNOT_CONNECT` snapshot (narrows the union). */
export function isCannotConnect(snap: EngineStatusSnapshot | CannotConnectSnapshot): snap is CannotConnectSnapshot {
  return "error" in snap;
}

/** Options of one claim attempt (spec §2.4, §3.8). */
export interface ClaimEpisodeOptions extends SwarmRequestOptions {
  /** max idle seconds without LLM activity before the server reverts the claim; default 240 (spec §5.4) */
  discardEpisodeTimeoutSeconds?: number;
  /** default "train" */
  episodeType?: EpisodeType;
  /** sent as `throttle_policy` (always serialised, null when unused, like Python) */
  throttlePolicy?: SwarmThrottlePolicy | null;
}

/** A successful claim: base URL rewritten onto the server URL (BC-37), API key verbatim. */
export interface ClaimedEpisode {
  kind: "claimed";
  episodeUuid: string;
  /** `<server URL>/v1` — use with the OpenAI SDK (`maxRetries: 0`, BC-42) */
  baseUrl: string;
  /** the per-episode `sk-ajet-…` key, verbatim */
  apiKey: string;
  episodeType: EpisodeType;
  discardEpisodeTimeoutSeconds: number;
  /** client clock at claim time (epoch ms) */
  claimedAtMs: number;
  /** claimedAtMs + lifetimeFactor × discard timeout: past this, abort instead of end (BC-24) */
  expiresAtMs: number;
  /** the response as received (snake_case) */
  raw: ClaimEpisodeResponse;
}

/**
 * One claim attempt's answer (issue 2 §3, safeParse style: expected negative answers are values).
 * - `claimed`: the episode is ours.
 * - `notReady`: the engine is not ROLLING (`status` from the fail_cause, e.g. `ENGINE.WEIGHT_SYNCING`; "unknown"
 *   if it cannot be read; `reason` is the fail_cause's `classifyClaimFailure` kind) → wait for ROLLING (BC-25).
 * - `empty`: "No available episodes to claim…" (also the "(maybe 2 minutes)" vanished-record variant) → short back-off.
 * - `rejected`: any other fail_cause.
 */
export type ClaimResult =
  | ClaimedEpisode
  | { kind: "notReady"; reason: Extract<ClaimFailureKind, "syncing" | "postRolling" | "notReady">; status: string; failCause: string }
  | { kind: "empty"; failCause: string }
  | { kind: "rejected"; failCause: string };

/** Options of `beginEpisode`: one claim's options plus a deadline/signal for the whole retry loop. */
export interface BeginEpisodeOptions extends Omit<ClaimEpisodeOptions, "timeoutMs">, WaitOptions {}

/** Options of `endEpisode`. */
export interface EndEpisodeOptions extends SwarmRequestOptions {
  /** default the client's `declareClientActive` (true unless set; newest servers; spec §2.8) */
  declareClientActive?: boolean;
  /**
   * Set when re-sending after an unknown outcome (a timeout or lost connection on a previous send). Then a
   * 400 "Episode … not found." means the first send was delivered (BC-26) and the result is
   * `{kind: "ended", deliveredEarlier: true}`.
   */
  isResend?: boolean;
}

/**
 * A WorkflowOutput as a caller hands it to `endEpisode` (spec §6.2): anything the wire schema accepts as input;
 * the reward is checked to be one finite number before sending (BC-22).
 */
export type WorkflowOutputInput = z.input<typeof WorkflowOutput>;

/** The task an output belongs to: a `Task` (only `task_id` is used) or the task id itself. */
export type TaskRef = Pick<Task, "task_id"> | string;

/**
 * What happened to an `endEpisode` (BC-23, BC-24, BC-26, spec §3.9, §5.5, §5.7). None of the non-`ended` kinds
 * delivered the reward and none may be retried with `/end_episode`; re-run the repeat instead.
 * - `ended`: the reward was delivered and counts toward the batch. `deliveredEarlier`: a resend got "not found".
 * - `expired`: the claim is no longer ours: reverted by the server's idle janitor (400 "not in claimed status")
 *   or re-claimed by another client (404 "claimed by different client"). Do NOT abort it (abort has no ownership
 *   check and would take the episode from its new holder).
 * - `lost`: the record no longer exists: 400 "Episode … not found." (ended twice, or wiped) or the engine left the
 *   rolling states (400 "Engine is not in rolling state …", `weightSyncing` when it says WEIGHT_SYNCING — the
 *   Python client tolerates that one silently). No abort needed. After an unknown outcome use `isResend`.
 * - `abortedLocally`: local expiry was enabled and the episode was past its lifetime: one `/abort_episode` was sent
 *   instead (BC-24).
 */
export type EndEpisodeResult =
  | { kind: "ended"; deliveredEarlier: boolean }
  | { kind: "expired"; reason: "notClaimed" | "claimedByOtherClient"; error: SwarmAPIError }
  | { kind: "lost"; reason: "notFound" | "weightSyncing" | "engineNotRolling"; error: SwarmAPIError }
  | { kind: "abortedLocally"; reason: "localExpiry"; overdueMs: number };

/** Options of `abortEpisode`. */
export interface AbortEpisodeOptions extends SwarmRequestOptions {
  /** log and return false instead of throwing (the Python client swallows every abort error, spec §3.10) */
  quiet?: boolean;
  /** default the client's `declareClientActive` (true unless set; spec §2.8; the Python client sends true) */
  declareClientActive?: boolean;
}

/** Options of the waiting engine-control calls: the HTTP timeout of the control POST plus a wait deadline. */
export interface EngineWaitOptions extends WaitOptions {
  /** timeout (ms) of the control POST itself; default from the endpoint table (600 s for start/stop) */
  timeoutMs?: number;
}

/** Options of `autoSyncTrainConfigAndStartEngine` (spec §4.5). */
export interface AutoStartOptions extends EngineWaitOptions {
  /** stop a running engine first, then pause `restartGraceMs` (kills training for every client, spec §11.18) */
  forceRestart?: boolean;
}

/** What `autoSyncTrainConfigAndStartEngine` did, and the engine status it left (always ROLLING or ROLLING_POST). */
export interface AutoStartResult {
  action: "started" | "alreadyRolling" | "waitedForRolling";
  engine: EngineStatusSnapshot;
}

/**
 * One `/agree_sync_weight` answer (spec §3.14): the vote was recorded (idempotent), or refused with the server's
 * `failure_reason` — `notActive` (this client has not ended an episode since the last weight sync, or idled out of
 * the active list after 600 s), `clientUuidRequired`, or `other`.
 */
export type AgreeSyncWeightResult =
  | { agreed: true }
  | { agreed: false; reason: "notActive" | "clientUuidRequired" | "other"; failureReason: string };
