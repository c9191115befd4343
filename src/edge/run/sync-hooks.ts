/**
 * @module edge/run/sync-hooks — the run object's I/O of a weight sync (issue 20 §3): its vote in the agree modes
 * (`/agree_sync_weight` with the run's client uuid, answered to the core as `syncVoteAnswered`), and the weight-sync
 * hooks — the function module's `onWeightSync(step, metrics)` and the run's `weightSyncWebhook` — each called once per
 * server step as the engine enters WEIGHT_SYNCING. A hook is never awaited by the run's loop: a failing or slow one
 * (past {@link HOOK_TIMEOUT_MS}) is logged and never holds training. The hooks are handed to the object's
 * `waitUntil`, so the alarm or RPC that started them ending does not cut them (each settles, or is logged as slow,
 * within {@link HOOK_TIMEOUT_MS}).
 */
import type { SwarmClient } from "../../client/index.ts";
import type { AgreeSyncWeight, SchedulerEvent, WeightSyncHook } from "../../scheduler/index.ts";
import type { RolloutFunction } from "../../sdk/contract.ts";
import { rolloutFunctions } from "../consumer/functions-registry.ts";
import type { RunLog } from "../ground/log.ts";
import type { RunMeta } from "./run-views.ts";

/** How long one hook may take before it is logged as slow and left behind, ms. */
export const HOOK_TIMEOUT_MS = 10_000;

/** What {@link runSyncCommand} needs of the run's command runner. */
export interface SyncCommandHost {
  meta(): RunMeta;
  feed(event: SchedulerEvent, inline: boolean): Promise<unknown>;
  /** the run's client of a swarm (its client uuid) */
  client(swarm: string): SwarmClient;
  fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  log: RunLog;
  /**
   * hands the started hooks to the platform so the event that started them (an alarm, an RPC) ending does not cancel
   * them: the object's `ctx.waitUntil`. Absent (a test host): the hooks run on their own.
   */
  waitUntil?(promise: Promise<unknown>): void;
}

/**
 * Carries out `agreeSyncWeight` (the vote, its answer fed to the core) or `weightSyncHook` (the hooks started, never
 * awaited: a failing or slow hook never holds the run's loop).
 */
export async function runSyncCommand(c: AgreeSyncWeight | WeightSyncHook, host: SyncCommandHost, inline: boolean): Promise<void> {
  if (c.type === "agreeSyncWeight") {
    await host.feed(await voteForSync(host.client(c.swarm), c.swarm, c.step), inline);
    return;
  }
  const meta = host.meta();
  const fetcher = host.fetch ?? ((input, init) => fetch(input, init));
  const hooks = callWeightSyncHooks(c, { runId: meta.runId, fn: functionNamed(meta.spec.function), webhook: meta.spec.weightSyncWebhook, fetch: (u, init) => fetcher(u, init), log: host.log });
  host.waitUntil?.(hooks);
}

/** The isolate's rollout function `name`, null when none (or none registered). */
function functionNamed(name: string): RolloutFunction | null {
  try {
    return rolloutFunctions()[name] ?? null;
  } catch {
    return null;
  }
}

/**
 * One vote for the weight sync of the batch at `step` (spec §3.14) as the core's `syncVoteAnswered` event: `agreed`,
 * `refused` with the server's failure_reason, or `failed` with the error (a transport error, or the 500 of a server in
 * another mode). Never throws.
 */
export async function voteForSync(client: SwarmClient, swarm: string, step: number | null): Promise<SchedulerEvent> {
  try {
    const r = await client.agreeSyncWeight();
    return { type: "syncVoteAnswered", swarm, step, result: r.agreed ? "agreed" : "refused", reason: r.agreed ? "" : r.failureReason };
  } catch (err) {
    return { type: "syncVoteAnswered", swarm, step, result: "failed", reason: err instanceof Error ? err.message : String(err) };
  }
}

/** What the hooks need of the run. */
export interface HookDeps {
  runId: string;
  /** the run's rollout function (null when the isolate has none registered) */
  fn: RolloutFunction | null;
  webhook: string | undefined;
  /** the Worker's outbound fetch (allowed hosts only) */
  fetch: (input: string, init?: RequestInit) => Promise<Response>;
  log: RunLog;
}

/**
 * Calls the step's hooks (the function's `onWeightSync`, the webhook: POST JSON `{runId, step, metrics}`), each
 * bounded by {@link HOOK_TIMEOUT_MS}; failures are logged. Resolves when both are done or timed out; never throws.
 */
export async function callWeightSyncHooks(c: WeightSyncHook, deps: HookDeps): Promise<void> {
  const calls: Array<[string, () => Promise<unknown>]> = [];
  const onWeightSync = deps.fn?.onWeightSync;
  if (onWeightSync) calls.push(["onWeightSync", async () => onWeightSync.call(deps.fn, c.step, c.metrics)]);
  const url = deps.webhook;
  if (url) {
    calls.push(["weightSyncWebhook", async () => {
      const res = await deps.fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ runId: deps.runId, step: c.step, metrics: c.metrics }), signal: AbortSignal.timeout(HOOK_TIMEOUT_MS) });
      await res.body?.cancel().catch(() => undefined);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
    }]);
  }
  await Promise.all(calls.map(async ([name, call]) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const slow = new Promise<"slow">((resolve) => (timer = setTimeout(() => resolve("slow"), HOOK_TIMEOUT_MS)));
    try {
      const r = await Promise.race([call(), slow]);
      if (r === "slow") deps.log("warn", `${name} took over ${HOOK_TIMEOUT_MS / 1000} s; training goes on without it`, { step: c.step });
      else deps.log("info", `${name} called`, { step: c.step });
    } catch (err) {
      deps.log("warn", `${name} failed; training goes on`, { step: c.step, error: err instanceof Error ? err.message : String(err) });
    } finally {
      clearTimeout(timer);
    }
  }));
}
