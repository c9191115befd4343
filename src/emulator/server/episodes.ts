/**
 * @module emulator/server/episodes — the client-facing episode operations of `swarm_server.py`: claim, end,
 * abort, can-continue (spec §3.8–3.11, §5), and the idle janitor (spec §5.4). Each returns the body or the
 * HTTP error the real server sends; texts come from `ServerText`.
 */
import {
  ENGINE,
  ServerText,
  isRollingState,
  type CanContinueEpisodeRequest,
  type ClaimEpisodeRequest,
  type ClaimEpisodeResponse,
  type EndEpisodeRequest,
} from "../../protocol/index.ts";
import { classifyTrainResult } from "../step-log.ts";
import { expireInactiveClients, refreshClientActivity, registerActiveClient } from "./pool.ts";
import type { ServerState } from "./state.ts";

/** An operation's answer: a 200 body, or an HTTP error (`status` 500 means the plain-text Internal Server Error). */
export type Outcome<T> = { ok: true; body: T } | { ok: false; status: number; detail?: string };

const ok = <T>(body: T): Outcome<T> => ({ ok: true, body });
const fail = (status: number, detail?: string): Outcome<never> => ({ ok: false, status, detail });

/** `POST /claim_episode` (spec §3.8): FIFO head, exact fail_cause texts. */
export function claimEpisode(state: ServerState, req: ClaimEpisodeRequest): Outcome<ClaimEpisodeResponse> {
  const failed = (failCause: string): Outcome<ClaimEpisodeResponse> =>
    ok({ success: false, client_uuid: req.client_uuid, episode_uuid: "", openai_base_url: "", openai_api_key: "", fail_cause: failCause });
  if (state.engineStatus !== ENGINE.ROLLING) return failed(ServerText.engineNotReady(state.engineStatus));
  if (req.episode_type !== "train" && req.episode_type !== "eval") return fail(400, ServerText.unknownEpisodeType(req.episode_type));
  const uuid = state.queue.shift();
  if (uuid === undefined) return failed(ServerText.noAvailableEpisodes);
  const record = state.records.get(uuid);
  if (!record) return failed(ServerText.vanishedEpisode);
  record.episode_status = "claimed";
  record.episode_type = req.episode_type;
  record.client_uuid = req.client_uuid;
  record.latest_activity_timestamp = state.nowSeconds();
  record.llm_call_count = 0;
  record.discard_episode_timeout = req.discard_episode_timeout;
  if (req.throttle_policy?.current_task_id) record.optional_task_id = req.throttle_policy.current_task_id;
  refreshClientActivity(state, req.client_uuid);
  return ok({
    success: true,
    client_uuid: req.client_uuid,
    episode_uuid: uuid,
    openai_base_url: record.openai_base_url,
    openai_api_key: record.openai_api_key,
    fail_cause: "",
  });
}

/**
 * `POST /end_episode` (spec §3.9): checks in the server's order, then delivers a train output to the engine
 * and waits for its ack (`ackDelayMs`), or reverts/deletes an eval episode. Train episodes are logged in the
 * step log with the engine's verdict (BC-29).
 */
export async function endEpisode(state: ServerState, req: EndEpisodeRequest, ackDelayMs: number): Promise<Outcome<{ success: boolean }>> {
  const status = state.engineStatus;
  if (!isRollingState(status)) return fail(400, ServerText.endNotRolling(status));
  const metadata = req.workflow_output.metadata;
  if (!("task_id" in metadata) || metadata["task_id"] !== req.task_id) return fail(500);
  const uuid = req.episode_uuid;
  const record = state.records.get(uuid);
  if (!record) return fail(400, ServerText.episodeNotFound(uuid));
  if (record.episode_status !== "claimed") return fail(400, ServerText.episodeNotClaimed(uuid));
  if (record.client_uuid !== req.client_uuid) return fail(404, ServerText.claimedByOther(uuid, record.client_uuid, req.client_uuid));
  if (record.episode_type === "train") {
    const reward = req.workflow_output.reward;
    state.stepLog.record(state.runNumber, state.globalStep ?? 0, state.trainConfig?.numRepeat ?? 4, {
      episodeUuid: uuid,
      taskId: req.task_id,
      reward: typeof reward === "number" ? reward : null,
      clientUuid: req.client_uuid,
      llmCallCount: record.llm_call_count,
      atMs: state.clock.nowMs(),
      ...classifyTrainResult(record.llm_call_count, reward),
    });
    await state.engineLink.deliverResult(record, req.workflow_output, req.task_id);
    if (ackDelayMs > 0) await state.clock.sleep(ackDelayMs);
    const current = state.records.get(uuid);
    if (current) {
      state.finished.set(uuid, current);
      state.deleteRecord(uuid);
    }
    if (req.declare_client_active) registerActiveClient(state, req.client_uuid);
  } else if (record.episode_type === "eval") {
    if (status === ENGINE.ROLLING) await state.revertToUnclaimed(uuid);
    else state.deleteRecord(uuid);
  } else {
    return fail(400, ServerText.unknownEpisodeType(record.episode_type));
  }
  return ok({ success: true });
}

/** `POST /abort_episode` (spec §3.10): no-op outside rolling or for unknown uuids; revert in ROLLING; delete in ROLLING_POST. */
export async function abortEpisode(state: ServerState, req: EndEpisodeRequest): Promise<Outcome<{ success: boolean }>> {
  const status = state.engineStatus;
  if (!isRollingState(status) || !state.records.has(req.episode_uuid)) return ok({ success: true });
  if (status === ENGINE.ROLLING) await state.revertToUnclaimed(req.episode_uuid);
  else state.deleteRecord(req.episode_uuid);
  if (req.declare_client_active) registerActiveClient(state, req.client_uuid);
  return ok({ success: true });
}

/** `POST /can_continue_episode` (spec §3.11): claimed record in a rolling state; `client_uuid` is ignored. */
export function canContinueEpisode(state: ServerState, req: CanContinueEpisodeRequest): { can_continue: boolean } {
  const record = state.records.get(req.episode_uuid);
  return { can_continue: isRollingState(state.engineStatus) && record?.episode_status === "claimed" };
}

/**
 * One janitor pass (spec §5.4, §8.6): reverts every claimed record idle longer than its
 * `discard_episode_timeout` (a chat call being generated counts as activity), then expires active clients.
 * @returns the reverted uuids.
 */
export async function janitorSweep(state: ServerState, activeClientTimeoutMs: number): Promise<string[]> {
  const now = state.nowSeconds();
  const idle = [...state.records.values()]
    .filter((r) => r.episode_status === "claimed" && !state.hasCallInFlight(r.episode_uuid))
    .filter((r) => now - r.latest_activity_timestamp > r.discard_episode_timeout)
    .map((r) => r.episode_uuid);
  for (const uuid of idle) await state.revertToUnclaimed(uuid);
  expireInactiveClients(state, activeClientTimeoutMs);
  return idle;
}
