/**
 * @module protocol/server-texts — the server's exact texts (spec §3, §9.6), as builders for the emulator and as
 * substring matchers for the client (spec §8.3: clients match `fail_cause` by substring, spec §12).
 */
import { ENGINE, type EngineStatus } from "./engine.ts";

/** Advice appended to the "Engine not ready" fail_cause, by status (spec §3.8). Unknown status → "". */
const NOT_READY_ADVICE: Partial<Record<string, string>> = {
  [ENGINE.OFFLINE]:
    "Please start the engine first. Please use one of the client to run `client.sync_train_config() + client.start_engine()` to start the engine.",
  [ENGINE.BOOTING]: "Please wait until the engine is fully booted. Try again (maybe 1 minute) later.",
  [ENGINE.WEIGHT_SYNCING]: "Engine is syncing weights. Try again (maybe 1 minute) later.",
  [ENGINE.WEIGHT_EXPORTING]: "Engine is exporting weights (fsdp -> hf safetensor). Try again (maybe 1 minute) later.",
  [ENGINE.ROLLING_POST]: "Engine is in post-rolling phase. Try again (maybe 1 minute) later.",
};

/** Exact server texts. Functions take the variable parts. */
export const ServerText = {
  /** claim fail_cause outside ROLLING (spec §3.8); note the single space before the advice, kept even when empty. */
  engineNotReady: (status: string) => `Engine not ready. Current status: [${status}]. ${NOT_READY_ADVICE[status] ?? ""}`,
  noAvailableEpisodes: "No available episodes to claim. Try again (maybe 1 minute) later.",
  /** claim fail_cause when the queue head's record vanished (spec §3.8, §11.21). */
  vanishedEpisode: "No available episodes to claim. Try again (maybe 2 minutes) later.",
  unknownEpisodeType: (t: string) => `Unknown episode_type: ${t}`,
  syncWhileRunning:
    "Engine is already started. Call `stop_engine` first before syncing new training configuration.",
  syncCodeWhileRunning: "Engine is already started. Call `stop_engine` first before syncing new training code.",
  /** `/sync_train_code` 400s and success message (spec §3.3). */
  syncCodeEmptyZip: "Uploaded zip file is empty.",
  syncCodeInvalidZip: "Uploaded file is not a valid zip file.",
  syncCodeOk: "Training code synced successfully.",
  startWhenNotOffline: (status: string) => `Cannot start engine when engine is not offline. Current status: ${status}`,
  noTrainingConfig: "No training config found",
  endNotRolling: (status: string) =>
    `Engine is not in rolling state. Current status: [${status}]. Cannot end episode.`,
  episodeNotFound: (uuid: string) => `Episode ${uuid} not found.`,
  episodeNotClaimed: (uuid: string) =>
    `Episode ${uuid} is not in claimed status, maybe you take **too long** to submit the workflow output, try increase \`discard_episode_timeout\` when \`begin_episode\`.`,
  claimedByOther: (uuid: string, recorded: string, given: string) =>
    `Episode ${uuid} is claimed by different client: ${recorded}, but got ${given}.`,
  registerNotRolling: "Engine is not in rolling state. Cannot register episode.",
  invalidEngineStatus: "Invalid engine status",
  clientUuidRequired: "client_uuid required",
  notInActiveList: (uuid: string) =>
    `Client ${uuid} is not in the active list -- it must have completed at least one rewarded (non-abort) episode since the last weight sync before agreeing.`,
  /** proxy (spec §9.2, §9.6) */
  proxyNotRolling: "The server is not in ENGINE.ROLLING status, cannot accept new requests.",
  proxyNotClaimed: (uuid: string) => `The episode ${uuid} is not claimed, cannot accept new requests.`,
  missingAuthorization: "Missing authorization header",
  invalidAuthorizationData: "Invalid authorization data",
  invalidAuthorizationHeader: (err: string) => `Invalid authorization header: ${err}`,
  noLlmCallYet: "No LLM call has been made yet",
  internalServerError: "Internal Server Error",
  /** the default system prompt the proxy injects (spec §9.2 step 4, BC-44) */
  defaultSystemPrompt: "You are a helpful assistant, your name is AgentJet.",
} as const;

/** How a failed claim should be retried, from its fail_cause (spec §8.3 step 6). */
export type ClaimFailureKind = "noEpisodes" | "syncing" | "postRolling" | "notReady" | "other";

/**
 * Classifies a claim `fail_cause` by the substrings the Python client uses (spec §8.3, §12).
 * @returns `noEpisodes` ("No available episodes to claim." → retry after ~2 s), `syncing`, `postRolling`
 * (retry after ~15 s or on the status edge back to ROLLING), `notReady` (any other "Engine not ready"), `other`.
 */
export function classifyClaimFailure(failCause: string): ClaimFailureKind {
  if (failCause.includes("No available episodes to claim")) return "noEpisodes";
  if (failCause.includes("Engine is syncing weights")) return "syncing";
  if (failCause.includes("Engine is in post-rolling phase")) return "postRolling";
  if (failCause.includes("Engine not ready")) return "notReady";
  return "other";
}

/** Extracts the status from "Engine not ready. Current status: [ENGINE.X]." texts, if present. */
export function statusFromFailCause(failCause: string): EngineStatus | string | null {
  const m = /Current status: \[([^\]]*)\]/.exec(failCause);
  return m ? (m[1] ?? null) : null;
}

/** True when an `/end_episode` 400 detail means the episode is gone because of a weight sync (spec §5.5 step 4). */
export function isWeightSyncingEndError(detail: string): boolean {
  return detail.includes("WEIGHT_SYNCING");
}

/** True when an end/LLM error detail says the record no longer exists (spec §3.9, §11.6). */
export function isEpisodeNotFound(detail: string): boolean {
  return /Episode [0-9a-zA-Z_-]* ?not found\./.test(detail);
}

/** True when an end error detail says the episode was reverted (idle timeout / abort, spec §3.9 check 4). */
export function isEpisodeNotClaimed(detail: string): boolean {
  return detail.includes("is not in claimed status") || detail.includes("is not claimed, cannot accept");
}

/** True when an `/agree_sync_weight` failure_reason says the client is not (or no longer) in the active list (spec §3.14). */
export function isNotInActiveList(failureReason: string): boolean {
  return failureReason.includes("is not in the active list");
}

/** True when an end error detail says another client re-claimed the episode (spec §3.9 check 5, 404). */
export function isClaimedByOtherClient(detail: string): boolean {
  return detail.includes("is claimed by different client");
}
