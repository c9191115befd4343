/**
 * @module client/end-outcome — classifies `/end_episode` refusals into what a caller must do (spec §3.9, §5.5,
 * §5.7; BC-23, BC-26): `expired` (the claim is no longer ours) or `lost` (the record is gone). Exact texts are
 * matched with the protocol's substring matchers.
 */
import {
  isClaimedByOtherClient,
  isEpisodeNotClaimed,
  isEpisodeNotFound,
  isWeightSyncingEndError,
} from "../protocol/index.ts";
import { SwarmAPIError } from "./errors.ts";
import type { EndEpisodeResult } from "./types.ts";

/** The refusal kinds of {@link EndEpisodeResult}. */
export type EndEpisodeRefusal = Extract<EndEpisodeResult, { kind: "expired" | "lost" }>;

const NOT_ROLLING = "Engine is not in rolling state";

/**
 * Maps an `/end_episode` error to `expired` / `lost`, or null when it is none of the known refusals (then the
 * caller should treat the outcome as a failure to report, never as delivered):
 * - 400 `Episode <uuid> is not in claimed status …` → expired / notClaimed (server idle revert, BC-23)
 * - 404 `Episode <uuid> is claimed by different client …` → expired / claimedByOtherClient
 * - 400 `Episode <uuid> not found.` → lost / notFound (spec §3.9 check 3, §11.6; after an unknown outcome, a
 *   resend that gets this means the first send was DELIVERED — BC-26, `EndEpisodeOptions.isResend`)
 * - 400 `Engine is not in rolling state … [ENGINE.WEIGHT_SYNCING] …` → lost / weightSyncing (spec §11.11)
 * - 400 `Engine is not in rolling state …` (any other status) → lost / engineNotRolling (restart, stop, spec §11.1)
 */
export function classifyEndEpisodeError(err: unknown): EndEpisodeRefusal | null {
  if (!(err instanceof SwarmAPIError) || (err.status !== 400 && err.status !== 404)) return null;
  const d = err.detail;
  if (isClaimedByOtherClient(d)) return { kind: "expired", reason: "claimedByOtherClient", error: err };
  if (isEpisodeNotClaimed(d)) return { kind: "expired", reason: "notClaimed", error: err };
  if (isEpisodeNotFound(d)) return { kind: "lost", reason: "notFound", error: err };
  if (isWeightSyncingEndError(d)) return { kind: "lost", reason: "weightSyncing", error: err };
  if (d.includes(NOT_ROLLING)) return { kind: "lost", reason: "engineNotRolling", error: err };
  return null;
}
