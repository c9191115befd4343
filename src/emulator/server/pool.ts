/**
 * @module emulator/server/pool — pool information (engine push + server overlay, spec §3.13, §3.18, §11.20),
 * active swarm clients and `/agree_sync_weight` (spec §3.14, §7.3), and the ephemeral verbose logs (§3.19).
 */
import {
  ServerText,
  isAgreeSyncWeightMethod,
  type ActiveSwarmClient,
  type BoolResponse,
  type CurrentBatchRolloutPoolInformation,
  type SwarmClientInstruction,
} from "../../protocol/index.ts";
import { defaultPoolInformation, type ServerState } from "./state.ts";


/** `_register_active_client`: add (idempotent) and refresh the client's activity. */
export function registerActiveClient(state: ServerState, clientUuid: string): void {
  if (!clientUuid) return;
  const now = state.nowSeconds();
  const existing = state.activeClients.find((c) => c.client_uuid === clientUuid);
  if (existing) existing.last_activity_at = now;
  else state.activeClients.push({ client_uuid: clientUuid, last_activity_at: now, allowed_sync_weight: false });
}

/** `_refresh_client_activity`: refresh only when already listed (claims and chat calls). */
export function refreshClientActivity(state: ServerState, clientUuid: string): void {
  const existing = clientUuid ? state.activeClients.find((c) => c.client_uuid === clientUuid) : undefined;
  if (existing) existing.last_activity_at = state.nowSeconds();
}

/** `_expire_inactive_clients`: drop clients idle longer than `timeoutMs` (CLIENT_ACTIVE_TIMEOUT, 600 s). */
export function expireInactiveClients(state: ServerState, timeoutMs: number): void {
  const now = state.nowSeconds();
  state.activeClients = state.activeClients.filter((c) => now - c.last_activity_at <= timeoutMs / 1000);
}

const copyClients = (clients: readonly ActiveSwarmClient[]): ActiveSwarmClient[] => clients.map((c) => ({ ...c }));

/**
 * `POST /update_current_batch_rollout_pool_information_and_fetch_instruction` (spec §3.18): stores the engine's
 * snapshot with the server-maintained fields nulled, returns the active clients.
 */
export function pushPoolInformation(state: ServerState, info: CurrentBatchRolloutPoolInformation): SwarmClientInstruction {
  const stored = defaultPoolInformation();
  for (const key of Object.keys(stored) as Array<keyof CurrentBatchRolloutPoolInformation>) {
    if (info[key] !== undefined) (stored as Record<string, unknown>)[key] = info[key];
  }
  stored.running_episode_details = null;
  stored.engine_status = null;
  stored.global_step = null;
  stored.completed_tasks_client_uuids = {};
  stored.swarm_client_instruction = { active_clients: [] };
  state.pool = stored;
  return { active_clients: copyClients(state.activeClients) };
}

/**
 * `GET /get_current_batch_rollout_pool_information` (spec §3.13). Overlays the live server fields onto the
 * stored snapshot IN PLACE, as the single-process server does: `completed_tasks_client_uuids` keeps its last
 * non-empty value until the engine's next push (spec §11.20).
 */
export function readPoolInformation(state: ServerState): CurrentBatchRolloutPoolInformation {
  const pool = state.pool;
  pool.engine_status = state.engineStatus;
  pool.global_step = state.globalStep;
  pool.booting_start_time = state.bootingStartTime;
  pool.training_model_path = state.trainingModelPath;
  pool.swarm_client_instruction = { active_clients: copyClients(state.activeClients) };
  const now = state.nowSeconds();
  const running: Record<string, Record<string, string>> = {};
  for (const r of state.records.values()) {
    if (r.episode_status !== "claimed") continue;
    running[r.episode_uuid] = {
      episode_status: r.episode_status,
      time_since_last_activity: `${(now - r.latest_activity_timestamp).toFixed(1)}s`,
      discard_episode_timeout: `${r.discard_episode_timeout.toFixed(1)}s`,
      llm_call_count: String(r.llm_call_count),
      client_uuid: r.client_uuid,
      optional_task_id: r.optional_task_id,
    };
  }
  pool.running_episode_details = Object.keys(running).length ? running : null;
  const byTask: Record<string, string[]> = {};
  for (const r of state.finished.values()) {
    if (!r.optional_task_id) continue;
    (byTask[r.optional_task_id] ??= []).push(r.client_uuid);
  }
  if (Object.keys(byTask).length) pool.completed_tasks_client_uuids = byTask;
  return structuredClone(pool);
}

/** Result of `/agree_sync_weight`: a BoolResponse, or `"assert"` (HTTP 500) in a non-agree mode. */
export type AgreeResult = BoolResponse | "assert";

/** `POST /agree_sync_weight` semantics (spec §3.14). */
export function agreeSyncWeight(state: ServerState, clientUuid: string): AgreeResult {
  if (!clientUuid) return { success: false, failure_reason: ServerText.clientUuidRequired };
  if (!isAgreeSyncWeightMethod(state.pool.sample_collection_method)) return "assert";
  const client = state.activeClients.find((c) => c.client_uuid === clientUuid);
  if (client) {
    client.allowed_sync_weight = true;
    return { success: true, failure_reason: "" };
  }
  return { success: false, failure_reason: ServerText.notInActiveList(clientUuid) };
}

/** `POST /push_verbose_log`: append, drop entries older than `ttlMs`, keep the last 50. */
export function pushVerboseLog(state: ServerState, tag: string, message: string, ttlMs: number): BoolResponse {
  const now = state.nowSeconds();
  state.verboseLogs.push({ timestamp: now, tag, message });
  state.verboseLogs = state.verboseLogs.filter((e) => e.timestamp >= now - ttlMs / 1000).slice(-50);
  return { success: true, failure_reason: "" };
}

/** `GET /get_verbose_logs`: entries from the last `ttlMs`. */
export function readVerboseLogs(state: ServerState, ttlMs: number): { entries: Array<{ timestamp: number; tag: string; message: string }> } {
  const cutoff = state.nowSeconds() - ttlMs / 1000;
  return { entries: state.verboseLogs.filter((e) => e.timestamp >= cutoff).map((e) => ({ ...e })) };
}
