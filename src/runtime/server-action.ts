/**
 * @module runtime/server-action — sends the one server action an episode's outcome calls for: `/end_episode` on
 * every claim, `/abort_episode` on every claim, or nothing (BC-34), through the port's shared rule
 * (port/close-claims).
 */
import { AbortCause, abortAll, endAll, type ClaimHandle, type SentAction } from "../port/index.ts";
import type { OutcomeDecision } from "./outcome.ts";

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
      return { kind: "sent", result: "expired", cause: cause ?? AbortCause.expired };
  }
}
