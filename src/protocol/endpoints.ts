/**
 * @module protocol/endpoints — the swarm server's HTTP routes as data (spec §3.1): method, path, request and
 * response schema, caller and the client's timeout. The client, the emulator and the conformance tests derive
 * from this table.
 */
import type { z } from "zod";
import {
  BoolResponse,
  EngineStatusResponse,
  HealthResponse,
  ServerExperimentDirResponse,
  StartEngineResponse,
  SyncTrainConfigRequest,
  SyncTrainCodeResponse,
  SyncTrainConfigResponse,
  UpdateEngineStatusRequest,
  VerboseLogsResponse,
} from "./engine.ts";
import {
  AgreeSyncWeightRequest,
  CanContinueEpisodeRequest,
  CanContinueEpisodeResponse,
  CheckWhetherEpisodeClaimedRequest,
  ClaimEpisodeRequest,
  ClaimEpisodeResponse,
  EndEpisodeRequest,
  EndEpisodeResponse,
  EpisodeBufferResponse,
  RegisterEpisodeRequest,
} from "./episode.ts";
import { CurrentBatchRolloutPoolInformation, SwarmClientInstruction } from "./pool.ts";

/** One route of the swarm server. `timeoutMs` is the client's per-call timeout (spec §8.2, BC-26). */
export interface Endpoint {
  method: "GET" | "POST";
  path: string;
  caller: "client" | "engine" | "launcher" | "debug";
  request: z.core.$ZodType | null;
  response: z.core.$ZodType;
  timeoutMs: number;
}

const s = (n: number) => n * 1000;

/** The client-facing and engine-facing routes (spec §3.1). Proxy routes are in spec §9 and not listed here. */
export const endpoints = {
  health: { method: "GET", path: "/health", caller: "launcher", request: null, response: HealthResponse, timeoutMs: s(10) },
  getEngineStatus: { method: "GET", path: "/get_engine_status", caller: "client", request: null, response: EngineStatusResponse, timeoutMs: s(30) },
  syncTrainConfig: { method: "POST", path: "/sync_train_config", caller: "client", request: SyncTrainConfigRequest, response: SyncTrainConfigResponse, timeoutMs: s(30) },
  /** spec §3.3: the raw zip of the training code (request body: bytes, `application/zip`); the Python client gives it 600 s */
  syncTrainCode: { method: "POST", path: "/sync_train_code", caller: "client", request: null, response: SyncTrainCodeResponse, timeoutMs: s(600) },
  /** spec §3.19 */
  getVerboseLogs: { method: "GET", path: "/get_verbose_logs", caller: "debug", request: null, response: VerboseLogsResponse, timeoutMs: s(10) },
  startEngine: { method: "POST", path: "/start_engine", caller: "client", request: null, response: StartEngineResponse, timeoutMs: s(600) },
  stopEngine: { method: "POST", path: "/stop_engine", caller: "client", request: null, response: BoolResponse, timeoutMs: s(600) },
  getServerExperimentDir: { method: "GET", path: "/get_server_experiment_dir", caller: "client", request: null, response: ServerExperimentDirResponse, timeoutMs: s(30) },
  claimEpisode: { method: "POST", path: "/claim_episode", caller: "client", request: ClaimEpisodeRequest, response: ClaimEpisodeResponse, timeoutMs: s(30) },
  /** BC-26: the server holds end_episode until the trainer acks, up to ~300 s. */
  endEpisode: { method: "POST", path: "/end_episode", caller: "client", request: EndEpisodeRequest, response: EndEpisodeResponse, timeoutMs: s(330) },
  abortEpisode: { method: "POST", path: "/abort_episode", caller: "client", request: EndEpisodeRequest, response: EndEpisodeResponse, timeoutMs: s(30) },
  canContinueEpisode: { method: "POST", path: "/can_continue_episode", caller: "client", request: CanContinueEpisodeRequest, response: CanContinueEpisodeResponse, timeoutMs: s(30) },
  getEpisodeBuffer: { method: "POST", path: "/get_episode_buffer", caller: "debug", request: null, response: EpisodeBufferResponse, timeoutMs: s(30) },
  getRolloutStat: { method: "GET", path: "/get_current_batch_rollout_pool_information", caller: "client", request: null, response: CurrentBatchRolloutPoolInformation, timeoutMs: s(30) },
  /** spec §8.2: the Python client gives `agree_sync_weight` 10 s */
  agreeSyncWeight: { method: "POST", path: "/agree_sync_weight", caller: "client", request: AgreeSyncWeightRequest, response: BoolResponse, timeoutMs: s(10) },
  updateEngineStatus: { method: "POST", path: "/update_engine_status", caller: "engine", request: UpdateEngineStatusRequest, response: BoolResponse, timeoutMs: s(10) },
  registerEpisode: { method: "POST", path: "/register_episode", caller: "engine", request: RegisterEpisodeRequest, response: BoolResponse, timeoutMs: s(2) },
  isEpisodeClaimed: { method: "POST", path: "/is_episode_claimed", caller: "engine", request: CheckWhetherEpisodeClaimedRequest, response: BoolResponse, timeoutMs: s(5) },
  updatePoolInformation: {
    method: "POST",
    path: "/update_current_batch_rollout_pool_information_and_fetch_instruction",
    caller: "engine",
    request: CurrentBatchRolloutPoolInformation,
    response: SwarmClientInstruction,
    timeoutMs: s(5),
  },
} as const satisfies Record<string, Endpoint>;

export type EndpointName = keyof typeof endpoints;
