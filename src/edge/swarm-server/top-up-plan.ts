/**
 * @module edge/swarm-server/top-up-plan — one plan per server batch across the runs of this Worker (issue 25). A run
 * whose last window is resolved while the batch the engine collects still lacks tasks asks to top it up; the swarm
 * server's object, which sees every run on that server, decides here:
 *  - every run tells, with each status pull, how many of its task groups on this server are not claimed yet
 *    (`pendingGroups`: queued or dispatched, so not in the pool's running episodes either); those will land in the
 *    batch being collected, so they count as filling it;
 *  - a batch is topped up by at most one live reservation: while the holder's top-up groups are not claimed yet (its
 *    pending groups > 0) or within {@link TOP_UP_HOLD_MS} of the grant, another run's ask gets 0 and waits for the
 *    batch to close (or for the reservation to be spent: its groups then show as running in the pool, which the next
 *    asker subtracts);
 *  - a grant is the ask (the asker's own count of missing tasks, from the pool: complete tasks and other clients'
 *    running claims) less every other run's pending groups, never below 0;
 *  - a mid-run ask (the asker has windows left) gets 0 while another run of this Worker is subscribed to the server:
 *    the asker's pool read can be older than the other's landings, so the batch may not lack what it counts; its next
 *    window fills the batch instead (scheduler/decide `openWork`), which needs no grant and cannot overfill it.
 * Bound: the groups granted for one batch never exceed what the pool and the other runs' pending groups show missing
 * when the grant is made; a run additionally caps its top-ups at one batch's worth over the whole run, plus one more as
 * a finishing batch's last feeder (scheduler/top-up-ask `topUpRoom`), which is the bound that holds for runs on other
 * Workers, seen only through the pool. Pure: time is `nowMs`.
 */
import { ENGINE } from "../../protocol/index.ts";

/** The object's storage key of its runs' top-up plans. */
export const PLANS_KEY = "topUpPlans";
/** A reservation stays live at least this long after its grant (the holder's next pull reports its pending groups), ms. */
export const TOP_UP_HOLD_MS = 10_000;
/** A run's pending groups count only while it pulls; older reports are dropped, ms. */
export const PENDING_TTL_MS = 30_000;

/** What one server's object keeps for its runs' top-ups (stored under one key). */
export interface TopUpPlans {
  /** the batch the reservation is for: `${restarts}:${globalStep}` of the object's last observation */
  batch: string | null;
  holder: { runId: string; groups: number; atMs: number } | null;
  /** each run's groups on this server not claimed yet, with when it said so */
  pending: Record<string, { groups: number; atMs: number }>;
}

/** What a run sends with its pull: its unclaimed groups and, when it wants to top up, its ask. */
export interface TopUpPlanInput {
  /** groups of the run on this server with no claimed episode yet */
  pendingGroups: number;
  /**
   * the run's ask: the batch (engine step) it wants to top up, the groups it counts missing, and whether the run still
   * has windows to open (`midRun`; absent = false: its last window is resolved)
   */
  ask?: { step: number | null; groups: number; midRun?: boolean };
}

/** The answer to an ask: groups the run may open for the batch at `step` (0: wait for the batch to close). */
export interface TopUpGrant {
  step: number | null;
  groups: number;
}

/** No plans yet. */
export function emptyPlans(): TopUpPlans {
  return { batch: null, holder: null, pending: {} };
}

/**
 * Applies one run's pull to the plans and answers its ask (if any).
 * @param seen the engine as the object last saw it (after the pull's own poll)
 * @param nowMs epoch ms
 * @param subscribed the runs subscribed to this server, by run id (the asker's may be among them); one counts as
 *   active while it pulled within {@link PENDING_TTL_MS} and can train here
 * @returns the new plans, and the grant when the run asked
 */
export function planTopUp(
  plans: TopUpPlans,
  runId: string,
  input: TopUpPlanInput,
  seen: { engineStatus: string; globalStep: number | null; restarts: number },
  nowMs: number,
  subscribed: Readonly<Record<string, { heardAtMs: number; failed: string | null }>> = {},
): { plans: TopUpPlans; grant?: TopUpGrant } {
  const pending: TopUpPlans["pending"] = {};
  for (const [id, p] of Object.entries(plans.pending)) if (id !== runId && nowMs - p.atMs < PENDING_TTL_MS) pending[id] = p;
  if (input.pendingGroups > 0) pending[runId] = { groups: input.pendingGroups, atMs: nowMs };
  const batch = `${seen.restarts}:${seen.globalStep}`;
  let holder = plans.batch === batch ? plans.holder : null;
  const next = (): TopUpPlans => ({ batch, holder, pending });
  if (!input.ask) return { plans: next() };
  const refuse = { plans: next(), grant: { step: input.ask.step, groups: 0 } };
  if (seen.engineStatus !== ENGINE.ROLLING || seen.globalStep === null || input.ask.step !== seen.globalStep) return refuse;
  const othersActive = Object.entries(subscribed).some(([id, s]) => id !== runId && s.failed === null && nowMs - s.heardAtMs < PENDING_TTL_MS);
  if (input.ask.midRun === true && othersActive) return refuse;
  if (holder && holder.runId !== runId && (nowMs - holder.atMs < TOP_UP_HOLD_MS || (pending[holder.runId]?.groups ?? 0) > 0)) return refuse;
  const others = Object.entries(pending).reduce((n, [id, p]) => (id === runId ? n : n + p.groups), 0);
  const groups = Math.max(0, Math.floor(input.ask.groups) - others);
  if (groups > 0) holder = { runId, groups, atMs: nowMs };
  return { plans: next(), grant: { step: input.ask.step, groups } };
}

/** A run left the server: its pending groups and any reservation it holds go. */
export function leavePlans(plans: TopUpPlans, runId: string): TopUpPlans {
  const { [runId]: _gone, ...pending } = plans.pending;
  return { ...plans, holder: plans.holder?.runId === runId ? null : plans.holder, pending };
}
