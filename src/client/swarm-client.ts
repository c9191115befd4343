/**
 * @module client/swarm-client — `SwarmClient`, the TypeScript counterpart of the Python `SwarmClient`
 * (`swarm_client.py`; spec §3, §4.5, §5, §8; issue 2 §3). One object per server URL and client uuid; the same code
 * runs in workerd and Node; all network I/O goes through the injected `fetch`.
 */
import {
  assertValidWorkflowOutput,
  type CurrentBatchRolloutPoolInformation,
  endpoints,
  type ActiveSwarmClient,
  type EngineStatus,
  type ServerEpisodeRecord,
} from "../protocol/index.ts";
import * as agree from "./agree.ts";
import { beginEpisodeLoop } from "./begin-episode.ts";
import * as control from "./engine-control.ts";
import type { ClientCore } from "./engine-control.ts";
import { classifyEndEpisodeError } from "./end-outcome.ts";
import { buildClaimRequest, toClaimResult } from "./claim.ts";
import {
  SwarmAbortError,
  SwarmError,
  SwarmInputError,
  SwarmOperationError,
} from "./errors.ts";
import { LocalExpiryTracker, resolveLocalExpiry } from "./local-expiry.ts";
import { watchEngineStatus, type StatusWatchDeps } from "./status-watch.ts";
import { assertThrottleSupported, poolForThrottle } from "./throttle.ts";
import { DEFAULT_BACKOFF, realSleep, remainingMs, throwIfStopped, type SwarmBackoff, type SwarmClock, type WaitOptions } from "./timing.ts";
import { callEndpoint, type EndpointResponse, type SwarmRequestOptions, type TransportConfig } from "./transport.ts";
import type {
  AgreeSyncWeightResult,
  AbortEpisodeOptions, AutoStartOptions, AutoStartResult, BeginEpisodeOptions, CannotConnectSnapshot, ClaimedEpisode,
  ClaimEpisodeOptions, ClaimResult, EndEpisodeOptions, EndEpisodeResult, EngineStatusSnapshot, EngineWaitOptions,
  SwarmClientOptions, SwarmLogger, SyncableJob, TaskRef, WorkflowOutputInput,
} from "./types.ts";
import { normalizeServerUrl } from "./url.ts";

/** Silent for debug/info; warn and error go to the console. */
const defaultLogger: SwarmLogger = {
  info: () => undefined,
  warn: (msg, fields) => (fields ? console.warn(`[swarm-client] ${msg}`, fields) : console.warn(`[swarm-client] ${msg}`)),
  error: (msg, fields) => (fields ? console.error(`[swarm-client] ${msg}`, fields) : console.error(`[swarm-client] ${msg}`)),
};

/** The AgentJet swarm protocol client. Methods mirror `swarm_client.py`; results and errors are typed. */
export class SwarmClient {
  /** the normalised server URL (no trailing slash; path prefix kept) */
  readonly baseURL: string;
  readonly clientUuid: string;
  readonly #options: SwarmClientOptions;
  readonly #transport: TransportConfig;
  readonly #clock: SwarmClock;
  readonly #backoff: SwarmBackoff;
  readonly #logger: SwarmLogger;
  readonly #expiry: LocalExpiryTracker;
  readonly #recentSeenTasks: string[] = [];
  #job: SyncableJob | null = null;
  #claimGate: Promise<void> = Promise.resolve();

  /** @throws SwarmInputError when `baseURL` is not an http(s) URL */
  constructor(options: SwarmClientOptions) {
    this.#options = options;
    this.baseURL = normalizeServerUrl(options.baseURL);
    this.clientUuid = options.clientUuid ?? crypto.randomUUID();
    this.#transport = {
      serverUrl: this.baseURL,
      fetch: options.fetch ?? ((input, init) => fetch(input, init)),
      timeoutsMs: options.timeoutsMs ?? {},
      headers: options.headers ?? {},
    };
    this.#clock = { now: options.now ?? (() => Date.now()), sleep: options.sleep ?? realSleep, random: options.random ?? (() => Math.random()) };
    this.#backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.#logger = options.logger ?? defaultLogger;
    this.#expiry = new LocalExpiryTracker(resolveLocalExpiry(options.localExpiry));
  }

  /** A new client with these options changed; same `clientUuid` unless overridden; fresh local state. */
  withOptions(overrides: Partial<SwarmClientOptions>): SwarmClient {
    return new SwarmClient({ ...this.#options, clientUuid: this.clientUuid, ...overrides });
  }

  #call<N extends keyof typeof endpoints>(name: N, body: unknown, options?: SwarmRequestOptions): Promise<EndpointResponse<N>> {
    return callEndpoint(this.#transport, name, body, options);
  }

  /** Calls `name` within a wait: no call past the deadline, and its timeout capped by the time left. */
  #callWithin<N extends keyof typeof endpoints>(name: N, body: unknown, wait: WaitOptions, timeoutMs?: number): Promise<EndpointResponse<N>> {
    throwIfStopped(this.#clock, wait, endpoints[name].path);
    const base = timeoutMs ?? this.#transport.timeoutsMs[name] ?? endpoints[name].timeoutMs;
    return this.#call(name, body, { signal: wait.signal, timeoutMs: Math.max(1, Math.min(base, remainingMs(this.#clock, wait))) });
  }

  /** What the engine-control and agree functions use of this client (client/engine-control, client/agree). */
  get #core(): ClientCore {
    const self = this;
    return {
      clientUuid: this.clientUuid,
      clock: this.#clock,
      backoff: this.#backoff,
      logger: this.#logger,
      call: (name, body, options) => this.#call(name, body, options),
      callWithin: (name, body, wait, timeoutMs) => this.#callWithin(name, body, wait, timeoutMs),
      getEngineStatus: (o) => this.getEngineStatus(o),
      getEngineStatusOrCannotConnect: (o) => this.getEngineStatusOrCannotConnect(o),
      waitForEngineStatus: (awaited, o) => this.waitForEngineStatus(awaited, o),
      get job() {
        return self.#job;
      },
      set job(job: SyncableJob | null) {
        self.#job = job;
      },
    };
  }

  get #watchDeps(): StatusWatchDeps {
    return {
      clock: this.#clock,
      backoff: this.#backoff,
      logger: this.#logger,
      poll: (o) => this.getEngineStatusOrCannotConnect(o),
      pollTimeoutMs: this.#transport.timeoutsMs.getEngineStatus ?? endpoints.getEngineStatus.timeoutMs,
    };
  }

  /** `GET /health` → `{status: "ok"}` (spec §1). @throws the transport's typed errors */
  health(options?: SwarmRequestOptions): Promise<EndpointResponse<"health">> {
    return this.#call("health", undefined, options);
  }

  /** `GET /get_engine_status` (spec §3.6). @throws the transport's typed errors */
  async getEngineStatus(options?: SwarmRequestOptions): Promise<EngineStatusSnapshot> {
    const r = await this.#call("getEngineStatus", undefined, options);
    return { status: r.engine_status, detail: r.engine_status_detail, globalStep: r.global_step };
  }

  /**
   * Like {@link getEngineStatus}, but any failure except the caller's abort gives the client-only pseudo status
   * `ENGINE.CANNOT_CONNECT` with the error (Python `get_engine_status`, spec §2.1). @throws SwarmAbortError
   */
  async getEngineStatusOrCannotConnect(options?: SwarmRequestOptions): Promise<EngineStatusSnapshot | CannotConnectSnapshot> {
    try {
      return await this.getEngineStatus(options);
    } catch (err) {
      if (err instanceof SwarmAbortError || !(err instanceof SwarmError)) throw err;
      return { status: "ENGINE.CANNOT_CONNECT", detail: null, globalStep: null, error: err };
    }
  }

  /**
   * Polls until the engine status is one of `awaited` (spec §4.5). `assumeStarted`: treat the engine as already
   * seen non-OFFLINE (so an OFFLINE answer raises at once).
   * @throws SwarmServerOfflineError | SwarmDeadlineError | SwarmAbortError
   */
  waitForEngineStatus(awaited: EngineStatus | readonly EngineStatus[], options: WaitOptions & { assumeStarted?: boolean } = {}): Promise<EngineStatusSnapshot> {
    const list: readonly string[] = typeof awaited === "string" ? [awaited] : awaited;
    return watchEngineStatus(this.#watchDeps, list, { ...options, tracker: { seenNonOffline: options.assumeStarted ?? false } });
  }

  /** `GET /get_server_experiment_dir` (spec §3.7): null until an engine was started. @throws the transport's typed errors */
  async getServerExperimentDir(options?: SwarmRequestOptions): Promise<string | null> {
    return (await this.#call("getServerExperimentDir", undefined, options)).server_experiment_dir;
  }

  /**
   * `POST /sync_train_config` with exactly `{"yaml_as_string": job.toYaml()}` (or the raw YAML string), after a
   * local OFFLINE check (spec §3.2). Remembers the job for the throttle check.
   * @throws SwarmEngineStateError (`Cannot sync train config when engine is NOT ENGINE.OFFLINE. (current status: <s>)`)
   *   | SwarmInputError (empty YAML) | SwarmOperationError (`success: false`) | SwarmAPIError (400 if another client started it)
   */
  syncTrainConfig(job: SyncableJob | string, options: SwarmRequestOptions = {}): Promise<void> {
    return control.syncTrainConfig(this.#core, job, options);
  }

  /**
   * `POST /start_engine` (600 s) after a local OFFLINE check, then waits until ROLLING; OFFLINE during the wait
   * raises (spec §3.4, §4.5, §13.1). @returns the ROLLING snapshot
   * @throws SwarmEngineStateError | SwarmOperationError (`Failed to start training engine: <error>`) |
   *   SwarmServerOfflineError | SwarmDeadlineError | SwarmAbortError | transport errors
   */
  startEngine(options: EngineWaitOptions = {}): Promise<EngineStatusSnapshot> {
    return control.startEngine(this.#core, options);
  }

  /**
   * `POST /start_engine` after a local OFFLINE check, WITHOUT waiting for ROLLING: the call returns while the engine
   * boots (spec §3.4). For a caller that watches the status itself (the Worker's per-server object).
   * @returns the training process id the server reports, or null
   * @throws SwarmEngineStateError (not OFFLINE) | SwarmOperationError (`Failed to start training engine: <error>`) |
   *   SwarmAPIError (400 when another client started it in between) | SwarmDeadlineError | transport errors
   */
  requestEngineStart(options: EngineWaitOptions = {}): Promise<number | null> {
    return control.requestEngineStart(this.#core, options);
  }

  /**
   * No-op when OFFLINE; else `POST /stop_engine` (600 s) and waits until OFFLINE (spec §3.5). Stops training for
   * every client (spec §11.18). @returns the OFFLINE snapshot
   * @throws SwarmOperationError (`Failed to stop training engine`) | SwarmDeadlineError | SwarmAbortError | transport errors
   */
  stopEngine(options: EngineWaitOptions = {}): Promise<EngineStatusSnapshot> {
    return control.stopEngine(this.#core, options);
  }

  /**
   * Brings the engine to ROLLING idempotently (spec §4.5): CANNOT_CONNECT → pause `cannotConnectRetryMs`, retry
   * once; OFFLINE → sync + start + wait; BOOTING / WEIGHT_SYNCING → wait for ROLLING; ROLLING / ROLLING_POST →
   * nothing. `forceRestart` stops first. CANNOT_CONNECT never bootstraps (BC-28).
   * @throws SwarmConnectionError (`Unable to connect to swarm server.`) | SwarmEngineStateError (`Cannot sync train
   *   config or start engine when engine is in status: <s>`) | the errors of syncTrainConfig / startEngine / waits
   */
  autoSyncTrainConfigAndStartEngine(job: SyncableJob | string, options: AutoStartOptions = {}): Promise<AutoStartResult> {
    return control.autoSyncTrainConfigAndStartEngine(this.#core, job, options);
  }

  /**
   * `POST /sync_train_code` with the raw zip (`application/zip`, 600 s) after a local OFFLINE check (spec §3.3): the
   * server extracts its `ajet/` and the next `/start_engine` runs that code (Python `sync_train_code_from_dir`).
   * @throws SwarmInputError (empty zip) | SwarmEngineStateError (not OFFLINE) | SwarmOperationError | SwarmAPIError (400: not a zip)
   */
  syncTrainCode(zip: Uint8Array, options: SwarmRequestOptions = {}): Promise<control.SyncTrainCodeResult> {
    return control.syncTrainCode(this.#core, zip, options);
  }

  /** `GET /get_verbose_logs` (spec §3.19): the engine's status lines of the last 30 s. @throws the transport's typed errors */
  async getVerboseLogs(options?: SwarmRequestOptions): Promise<Array<{ timestamp: number; tag: string; message: string }>> {
    return (await this.#call("getVerboseLogs", undefined, options)).entries;
  }

  /**
   * ONE `POST /claim_episode` attempt (spec §3.8). Expected negative answers are values, not errors.
   * @throws SwarmInputError (bad options, before any request) | SwarmConfigError (422) | SwarmAPIError | transport errors
   */
  async claimEpisode(options: ClaimEpisodeOptions = {}): Promise<ClaimResult> {
    const req = buildClaimRequest(this.clientUuid, options);
    const raw = await this.#call("claimEpisode", req, options);
    return toClaimResult(this.baseURL, req, raw, (episodeUuid) => {
      const claimedAtMs = this.#clock.now();
      const expiresAtMs = this.#expiry.expiryOf(claimedAtMs, req.discard_episode_timeout);
      this.#expiry.remember(episodeUuid, expiresAtMs);
      return { claimedAtMs, expiresAtMs };
    });
  }

  /**
   * Claims an episode, retrying until claimed, `deadlineMs` or the signal (spec §8.3, BC-25; see `beginEpisodeLoop`).
   * @throws SwarmServerOfflineError | SwarmDeadlineError | SwarmAbortError | SwarmInputError | SwarmConfigError (422,
   *   never retried, BC-36) | other non-retryable errors
   */
  async beginEpisode(options: BeginEpisodeOptions = {}): Promise<ClaimedEpisode> {
    buildClaimRequest(this.clientUuid, options); // refuse bad options before any request
    return beginEpisodeLoop(
      {
        ...this.#watchDeps,
        clientUuid: this.clientUuid,
        claim: (o) => this.claimEpisode(o),
        poolForThrottle: (o) => poolForThrottle(() => this.getRolloutStat(o), this.#logger),
        claimTimeoutMs: this.#transport.timeoutsMs.claimEpisode ?? endpoints.claimEpisode.timeoutMs,
        runExclusive: (fn) => this.#runExclusive(fn),
        recentSeenTasks: this.#recentSeenTasks,
        assertThrottleSupported: () => assertThrottleSupported(this.#job?.sampleCollectionMethod),
      },
      options,
    );
  }

  #runExclusive<T>(fn: () => Promise<T>): Promise<T> {
    const previous = this.#claimGate;
    let release!: () => void;
    this.#claimGate = new Promise<void>((resolve) => (release = resolve));
    return previous.then(fn).finally(release);
  }

  /**
   * `POST /end_episode` (330 s timeout, BC-26) with `task_id` and `workflow_output.metadata.task_id` set from the
   * task (on a copy). Refused before any request: empty uuid or task_id (BC-30), invalid reward (BC-22). Never
   * retried here (not idempotent on the server, BC-26). With local expiry on and the episode past its lifetime,
   * sends one `/abort_episode` instead (BC-24). See {@link EndEpisodeResult} for what each answer means.
   * @throws SwarmInputError | InvalidWorkflowOutputError (reason `invalid_reward`) | SwarmOperationError
   *   (`success: false`) | SwarmAPIError (unclassified, e.g. text 500) | transport errors (outcome unknown → resend
   *   with `isResend: true`)
   */
  async endEpisode(task: TaskRef, episodeUuid: string, workflowOutput: WorkflowOutputInput, options: EndEpisodeOptions = {}): Promise<EndEpisodeResult> {
    if (!episodeUuid) throw new SwarmInputError("episodeUuid", "is empty; pass the uuid returned by claimEpisode/beginEpisode");
    const taskId = typeof task === "string" ? task : task?.task_id;
    if (!taskId) throw new SwarmInputError("task.task_id", "is empty; give every task a stable, namespaced id when it is loaded (e.g. gsm8k:train:0)");
    const output = assertValidWorkflowOutput(workflowOutput);
    const overdueMs = this.#expiry.takeOverdueMs(episodeUuid, this.#clock.now());
    if (overdueMs !== null) {
      this.#logger.warn(`Episode ${episodeUuid} has expired (${overdueMs} ms ago). Aborting instead of ending: it outlived its local lifetime (a multiple of discard_episode_timeout), so the server may have reverted it.`);
      await this.abortEpisode(episodeUuid, { signal: options.signal });
      return { kind: "abortedLocally", reason: "localExpiry", overdueMs };
    }
    const body = {
      client_uuid: this.clientUuid,
      episode_uuid: episodeUuid,
      workflow_output: { ...output, metadata: { ...output.metadata, task_id: taskId } },
      task_id: taskId,
      declare_client_active: options.declareClientActive ?? this.#options.declareClientActive ?? true,
    };
    try {
      const res = await this.#call("endEpisode", body, options);
      if (!res.success) throw new SwarmOperationError("endEpisode", `Failed to end episode ${episodeUuid}`, "");
      return { kind: "ended", deliveredEarlier: false };
    } catch (err) {
      const refusal = classifyEndEpisodeError(err);
      if (!refusal) throw err;
      if (options.isResend && refusal.reason === "notFound") return { kind: "ended", deliveredEarlier: true };
      this.#logger.warn(`end_episode ${episodeUuid}: ${refusal.kind} (${refusal.reason}): ${refusal.error.detail}`);
      return refusal;
    }
  }

  /**
   * `POST /abort_episode` with exactly the Python body (spec §3.10): reward 0.0, is_success null, empty metadata and
   * log_metrics, `task_id: ""`, `declare_client_active` (the client's default: true unless set). Unlike Python, errors are thrown (typed) unless
   * `quiet` (then logged, and false returned; the caller's abort is always thrown).
   * @returns the server's `success` (true also when the episode was unknown or the engine not rolling)
   */
  async abortEpisode(episodeUuid: string, options: AbortEpisodeOptions = {}): Promise<boolean> {
    try {
      if (!episodeUuid) throw new SwarmInputError("episodeUuid", "is empty; nothing to abort");
      this.#expiry.forget(episodeUuid);
      const res = await this.#call(
        "abortEpisode",
        {
          client_uuid: this.clientUuid,
          episode_uuid: episodeUuid,
          workflow_output: { reward: 0.0, is_success: null, metadata: {}, log_metrics: {} },
          task_id: "",
          declare_client_active: options.declareClientActive ?? this.#options.declareClientActive ?? true,
        },
        options,
      );
      if (!res.success) this.#logger.error(`Failed to abort episode ${episodeUuid}`);
      return res.success;
    } catch (err) {
      if (!options.quiet || err instanceof SwarmAbortError) throw err;
      this.#logger.error(`Error aborting episode ${episodeUuid}: ${(err as Error).message}`);
      return false;
    }
  }

  /** `POST /can_continue_episode` (spec §3.11): false for an empty uuid (no request). @throws transport errors */
  async canContinueEpisode(episodeUuid: string, options?: SwarmRequestOptions): Promise<boolean> {
    if (!episodeUuid) return false;
    return (await this.#call("canContinueEpisode", { client_uuid: this.clientUuid, episode_uuid: episodeUuid }, options)).can_continue;
  }

  /** `POST /get_episode_buffer` (spec §3.12): every active record, API keys included (debug). @throws transport errors */
  async getEpisodeBuffer(options?: SwarmRequestOptions): Promise<ServerEpisodeRecord[]> {
    return (await this.#call("getEpisodeBuffer", {}, options)).buffer;
  }

  /** `GET /get_current_batch_rollout_pool_information` (spec §3.13), tolerant defaults. @throws transport errors */
  getRolloutStat(options?: SwarmRequestOptions): Promise<CurrentBatchRolloutPoolInformation> {
    return this.#call("getRolloutStat", undefined, options);
  }

  /**
   * This client's entry in the server's active-client list (pool information's `swarm_client_instruction`, spec
   * §3.13, §7.3), or null when it is not listed. The server has no keepalive route: a client stays listed only
   * through its own activity — a claim, an LLM call's pre-flight, an end or abort with `declare_client_active` — and
   * falls off 600 s after the last (`last_activity_at`, unix seconds); the list is emptied at every weight sync.
   * @throws transport errors
   */
  getActiveClientEntry(options?: SwarmRequestOptions): Promise<ActiveSwarmClient | null> {
    return agree.getActiveClientEntry(this.#core, options);
  }

  /**
   * ONE `POST /agree_sync_weight` with `{"client_uuid"}` (spec §3.14, 10 s timeout): this client votes for the
   * weight sync of the current batch. Refusals are values. Refused before any request when the synced job's
   * sample-collection method is not an agree mode (the server would answer 500).
   * @throws SwarmInputError (not an agree mode) | SwarmAPIError (500: the server's pool says another mode) | transport errors
   */
  agreeSyncWeight(options?: SwarmRequestOptions): Promise<AgreeSyncWeightResult> {
    return agree.agreeSyncWeight(this.#core, options);
  }

  /**
   * The Python client's `agree_sync_weight()` (spec §3.14, llm-routes §10): false at once when the engine is not
   * ROLLING / ROLLING_POST; else votes, retrying every `backoff.agreeRetryMs` after a refusal or a retryable error,
   * then waits until the engine moves on — ROLLING_POST, WEIGHT_SYNCING, or a higher `global_step` (a sync too fast
   * for the status poll). Unlike Python it stops at `deadlineMs` or the signal.
   * @returns true once the vote was recorded and the engine moved on; false when the engine was not rolling
   * @throws SwarmInputError (not an agree mode) | SwarmServerOfflineError | SwarmDeadlineError | SwarmAbortError |
   *   non-retryable errors (e.g. the 500 of a server in another mode)
   */
  agreeSyncWeightAndWait(options: WaitOptions = {}): Promise<boolean> {
    return agree.agreeSyncWeightAndWait(this.#core, options);
  }
}
