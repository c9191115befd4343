/**
 * @module emulator/server/state — the swarm server's shared state (the `shared_mem_dict` of `swarm_server.py`,
 * spec §3 "Shared server state") and its record-level operations: register, revert, delete, withdraw, status
 * updates with the cleanup on leaving ROLLING/ROLLING_POST (spec §3.15–3.17, §4.3, §5.1).
 */
import {
  CurrentBatchRolloutPoolInformation,
  ENGINE,
  EngineStatus,
  ServerText,
  isRollingState,
  type ActiveSwarmClient,
  type BoolResponse,
  type RegisterEpisodeRequest,
  type UpdateEngineStatusRequest,
  type WorkflowOutput,
} from "../../protocol/index.ts";
import type { Clock } from "../clock.ts";
import { StepLog } from "../step-log.ts";
import type { TrainConfig } from "../train-config.ts";

/** One active episode record (spec §2.9), wire field names. Times are unix seconds. */
export interface EpisodeRecord {
  episode_uuid: string;
  episode_status: "registered" | "claimed";
  episode_type: string;
  openai_base_url: string;
  openai_api_key: string;
  client_uuid: string;
  zmq_listen_result_addr: string;
  latest_activity_timestamp: number;
  discard_episode_timeout: number;
  llm_call_count: number;
  debug_log: string[];
  optional_task_id: string;
}

/**
 * The engine end of the server↔runner channel (ZMQ in the real system, spec §5.10). The server awaits each
 * promise as it awaits the runner's `ack`.
 */
export interface EngineLink {
  /** A train episode's WorkflowOutput, delivered by `/end_episode`. */
  deliverResult(record: Readonly<EpisodeRecord>, output: WorkflowOutput, taskId: string): Promise<void>;
  /** `RUNNER.SPECIAL.RESET_CONTEXT_TRACKER` before a claimed episode is reverted. */
  resetEpisode(record: Readonly<EpisodeRecord>): Promise<void>;
}

/** A status change as observers see it. `atMs` is epoch ms. */
export interface StatusChange {
  from: string;
  to: string;
  globalStep: number | null;
  atMs: number;
}

/**
 * A fresh CurrentBatchRolloutPoolInformation with the model's defaults, in the model's field order (spec §2.10):
 * the protocol schema's own defaults, new objects on every call.
 */
export function defaultPoolInformation(): CurrentBatchRolloutPoolInformation {
  return CurrentBatchRolloutPoolInformation.parse({});
}

/** The server's shared state. Mutated only through the emulator's server modules and the simulated engine. */
export class ServerState {
  engineStatus: string = ENGINE.OFFLINE;
  engineStatusDetail: string | null = null;
  globalStep: number | null = null;
  bootingStartTime: number | null = null;
  trainConfigYaml: string | null = null;
  trainingModelPath: string | null = null;
  serverExperimentDir: string | null = null;
  trainingProcessPid: number | null = null;
  /** FIFO of claimable uuids (`unclaimed_episodes`). */
  readonly queue: string[] = [];
  /** Active records (`episodes-<uuid>`). */
  readonly records = new Map<string, EpisodeRecord>();
  /** Finished train records (`finished-episodes-<uuid>`), kept until the next cleanup. */
  readonly finished = new Map<string, EpisodeRecord>();
  pool: CurrentBatchRolloutPoolInformation = defaultPoolInformation();
  activeClients: ActiveSwarmClient[] = [];
  /** `/push_verbose_log` entries (`timestamp` in unix seconds). */
  verboseLogs: Array<{ timestamp: number; tag: string; message: string }> = [];
  /** `latest_llm_call` for `/replay_latest_llm_call`: raw request body, answer, and `format` for Responses / Messages. */
  latestLlmCall: { input: unknown; output: unknown; format?: "responses" | "messages" } | null = null;
  /** Train episodes accepted per step (emulator-side observation, see step-log.ts). */
  readonly stepLog = new StepLog();
  /** Engine runs started so far (1 after the first `/start_engine`). */
  runNumber = 0;
  /** The config parsed at the last `/start_engine` (null before). */
  trainConfig: TrainConfig | null = null;
  /** Every status change, in order (tests read it to see ROLLING_POST / WEIGHT_SYNCING). */
  readonly statusHistory: StatusChange[] = [];
  /** Chat calls in flight per episode: the real proxy refreshes activity every 6 s while waiting (spec §5.4). */
  readonly inFlightCalls = new Map<string, number>();
  /** Observers of status changes (policy learning, engine); called synchronously after the change. */
  readonly statusListeners: Array<(change: StatusChange) => void> = [];

  constructor(
    readonly clock: Clock,
    public engineLink: EngineLink,
  ) {}

  /** `time.time()`: unix seconds. */
  nowSeconds(): number {
    return this.clock.nowMs() / 1000;
  }

  /** Sets the status directly (as `/start_engine` and `/stop_engine` do) and notifies observers. */
  setStatusDirect(status: string): void {
    const from = this.engineStatus;
    this.engineStatus = status;
    const change = { from, to: status, globalStep: this.globalStep, atMs: this.clock.nowMs() };
    this.statusHistory.push(change);
    for (const listener of this.statusListeners) listener(change);
  }

  /** Deletes every active and finished record and empties the queue (`/stop_engine` keeps the active clients). */
  clearEpisodes(): void {
    this.records.clear();
    this.finished.clear();
    this.queue.length = 0;
  }

  /** {@link clearEpisodes} and resets the active clients: leaving ROLLING/ROLLING_POST, a new engine (spec §4.3). */
  cleanup(): void {
    this.clearEpisodes();
    this.activeClients = [];
  }

  /** `POST /update_engine_status` semantics (spec §3.15). */
  updateEngineStatus(req: UpdateEngineStatusRequest): BoolResponse {
    if (!EngineStatus.safeParse(req.engine_status).success) return { success: false, failure_reason: ServerText.invalidEngineStatus };
    const previous = this.engineStatus;
    if (isRollingState(previous) && !isRollingState(req.engine_status)) this.cleanup();
    if (previous === ENGINE.BOOTING && req.engine_status !== ENGINE.BOOTING) this.bootingStartTime = null;
    if (req.global_step !== null) this.globalStep = req.global_step;
    if (req.engine_status_detail !== null) this.engineStatusDetail = req.engine_status_detail;
    this.setStatusDirect(req.engine_status);
    return { success: true, failure_reason: "" };
  }

  /** `POST /register_episode` semantics (spec §3.16): only in exactly ROLLING; appends to the queue. */
  registerEpisode(req: RegisterEpisodeRequest): BoolResponse {
    if (this.engineStatus !== ENGINE.ROLLING) {
      return { success: false, failure_reason: ServerText.registerNotRolling };
    }
    this.records.set(req.episode_uuid, {
      episode_uuid: req.episode_uuid,
      episode_status: "registered",
      episode_type: "train",
      openai_base_url: req.openai_base_url,
      openai_api_key: req.openai_api_key,
      client_uuid: "",
      zmq_listen_result_addr: req.zmq_listen_result_addr,
      latest_activity_timestamp: this.nowSeconds(),
      discard_episode_timeout: -1,
      llm_call_count: 0,
      debug_log: [],
      optional_task_id: "",
    });
    this.queue.push(req.episode_uuid);
    return { success: true, failure_reason: "" };
  }

  /** Removes a record and its queue entry (`_delete_episode_record`). */
  deleteRecord(uuid: string): void {
    this.records.delete(uuid);
    const i = this.queue.indexOf(uuid);
    if (i >= 0) this.queue.splice(i, 1);
  }

  /**
   * `_revert_episode_to_unclaimed` (spec §5.6): a claimed record is reset by the runner, then becomes
   * `registered` again with the same uuid and key at the queue tail; an unclaimed one is only re-queued.
   */
  async revertToUnclaimed(uuid: string): Promise<void> {
    const record = this.records.get(uuid);
    if (!record) return;
    if (record.episode_status !== "claimed") {
      if (!this.queue.includes(uuid)) this.queue.push(uuid);
      return;
    }
    await this.engineLink.resetEpisode(record);
    const current = this.records.get(uuid);
    if (!current) return;
    current.episode_status = "registered";
    current.client_uuid = "";
    current.latest_activity_timestamp = this.nowSeconds();
    current.llm_call_count = 0;
    current.discard_episode_timeout = -1;
    if (!this.queue.includes(uuid)) this.queue.push(uuid);
  }

  /** `POST /is_episode_claimed` semantics (spec §3.17): true only for a claimed record; may withdraw it. */
  isEpisodeClaimed(uuid: string, unregisterIfNotClaimed: boolean): BoolResponse {
    const no = { success: false, failure_reason: "" };
    if (!isRollingState(this.engineStatus)) return no;
    const record = this.records.get(uuid);
    if (!record) return no;
    if (record.episode_status === "claimed") return { success: true, failure_reason: "" };
    if (unregisterIfNotClaimed) this.deleteRecord(uuid);
    return no;
  }

  /** True when a chat call for `uuid` is being generated right now. */
  hasCallInFlight(uuid: string): boolean {
    return (this.inFlightCalls.get(uuid) ?? 0) > 0;
  }
}
