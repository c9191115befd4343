/**
 * @module runtime/server-action — sends the one server action an episode's outcome calls for: `/end_episode` on
 * every claim, `/abort_episode` on every claim, or nothing (BC-34), through the port's shared rule
 * (port/close-claims).
 */
import { AbortCause, abortAll, endAll, type ClaimHandle, type SentAction } from "../port/index.ts";
import type { OutcomeDecision } from "./outcome.ts";

/**
 * Sends the action of a decision for the claims held by an episode invocation. An abort the server never
 * confirmed is reported with cause `abort_unconfirmed` (the object then aborts again), not as a plain abort.
 * @param sleep waits between abort tries (ms)
 */
export async function sendServerAction(decision: OutcomeDecision, claims: readonly ClaimHandle[], taskId: string, sleep?: (ms: number) => Promise<void>): Promise<SentAction> {
  const cause = decision.outcome.kind === "abort" ? decision.outcome.cause : undefined;
  switch (decision.action) {
    case "end":
      return endAll(claims, taskId, decision.outputs ?? {});
    case "abort": {
      const unconfirmed = await abortAll(claims, sleep);
      return { kind: "sent", result: "aborted", cause: unconfirmed.length ? AbortCause.abortUnconfirmed : cause };
    }
    case "none":
      return { kind: "sent", result: "expired", cause: cause ?? AbortCause.expired };
  }
}
