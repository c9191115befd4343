/**
 * @module client/local-expiry — the reference client's local episode lifetime ("max_episode_time" = 8 ×
 * discard_episode_timeout; spec §5.5 step 2, BC-24): remembers when this client object claimed each episode.
 */
import type { LocalExpiryOptions } from "./types.ts";
import { EPISODE_LIFETIME_FACTOR } from "../protocol/index.ts";

/** Default: off, factor 8 (the reference code; its docs say 2). */
export const DEFAULT_LOCAL_EXPIRY: LocalExpiryOptions = { enabled: false, lifetimeFactor: EPISODE_LIFETIME_FACTOR };

/** At most this many claims are remembered (oldest forgotten first); a forgotten episode is simply ended. */
const MAX_TRACKED = 10_000;

/** Resolves the constructor option (`true` = enabled with factor 8). */
export function resolveLocalExpiry(option: boolean | Partial<LocalExpiryOptions> | undefined): LocalExpiryOptions {
  if (option === undefined || option === false) return { ...DEFAULT_LOCAL_EXPIRY };
  if (option === true) return { ...DEFAULT_LOCAL_EXPIRY, enabled: true };
  return { ...DEFAULT_LOCAL_EXPIRY, enabled: true, ...option };
}

/** Episode uuid → local expiry instant (epoch ms), in claim order. */
export class LocalExpiryTracker {
  readonly #expiresAtMs = new Map<string, number>();

  constructor(readonly options: LocalExpiryOptions) {}

  /** The expiry instant of a claim made at `claimedAtMs` with the given discard timeout (seconds). */
  expiryOf(claimedAtMs: number, discardEpisodeTimeoutSeconds: number): number {
    return claimedAtMs + this.options.lifetimeFactor * discardEpisodeTimeoutSeconds * 1000;
  }

  /** Remembers a claim (only when enabled). */
  remember(episodeUuid: string, expiresAtMs: number): void {
    if (!this.options.enabled) return;
    this.#expiresAtMs.delete(episodeUuid);
    this.#expiresAtMs.set(episodeUuid, expiresAtMs);
    if (this.#expiresAtMs.size > MAX_TRACKED) {
      const oldest = this.#expiresAtMs.keys().next().value;
      if (oldest !== undefined) this.#expiresAtMs.delete(oldest);
    }
  }

  /**
   * Forgets the episode and says how long past its expiry it is at `nowMs` (ms), or null when it is not overdue,
   * not tracked, or tracking is off.
   */
  takeOverdueMs(episodeUuid: string, nowMs: number): number | null {
    const expiresAt = this.#expiresAtMs.get(episodeUuid);
    this.#expiresAtMs.delete(episodeUuid);
    if (!this.options.enabled || expiresAt === undefined || nowMs <= expiresAt) return null;
    return nowMs - expiresAt;
  }

  /** Forgets the episode (after an abort). */
  forget(episodeUuid: string): void {
    this.#expiresAtMs.delete(episodeUuid);
  }
}
