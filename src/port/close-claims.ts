/**
 * @module port/close-claims — the one rule for giving claims back: `/end_episode` on every claim of an episode, or
 * `/abort_episode` on every claim (BC-34), and how the server's answers add up to one {@link EpisodeReportResult}.
 * Shared by the episode invocation and by the Durable Object's outbox, which resends a recorded end after an
 * unknown outcome (BC-26, BC-51). It sees a swarm client only through {@link ClaimCloser} (`SwarmClient` fits).
 */
import type { ValidWorkflowOutput } from "../protocol/index.ts";
import { AbortCause } from "./abort.ts";
import type { EpisodeReportResult } from "./reports.ts";

/** How `/end_episode` answered, in the client's words (the `kind`s of the client's `EndEpisodeResult`). */
export type EndAnswer =
  | { kind: "ended" }
  | { kind: "expired"; reason: string }
  | { kind: "lost"; reason: string }
  | { kind: "abortedLocally" };

/** What closing a claim needs of a swarm client (with the run's client uuid). */
export interface ClaimCloser {
  endEpisode(taskId: string, episodeUuid: string, output: ValidWorkflowOutput, options: { isResend: boolean }): Promise<EndAnswer>;
  /** @returns true once the server confirmed (quiet: false on an error, never a throw) */
  abortEpisode(episodeUuid: string, options: { quiet: true }): Promise<boolean>;
}

/** One claimed server episode and the client that ends or aborts it. */
export interface ClaimHandle {
  swarm: string;
  client: ClaimCloser;
  episodeUuid: string;
}

/**
 * What was sent and how the server answered, or why the outcome is still unknown. `endedSwarms`: when the result is
 * not `ended`, the swarms whose end the server accepted all the same (a multi-swarm episode refused on another
 * server): their rewards are on those servers.
 */
export type SentAction = { kind: "sent"; result: EpisodeReportResult; cause?: string; endedSwarms?: string[] } | { kind: "unresolved"; reason: string };

/**
 * Ends every claim with its output. A transport error or timeout leaves the outcome unknown, so the end is resent
 * once with `isResend` (a "not found" then means delivered, BC-26); if that fails too the result is `unresolved`
 * and the outbox tries later. Refusals are never resent: `expired` (BC-23) and `lost` (weight-sync wipe) mean the
 * repeat must run again; across swarms `expired` wins over `lost`.
 * @param alreadySentOnce true when resending from the outbox (the first send's outcome is unknown)
 */
export async function endAll(
  claims: readonly ClaimHandle[],
  taskId: string,
  outputs: Readonly<Record<string, ValidWorkflowOutput>>,
  alreadySentOnce = false,
): Promise<SentAction> {
  let result: EpisodeReportResult = "ended";
  let cause: string | undefined;
  // an unknown outcome on one swarm does not stop the others: their claims are ended now, not left held (BC-33)
  const unknown: string[] = [];
  const ended: string[] = [];
  for (const c of claims) {
    const output = outputs[c.swarm];
    if (!output) return { kind: "unresolved", reason: `no recorded output for swarm '${c.swarm}'` };
    const send = (isResend: boolean) => c.client.endEpisode(taskId, c.episodeUuid, output, { isResend });
    let r: EndAnswer;
    try {
      r = await send(alreadySentOnce);
    } catch {
      try {
        r = await send(true);
      } catch (err) {
        unknown.push(`end_episode outcome unknown on '${c.swarm}': ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
    }
    if (r.kind === "ended") {
      ended.push(c.swarm);
    } else if (r.kind === "expired") {
      result = "expired";
      cause = `${AbortCause.expired}:${r.reason}`;
    } else if (r.kind === "lost" && result !== "expired") {
      result = "lost";
      cause = `${AbortCause.lost}:${r.reason}`;
    } else if (r.kind === "abortedLocally") {
      result = "aborted";
      cause = AbortCause.lifetimeExceeded;
    }
  }
  if (unknown.length) return { kind: "unresolved", reason: unknown.join("; ") };
  return result !== "ended" && ended.length > 0 ? { kind: "sent", result, cause, endedSwarms: ended } : { kind: "sent", result, cause };
}

/** Pauses between the tries of one abort (ms): three tries in all. */
export const ABORT_RETRY_DELAYS_MS = [500, 1_500] as const;

/**
 * Aborts every claim (abort never ends anything and is a no-op for unknown episodes, spec §3.10), each sent again
 * after {@link ABORT_RETRY_DELAYS_MS} while it fails (a transport error, a 5xx, or `success: false`).
 * @param sleep waits between tries (ms); default a real timer
 * @returns the claims whose abort the server never confirmed (still held, as far as anyone knows): report them as
 *   {@link AbortCause.abortUnconfirmed}, never as a plain abort
 */
export async function abortAll(claims: readonly ClaimHandle[], sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms))): Promise<ClaimHandle[]> {
  const confirmed = await Promise.all(
    claims.map(async (c) => {
      for (let i = 0; ; i++) {
        if (await c.client.abortEpisode(c.episodeUuid, { quiet: true }).catch(() => false)) return true;
        const pause = ABORT_RETRY_DELAYS_MS[i];
        if (pause === undefined) return false;
        await sleep(pause);
      }
    }),
  );
  return claims.filter((_, i) => !confirmed[i]);
}
