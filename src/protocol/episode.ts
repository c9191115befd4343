/**
 * @module protocol/episode — bodies of the episode endpoints (spec §2.4–2.9, §2.11, §3.8–3.12, §3.16–3.17).
 * Requests are the server's pydantic models (required fields required, unknown fields stripped); responses are
 * read tolerantly (missing fields take the spec defaults, unknown fields kept — BC-36).
 */
import * as z from "zod/mini";
import "./zod-locale.ts"; // zod's English messages for these schemas
import { SwarmThrottlePolicy } from "./throttle.ts";
import { WorkflowOutput } from "./task.ts";

/** Episode types the server accepts (spec §5.8); anything else is a 400 at claim. */
export const EpisodeType = z.enum(["train", "eval"]);
export type EpisodeType = z.infer<typeof EpisodeType>;

/** `POST /claim_episode` body (spec §2.4). The Python client always sends `throttle_policy` (null when unused). */
export const ClaimEpisodeRequest = z.object({
  client_uuid: z.string(),
  /** "train" | "eval"; validated by the handler (400), not by the model */
  episode_type: z.string(),
  /** max idle seconds without LLM activity before the server reverts */
  discard_episode_timeout: z.number(),
  throttle_policy: z._default(z.nullable(SwarmThrottlePolicy), null),
});
export type ClaimEpisodeRequest = z.infer<typeof ClaimEpisodeRequest>;

/** `POST /claim_episode` response (spec §2.5). On failure `episode_uuid` is `""` and `fail_cause` says why. */
export const ClaimEpisodeResponse = z.looseObject({
  success: z.boolean(),
  client_uuid: z._default(z.string(), ""),
  episode_uuid: z._default(z.string(), ""),
  openai_base_url: z._default(z.string(), ""),
  openai_api_key: z._default(z.string(), ""),
  fail_cause: z._default(z.string(), ""),
});
export type ClaimEpisodeResponse = z.infer<typeof ClaimEpisodeResponse>;

/** `POST /end_episode` and `POST /abort_episode` body (spec §2.8). */
export const EndEpisodeRequest = z.object({
  client_uuid: z.string(),
  episode_uuid: z.string(),
  workflow_output: WorkflowOutput,
  /** the task id; "" for abort */
  task_id: z.string(),
  /** newest servers only */
  declare_client_active: z._default(z.boolean(), true),
});
export type EndEpisodeRequest = z.infer<typeof EndEpisodeRequest>;

/** `/end_episode` and `/abort_episode` 200 response (spec §2.8). */
export const EndEpisodeResponse = z.looseObject({ success: z.boolean() });
export type EndEpisodeResponse = z.infer<typeof EndEpisodeResponse>;

/** `POST /can_continue_episode` body (spec §2.6); the server ignores `client_uuid`. */
export const CanContinueEpisodeRequest = z.object({
  client_uuid: z.string(),
  episode_uuid: z.string(),
});
export type CanContinueEpisodeRequest = z.infer<typeof CanContinueEpisodeRequest>;

/** `POST /can_continue_episode` response (spec §2.6). */
export const CanContinueEpisodeResponse = z.looseObject({ can_continue: z._default(z.boolean(), false) });
export type CanContinueEpisodeResponse = z.infer<typeof CanContinueEpisodeResponse>;

/**
 * Server record of one episode (spec §2.9; the server's pydantic `EpisodeStatus`), as returned by
 * `/get_episode_buffer`. Not the scheduler's `EpisodeStatus` (the state of one logical episode of a run).
 */
export const ServerEpisodeRecord = z.looseObject({
  episode_uuid: z.string(),
  /** "registered" | "claimed" */
  episode_status: z._default(z.string(), ""),
  episode_type: z._default(z.string(), "train"),
  openai_base_url: z._default(z.string(), ""),
  openai_api_key: z._default(z.string(), ""),
  client_uuid: z._default(z.string(), ""),
  zmq_listen_result_addr: z._default(z.string(), ""),
  /** unix seconds */
  latest_activity_timestamp: z._default(z.number(), 0),
  /** seconds; -1 while registered */
  discard_episode_timeout: z._default(z.number(), -1),
  llm_call_count: z._default(z.int(), 0),
  debug_log: z._default(z.array(z.string()), []),
  optional_task_id: z._default(z.string(), ""),
});
export type ServerEpisodeRecord = z.infer<typeof ServerEpisodeRecord>;

/** `POST /get_episode_buffer` response (spec §3.12): every active (registered or claimed) record. */
export const EpisodeBufferResponse = z.looseObject({ buffer: z._default(z.array(ServerEpisodeRecord), []) });
export type EpisodeBufferResponse = z.infer<typeof EpisodeBufferResponse>;

/** `POST /register_episode` body (engine → server, spec §2.11, §3.16). */
export const RegisterEpisodeRequest = z.object({
  episode_uuid: z.string(),
  openai_base_url: z._default(z.string(), ""),
  openai_api_key: z._default(z.string(), ""),
  zmq_listen_result_addr: z._default(z.string(), ""),
});
export type RegisterEpisodeRequest = z.infer<typeof RegisterEpisodeRequest>;

/** `POST /is_episode_claimed` body (engine → server, spec §2.7, §3.17). */
export const CheckWhetherEpisodeClaimedRequest = z.object({
  episode_uuid: z.string(),
  unregister_if_not_claimed: z._default(z.boolean(), false),
});
export type CheckWhetherEpisodeClaimedRequest = z.infer<typeof CheckWhetherEpisodeClaimedRequest>;

/** `POST /agree_sync_weight` body (spec §2.11, §3.14). */
export const AgreeSyncWeightRequest = z.object({ client_uuid: z.string() });
export type AgreeSyncWeightRequest = z.infer<typeof AgreeSyncWeightRequest>;
