/**
 * @module scheduler/top-up-ask — a run's side of one plan per server batch (issue 25). Several runs can feed the batch
 * the first server's engine collects; each tops up only with the server object's grant (edge/swarm-server/top-up-plan),
 * which sees every run of this Worker on that server. The run:
 *  - mid-run, never tops up a batch other clients feed (other runs, other Workers, trainers: the pool shows their tasks):
 *    its next window fills that batch (the window no longer lines up with one step, which sharing makes true anyway);
 *    a mid-run ask the object refuses (another run of this Worker is active on that server: {@link isMidRunRefused})
 *    is not asked again; the next window fills the batch the same way;
 *  - tops up at most one batch's worth (`batchSize` groups) over the whole run, whatever the grants: the bound that
 *    holds for runs the object cannot see (other Workers, seen only through the pool's complete tasks and running
 *    claims). Counted per run, not per window: a mid-run top-up (the batch looked unshared on a pool read older than
 *    the others' landings) followed by the last window's would otherwise add two batches' worth. Mid-run, with that
 *    room used up, the next window fills the batch (scheduler/decide `openWork`);
 *  - once its last window is resolved, tops up one more batch's worth at most when its room is used up and the batch
 *    has no other feeder left: the last pool read shows no other client serving a task of it, and the object grants
 *    it (no other run of this Worker has unclaimed groups or a live reservation there). The other runs left,
 *    finished or stopped, so nobody else will fill it: without this the run would report its rewards there untrained
 *    after {@link TOP_UP_STARVED_MS} and the server would keep them in a batch that never trains. No one else adds
 *    to such a batch, so this top-up is the batch's last (a client arriving later overflows at most its own groups);
 *  - asks with its next status pull (`PollEngineStatus.plan`), at most once per {@link TOP_UP_RETRY_MS}, and opens the
 *    groups granted (never more than the batch still lacks by its own count) when the answer comes;
 *  - tells with each pull how many of its groups are not claimed yet (they fill the batch for the others' asks), as
 *    long as it has any or last told some.
 * Pure: time is the draft's `nowMs`.
 */
import type { Draft } from "./draft.ts";
import type { TopUpPlanRequest } from "./commands.ts";
import type { EngineStatusSeen } from "./events.ts";
import { currentOpenBatch, groupsNeeded } from "./batch-needs.ts";
import { topUpBatch } from "./task-groups.ts";
import type { BatchRow } from "./state.ts";
import { collectionMethod } from "./collection-method.ts";

/** An unanswered or refused ask is asked again after this long, ms. */
export const TOP_UP_RETRY_MS = 2_000;
/**
 * A finishing run whose window's top-up room is used up waits this long for other clients to fill its batch, then
 * finishes and reports those rewards untrained (never a run that waits forever), ms.
 */
export const TOP_UP_STARVED_MS = 120_000;

/** Other clients' tasks are in the batch (complete, or with a claim running): a batch several clients feed. */
export function isSharedBatch(batch: BatchRow): boolean {
  return batch.foreignEpisodes > 0 || (batch.poolForeignTasks ?? 0) > 0;
}

/**
 * The batch's last feeder is this run: the pool (read while the batch was the engine's) shows no other client
 * serving a task of it now. False before a pool read with per-task details.
 */
export function isLastFeeder(batch: BatchRow): boolean {
  return batch.poolForeignRunning === 0;
}

/**
 * Groups the run may still top up in `batch`: one batch's worth over the run (every window's top-ups count); once that
 * is used and the run is finishing (its last window resolved), one more batch's worth for a batch it is the last
 * feeder of ({@link isLastFeeder}). The non-dummy method: a batch's worth per ask, without end.
 */
export function topUpRoom(d: Draft, batch: BatchRow): number {
  if (d.run.windowsOpened <= 0) return 0;
  const { batchSize } = d.run.config;
  // non-dummy method: groups whose repeats share one reward never count, so the run supplies until the batch closes
  if (collectionMethod(d) === "rollout_until_finish_enough_non_dummy_tasks") return batchSize;
  const used = d.run.totals.groupsToppedUp ?? 0;
  if (used < batchSize) return batchSize - used;
  return d.run.phase === "finishing" && isLastFeeder(batch) ? Math.max(0, 2 * batchSize - used) : 0;
}

/**
 * The run wants `need` more groups in `batch` (nothing of it in flight): asks its server's object with the next pull
 * (made now), unless an ask is awaited or was refused less than {@link TOP_UP_RETRY_MS} ago, or the run's top-up
 * room is used up (then it waits for the batch to close by the others' episodes).
 * @param midRun the run still has windows to open: the object refuses such an ask while another run shares the server
 *   ({@link isMidRunRefused}), and the run's next window fills the batch instead
 */
export function askTopUp(d: Draft, batch: BatchRow, need: number, midRun: boolean): void {
  const room = topUpRoom(d, batch);
  const last = d.run.topUpAsk ?? null;
  if (room <= 0) {
    if (last?.granted !== -1 || last.step !== batch.globalStep) {
      d.run.topUpAsk = { step: batch.globalStep, groups: 0, askedAtMs: d.nowMs, sent: true, granted: -1 };
      d.log("warn", "the batch lacks tasks but this run already topped up all it may: waiting for other clients to fill it", { batch: batch.batchKey, need, otherClientsServing: batch.poolForeignRunning ?? null });
    }
    return;
  }
  if (last && d.nowMs - last.askedAtMs < TOP_UP_RETRY_MS) return;
  d.run.topUpAsk = { step: batch.globalStep, groups: Math.min(need, room), askedAtMs: d.nowMs, sent: false, granted: null, ...(midRun ? { midRun } : {}) };
  if (d.run.nextPollAtMs === null || d.run.nextPollAtMs > d.nowMs) d.run.nextPollAtMs = d.nowMs;
}

/**
 * The run's mid-run ask for `batch` was answered 0 (another run of this Worker shares the server, or holds the batch's
 * reservation): the run opens its next window, which fills the batch, instead of asking again.
 */
export function isMidRunRefused(d: Draft, batch: BatchRow): boolean {
  const ask = d.run.topUpAsk;
  return ask?.midRun === true && ask.granted === 0 && ask.step === batch.globalStep;
}

/** The finishing run's top-up room was used up {@link TOP_UP_STARVED_MS} ago and its batch still lacks tasks. */
export function isTopUpStarved(d: Draft): boolean {
  const ask = d.run.topUpAsk;
  if (ask?.granted !== -1 || d.nowMs - ask.askedAtMs < TOP_UP_STARVED_MS) return false;
  const batch = currentOpenBatch(d);
  return batch !== undefined && batch.globalStep === ask.step && groupsNeeded(d, batch) > 0;
}

/** The run's part of the plan for the next pull of its first server: its unclaimed groups, and its ask if not sent. */
export function planRequest(d: Draft): TopUpPlanRequest | undefined {
  if (d.run.config.episodeType !== "train") return undefined;
  const groups = new Set<string>();
  for (const r of d.rows()) if (r.status === "queued" || r.status === "dispatched") groups.add(r.groupKey);
  const ask = d.run.topUpAsk;
  const sending = ask && !ask.sent && ask.granted === null ? ask : null;
  if (sending) d.run.topUpAsk = { ...sending, sent: true };
  // nothing to tell: no ask, no unclaimed groups, and the object already knows of none
  if (groups.size === 0 && !sending && !d.run.pendingTold) return undefined;
  d.run.pendingTold = groups.size;
  const told = sending ? { step: sending.step, groups: sending.groups, ...(sending.midRun ? { midRun: true } : {}) } : null;
  return { swarm: d.run.config.swarms[0]!, pendingGroups: groups.size, ...(told ? { ask: told } : {}) };
}

/**
 * The object's answer (on the first server's observation, after its batches were observed): the groups granted are
 * opened in the batch the engine collects, if it is still the one asked about, nothing of the run is in flight, and
 * the batch still lacks them; a grant of 0 means another run holds the batch's reservation or fills it.
 */
export function onTopUpGrant(d: Draft, e: EngineStatusSeen): void {
  const ask = d.run.topUpAsk;
  const grant = e.topUpGrant;
  if (!grant || !ask || ask.granted !== null || ask.step !== grant.step) return;
  d.run.topUpAsk = { ...ask, granted: grant.groups };
  if (grant.groups <= 0 || d.episodes.size > 0 || (d.run.phase !== "running" && d.run.phase !== "finishing")) return;
  const batch = currentOpenBatch(d);
  if (!batch || batch.globalStep !== grant.step) return;
  const n = Math.min(grant.groups, groupsNeeded(d, batch), topUpRoom(d, batch));
  if (n > 0) topUpBatch(d, batch, n);
}
