/**
 * @module edge/consumer/sandboxes — where an episode's sandbox comes from (the one interface the consumer hands the
 * runtime, `SandboxProvider` of sandbox/attempt): the Worker's backend (edge/ground/sandbox-backend), its calls
 * through the invocation's guarded fetch (allowed hosts, the 6 connections, the subrequest budget), and the run's
 * ledger, its Durable Object. Only for a run with sandboxes: an episode of any other run pays nothing.
 */
import type { EpisodeMessage, SandboxLedgerPort } from "../../port/index.ts";
import { guardFetch, type ConnectionLimiter, type SubrequestBudget } from "../../runtime/limits.ts";
import type { OutboundFetch } from "../../runtime/outbound.ts";
import type { SandboxProvider } from "../../sandbox/attempt.ts";
import type { Env } from "../ground/env.ts";
import { workerSandboxBackend } from "../ground/sandbox-backend.ts";

/**
 * The `sandboxes` of `runEpisode`'s deps for one message: `{}` for a run without sandboxes.
 * @param ledger the run's Durable Object (its `sandboxIntent` / `sandboxReleased` RPCs)
 */
export function episodeSandboxes(
  msg: EpisodeMessage,
  env: Env,
  share: { outbound: OutboundFetch; limiter: ConnectionLimiter; budget: SubrequestBudget },
  ledger: SandboxLedgerPort,
): { sandboxes?: SandboxProvider } {
  if (!msg.sandbox) return {};
  const { backend, missing } = workerSandboxBackend(env, { fetch: guardFetch(share.outbound, share.limiter, share.budget), take: (purpose) => share.budget.take(purpose) });
  return { sandboxes: { backend, ledger, ...(missing ? { missing } : {}) } };
}
