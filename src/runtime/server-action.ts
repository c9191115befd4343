/**
 * @module runtime/server-action — sends the one server action an outcome calls for: `/end_episode` on every
 * claim, or `/abort_episode` on every claim, or nothing (BC-34). Shared by the episode invocation and by the
 * Durable Object's outbox, which resends a recorded end after an unknown outcome (BC-26, BC-51).
 */
import type { SwarmClient } from "../client/index.ts";
import type { ValidWorkflowOutput } from "../protocol/index.ts";
import type { EpisodeReportResult } from "../scheduler/index.ts";
import type { OutcomeDecision } from "./outcome.ts";

/** One claimed server episode and the client (with the run's client uuid) that talks to its swarm. */
export interface ClaimHandle {
  swarm: string;
  client: SwarmClient;
  episodeUuid: string;
}

/** What was sent and how the server answered, or why the outcome is still unknown. */
export type SentAction = { kind: "sent"; result: EpisodeReportResult; cause?: string } | { kind: "unresolved"; reason: string };

/**
 * Ends every claim with its output. A transport error or timeout leaves the outcome unknown, so the end is resent
 * once with `isResend` (a "not found" then means delivered, BC-26); if that fails too the result is `unresolved`
 * and the outbox tries later. Refusals are never resent: `expired` (BC-23) and `lost` (weight-sync wipe) mean the
 * repeat must run again.
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
  for (const c of claims) {
    const output = outputs[c.swarm];
    if (!output) return { kind: "unresolved", reason: `no recorded output for swarm '${c.swarm}'` };
    const send = (isResend: boolean) => c.client.endEpisode(taskId, c.episodeUuid, output, { isResend });
    let r;
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
    if (r.kind === "expired") {
      result = "expired";
      cause = `expired:${r.reason}`;
    } else if (r.kind === "lost" && result !== "expired") {
      result = "rejected";
      cause = `end_rejected:${r.reason}`;
    } else if (r.kind === "abortedLocally") {
      result = "aborted";
      cause = "lifetime_exceeded";
    }
  }
  if (unknown.length) return { kind: "unresolved", reason: unknown.join("; ") };
  return { kind: "sent", result, cause };
}

/** Aborts every claim (quietly: abort never ends anything and is a no-op for unknown episodes, spec §3.10). */
export async function abortAll(claims: readonly ClaimHandle[]): Promise<void> {
  await Promise.allSettled(claims.map((c) => c.client.abortEpisode(c.episodeUuid, { quiet: true })));
}

/** Sends the action of a decision for the claims held by an episode invocation. */
export async function sendServerAction(decision: OutcomeDecision, claims: readonly ClaimHandle[], taskId: string): Promise<SentAction> {
  const cause = decision.outcome.kind === "abort" ? decision.outcome.cause : undefined;
  switch (decision.action) {
    case "end":
      return endAll(claims, taskId, decision.outputs ?? {});
    case "abort":
      await abortAll(claims);
      return { kind: "sent", result: "aborted", cause };
    case "none":
      return { kind: "sent", result: "expired", cause: cause ?? "expired" };
  }
}
