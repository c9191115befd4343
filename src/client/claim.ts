/**
 * @module client/claim — builds the `/claim_episode` body from camelCase options (validated before any request)
 * and maps the response to the discriminated {@link ClaimResult} (spec §2.4, §2.5, §3.8, §5.3, §8.3).
 */
import {
  classifyClaimFailure,
  DEFAULT_DISCARD_EPISODE_TIMEOUT_SECONDS,
  EpisodeType,
  statusFromFailCause,
  SwarmThrottlePolicy,
  type ClaimEpisodeRequest,
  type ClaimEpisodeResponse,
} from "../protocol/index.ts";
import { SwarmInputError, SwarmProtocolError } from "./errors.ts";
import type { ClaimEpisodeOptions, ClaimResult } from "./types.ts";
import { rewriteBaseUrl } from "./url.ts";

/** Python `begin_episode` default (spec §5.3), re-exported for the client's users. */
export { DEFAULT_DISCARD_EPISODE_TIMEOUT_SECONDS };

/**
 * The claim body: every field serialised, `throttle_policy: null` when unused (like Python, spec §2.4).
 * @throws SwarmInputError for a non-positive discard timeout, an episode type other than train/eval, a policy that
 *   fails its schema, or an empty `current_task_id` (spec §11.14: refused here instead of looping forever)
 */
export function buildClaimRequest(clientUuid: string, options: ClaimEpisodeOptions): ClaimEpisodeRequest {
  const discard = options.discardEpisodeTimeoutSeconds ?? DEFAULT_DISCARD_EPISODE_TIMEOUT_SECONDS;
  if (!Number.isFinite(discard) || discard <= 0) {
    throw new SwarmInputError("discardEpisodeTimeoutSeconds", `must be a positive number of seconds, got ${discard}`);
  }
  const type = EpisodeType.safeParse(options.episodeType ?? "train");
  if (!type.success) throw new SwarmInputError("episodeType", `must be "train" or "eval", got ${JSON.stringify(options.episodeType)}`);
  let policy: SwarmThrottlePolicy | null = null;
  if (options.throttlePolicy) {
    const parsed = SwarmThrottlePolicy.safeParse(options.throttlePolicy);
    if (!parsed.success) {
      throw new SwarmInputError("throttlePolicy", parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "));
    }
    if (!parsed.data.current_task_id) {
      throw new SwarmInputError("throttlePolicy.current_task_id", "Task_Ratio_Limit requires current_task_id to be set.");
    }
    policy = parsed.data;
  }
  return { client_uuid: clientUuid, episode_type: type.data, discard_episode_timeout: discard, throttle_policy: policy };
}

/** Where a successful claim is stamped: the client clock and the local-expiry deadline (BC-24). */
export interface ClaimStamp {
  claimedAtMs: number;
  expiresAtMs: number;
}

/**
 * Maps a claim response: success → `claimed` (base URL rewritten onto `serverUrl`, key verbatim, BC-37);
 * "No available episodes…" → `empty`; "Engine not ready…" → `notReady` with the status and the
 * {@link classifyClaimFailure} kind as `reason`; anything else → `rejected`.
 * @throws SwarmProtocolError when `success` is true but `episode_uuid` is empty
 */
export function toClaimResult(
  serverUrl: string,
  req: ClaimEpisodeRequest,
  raw: ClaimEpisodeResponse,
  stamp: (episodeUuid: string) => ClaimStamp,
): ClaimResult {
  if (!raw.success) {
    const failCause = raw.fail_cause;
    const kind = classifyClaimFailure(failCause);
    if (kind === "noEpisodes") return { kind: "empty", failCause };
    if (kind === "other") return { kind: "rejected", failCause };
    return { kind: "notReady", reason: kind, status: statusFromFailCause(failCause) ?? "unknown", failCause };
  }
  if (!raw.episode_uuid) throw new SwarmProtocolError("claimEpisode", "POST /claim_episode", "success without episode_uuid", [], raw);
  return {
    kind: "claimed",
    episodeUuid: raw.episode_uuid,
    baseUrl: rewriteBaseUrl(serverUrl, raw.openai_base_url),
    apiKey: raw.openai_api_key,
    episodeType: req.episode_type as EpisodeType,
    discardEpisodeTimeoutSeconds: req.discard_episode_timeout,
    ...stamp(raw.episode_uuid),
    raw,
  };
}
