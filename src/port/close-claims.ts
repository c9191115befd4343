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

/**
 * Whether a run's ends and aborts declare it an active client (`declare_client_active`, spec §3.9, §3.10): only a
 * train run, the one that votes `/agree_sync_weight` in the agree modes (scheduler/sync-vote). An eval run never
 * votes: listed by its aborts, it would hold every other client's sync in the all-agree mode until it ages out of
 * the list (600 s, spec §7.3). The episode invocation and the run's object build their swarm clients with it.
 */
export function declaresClientActive(episodeType: "train" | "eval"): boolean {
  return episodeType === "train";
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
export type SentAction =
  | { kind: "sent"; result: EpisodeReportResult; cause?: string; endedSwarms?: string[] }
  /** `reached`: every unknown end's first send reached the server (see {@link requestReachedServer}) */
  | { kind: "unresolved"; reason: string; reached?: boolean };

/** A gateway's error page (HTML), not the swarm server's own answer. */
const HTML_BODY = /^\s*<(!doctype|html|head|body)/i;
/** Transport failures after the request was written: the server may have acted on it. */
// workerd's fetch says "Network connection lost." (a kj DISCONNECTED: the peer closed the socket, here after the
// request was written and before the answer); undici and Node say the others
const DROPPED_AFTER_SEND = /other side closed|socket hang up|ECONNRESET|terminated|UND_ERR_SOCKET|network connection (was )?lost|peer disconnected/i;

/**
 * Whether a failed send reached the swarm server: its own 5xx answer (a JSON or text body, not a gateway's HTML
 * page: a 502/503/504 HTML page may come from a proxy that never forwarded it), or a connection dropped after the
 * request was written. A refused connection, a DNS failure or a timeout count as not reached (unknown).
 * Duck-typed on `status`/`detail`/`message` so the port needs no client import.
 */
export function requestReachedServer(err: unknown): boolean {
  const e = err as { status?: unknown; detail?: unknown; body?: unknown; message?: unknown; cause?: unknown } | null;
  if (!e || typeof e !== "object") return false;
  if (typeof e.status === "number") {
    const text = typeof e.body === "string" ? e.body : typeof e.detail === "string" ? e.detail : "";
    return e.status >= 500 && !HTML_BODY.test(text) && !(e.status >= 502 && e.status <= 504 && text.trim() === "");
  }
  const cause = e.cause as { message?: unknown; code?: unknown } | undefined;
  const text = `${String(e.message ?? "")} ${String(cause?.message ?? "")} ${String(cause?.code ?? "")}`;
  return DROPPED_AFTER_SEND.test(text);
}

/**
 * Ends every claim with its output. A transport error or timeout leaves the outcome unknown, so the end is resent
 * once with `isResend` (a "not found" then means delivered, BC-26); if that fails too the result is `unresolved`
 * and the scheduler resolves it from the server's record. Refusals are never resent: `expired` (BC-23) and `lost`
 * (weight-sync wipe) mean the repeat must run again; across swarms `expired` wins over `lost`. A `lost` ("not
 * rolling") answering a RESEND is not a refusal of the first send, whose answer was lost: that send may be the one
 * that closed the batch, so the outcome stays `unresolved` (ambiguous, never a reason to run the repeat again).
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
  let reached = true;
  const ended: string[] = [];
  for (const c of claims) {
    const output = outputs[c.swarm];
    if (!output) return { kind: "unresolved", reason: `no recorded output for swarm '${c.swarm}'` };
    const send = (isResend: boolean) => c.client.endEpisode(taskId, c.episodeUuid, output, { isResend });
    let r: EndAnswer;
    let resent = alreadySentOnce;
    let firstReached = false;
    try {
      r = await send(alreadySentOnce);
    } catch (first) {
      resent = true;
      firstReached = requestReachedServer(first);
      try {
        r = await send(true);
      } catch (err) {
        reached &&= firstReached;
        unknown.push(`end_episode outcome unknown on '${c.swarm}': ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
    }
    if (r.kind === "lost" && resent) {
      // the first send's answer was lost, and the engine left the rolling states since: that send may have closed the batch
      reached &&= firstReached && !alreadySentOnce;
      unknown.push(`end_episode resend on '${c.swarm}' refused (${r.reason}) after an earlier send's answer was lost: outcome unknown`);
      continue;
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
  if (unknown.length) return { kind: "unresolved", reason: unknown.join("; "), reached };
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
