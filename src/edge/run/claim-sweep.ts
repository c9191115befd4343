/**
 * @module edge/run/claim-sweep — finds this run's claims that nobody holds, from the server's own view (pool
 * information's `running_episode_details`: one entry per claimed episode with its claimant, idle seconds and
 * discard timeout). Such claims come from a `/claim_episode` whose answer was lost after the server acted (the
 * consumer claimed again and never knew the first), or an `/abort_episode` that failed. Each holds an engine slot —
 * and so the weight sync — until the server's janitor reverts it (the discard timeout: 240 s by default, user
 * scripts set 3600 s). The Durable Object releases them within seconds. Pure; the object does the I/O.
 */
import type { RunningEpisodeDetail } from "../../protocol/index.ts";

/** A claim of this run the object does not know, and may release now. */
export interface OrphanClaim {
  episodeUuid: string;
  /** seconds since its last activity on the server */
  idleSeconds: number;
}

/** Parses the server's `"12.3s"` strings (seconds). @returns NaN when unreadable */
export function serverSeconds(text: string | undefined): number {
  if (text === undefined) return Number.NaN;
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*s?\s*$/.exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

/** Options of {@link orphanClaims}. Seconds. */
export interface OrphanRule {
  /** the run's client uuid: only its claims are looked at */
  clientUuid: string;
  /** episode uuids some live attempt of the run holds (running or reporting) */
  known: ReadonlySet<string>;
  /**
   * how long an unknown claim may be someone's unreported claim: a consumer reports its claims right after claiming
   * (multi-swarm functions hold the first ones while claiming the others, up to the claim budget)
   */
  graceSeconds: number;
  /**
   * safety margin before the server's own revert: a claim this close to its discard timeout is left to the janitor,
   * since after a revert another client may claim it and an abort (which checks no ownership) would revert theirs
   */
  janitorMarginSeconds: number;
}

/**
 * The claims of `rule.clientUuid` in `running` that no live attempt holds, idle at least `graceSeconds` and not
 * within `janitorMarginSeconds` of their discard timeout.
 */
export function orphanClaims(running: Readonly<Record<string, RunningEpisodeDetail>> | null, rule: OrphanRule): OrphanClaim[] {
  const out: OrphanClaim[] = [];
  for (const [uuid, d] of Object.entries(running ?? {})) {
    if (d["client_uuid"] !== rule.clientUuid || rule.known.has(uuid)) continue;
    if ((d["episode_status"] ?? "claimed") !== "claimed") continue;
    const idle = serverSeconds(d["time_since_last_activity"]);
    const discard = serverSeconds(d["discard_episode_timeout"]);
    if (!Number.isFinite(idle) || idle < rule.graceSeconds) continue;
    if (Number.isFinite(discard) && discard > 0 && idle >= discard - rule.janitorMarginSeconds) continue;
    out.push({ episodeUuid: uuid, idleSeconds: idle });
  }
  return out;
}
