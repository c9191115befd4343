/**
 * @module edge/consumer/handover-plan — the queue consumer's side of the handover (docs/design/long-episodes.md):
 * with an `EPISODE_HOST` binding (the episode Worker's own `EpisodeHost` class, wrangler.episode.toml), an episode
 * still running at its wall less the handover reserve is given to the host of its attempt, which goes on with it.
 * A run with secrets or gateway headers moves too: their values are never in the handover record nor stored by the
 * host; each host leg asks the run's scheduler for them again (runtime/episode-resume `askAgain`: the claim report
 * sent again answers with the run's secrets while the attempt runs, `swarmHeaders` with the gateway headers). A
 * refusal (the attempt is no longer running, the run is gone) stops the attempt there: its claims aborted, nothing
 * ended.
 */
import type { EpisodeMessage } from "../../port/index.ts";
import { CallJournal } from "../../runtime/call-journal.ts";
import { handedClaims, type HandoverRecord } from "../../runtime/episode-resume.ts";
import type { EpisodeRunnerDeps } from "../../runtime/episode-runner.ts";
import type { HandoverAnswer } from "../../runtime/handover.ts";

/** The `EpisodeHost` RPC the consumer calls (edge/episode-host.ts). */
export interface EpisodeHostRpc {
  /** takes the episode of `record` over; `handed` also for the same record sent again, `declined` for another */
  takeOver(record: HandoverRecord): Promise<HandoverAnswer>;
}

/** The `EPISODE_HOST` namespace as the consumer uses it (a Durable Object namespace: a stub by name). */
export interface EpisodeHostNamespace {
  idFromName(name: string): unknown;
  get(id: never): unknown;
}

/** The episode Worker's vars and binding of the handover (besides its `Env`). */
export interface HostEnv {
  /** the episode Worker's `EpisodeHost` namespace (wrangler.episode.toml); absent: no handover */
  EPISODE_HOST?: EpisodeHostNamespace;
  /** the wall of one host leg, seconds (default 900, a Durable Object alarm's 15 minutes; docs/design/long-episodes.md) */
  AJET_HOST_WALL_SECONDS?: string;
  /** the queue consumer's wall, seconds (edge/consumer/episode-consumer.ts `consumerWallMs`) */
  AJET_CONSUMER_WALL_SECONDS?: string;
}

/** The wall of one host leg when `AJET_HOST_WALL_SECONDS` is unset, seconds: a Durable Object alarm's 15 minutes. */
export const HOST_WALL_SECONDS = 900;

/**
 * The wall of one host leg, ms: `AJET_HOST_WALL_SECONDS` when it is a number of seconds > 0, else {@link HOST_WALL_SECONDS}
 * (a host leg's wall is the platform's to say; a longer one may be set where it holds: docs/design/long-episodes.md).
 */
export function hostWallMs(raw: string | undefined): number {
  const seconds = Number(raw);
  return (raw !== undefined && raw.trim() !== "" && Number.isFinite(seconds) && seconds > 0 ? seconds : HOST_WALL_SECONDS) * 1000;
}

/** Time left for the calls open at the gate and the handover itself, ms: min(300 s, half the wall). */
export function handoverReserveMs(wallMs: number): number {
  return Math.min(300_000, wallMs / 2);
}

/** Time kept after the hard stop to record, end and report, ms: min(20 s, a quarter of the wall). */
export function reportReserveMs(wallMs: number): number {
  return Math.min(20_000, wallMs / 4);
}

/** The name of an attempt's host: one object per run, episode key and attempt. */
export function hostName(msg: Pick<EpisodeMessage, "runId" | "episodeKey" | "attempt">): string {
  return `${msg.runId}/${msg.episodeKey}#${msg.attempt}`;
}

/**
 * The consumer's `handover` dep: undefined without an `EPISODE_HOST` binding.
 * @param wall the invocation's wall: epoch ms and length ms
 */
export function consumerHandover(env: HostEnv, wall: { atMs: number; ms: number }): EpisodeRunnerDeps["handover"] {
  const hosts = env.EPISODE_HOST;
  if (!hosts) return undefined;
  return (attempt) => ({
    journal: new CallJournal(),
    gateAtMs: wall.atMs - handoverReserveMs(wall.ms),
    async hand(entries) {
      // only an applied claim moves: a refused one is given back by this holder
      if (!(await attempt.claimApplied())) return "declined";
      const record: HandoverRecord = { msg: attempt.msg, task: attempt.task, claims: handedClaims(attempt.held), claimedAtMs: attempt.claimedAtMs, handedAtMs: Date.now(), leg: 1, entries };
      const host = hosts.get(hosts.idFromName(hostName(attempt.msg)) as never) as EpisodeHostRpc;
      // sent once more after a failure: the host answers the same record `handed` again
      return host.takeOver(record).catch(() => host.takeOver(record));
    },
  });
}
