/**
 * @module scheduler/sync-vote — the run's vote for the weight sync in the two agree modes (spec §3.14, §7.3;
 * llm-routes §10).
 *
 * What a batch lacks in each method is counted in scheduler/collection-method.
 *
 * The vote (agree modes). The run — its Durable Object, not each invocation — is the client that agrees: once its
 * window is resolved (its groups full or dropped) and nothing of it is in flight, and the first server's engine collects
 * the batch holding its rewards, it sends one `/agree_sync_weight` (command `agreeSyncWeight`), and again every
 * {@link AGREE_RETRY_MS} after a refusal or an error (the Python client's loop), until it is agreed; an agreed vote holds
 * until the sync wipes it (spec §4.3). The server lists a client only after an end (or abort) in the current sync
 * window and drops it after 600 s without a claim or an LLM call: refused as "not in the active list" (it fell off, e.g.
 * after one LLM call longer than 600 s), the run opens one more group so an end puts it back, then votes again.
 * A run that stops in the all mode votes once before it leaves (nothing of it in flight): it is on the list if it
 * ended or aborted anything since the sync, and a listed client that never agrees would hold every other client's
 * sync until it ages out; a refusal then means it was not listed, so it holds no one either way.
 * Pure: time is the draft's `nowMs`.
 */
import type { Draft } from "./draft.ts";
import type { SyncVoteAnswered } from "./events.ts";
import { ENGINE, isNotInActiveList } from "../protocol/index.ts";
import { batchKeyOf, type BatchRow } from "./state.ts";
import { collectionMethod } from "./collection-method.ts";
import { topUpBatch } from "./task-groups.ts";

/** A refused or failed vote is sent again after this long (Python `AGREE_SYNC_WEIGHT_RETRY_DELAY`), ms. */
export const AGREE_RETRY_MS = 2_000;
/** A vote with no answer after this long is sent again (the request's own timeout is 10 s), ms. */
export const AGREE_ANSWER_MS = 15_000;
/** Groups a run opens to rejoin the active list, per batch, at most. */
export const MAX_REJOIN_GROUPS = 3;
/** A stopping run's leaving vote: votes sent before it leaves anyway (the server cannot be reached, or errs). */
const LEAVING_VOTES = 3;

/**
 * The run's window is resolved and nothing of it is in flight; the engine collects `batch`, which holds its rewards:
 * vote for its sync (again after {@link AGREE_RETRY_MS} when refused or failed; rejoin the active list when refused as
 * not listed).
 */
export function voteForSync(d: Draft, batch: BatchRow): void {
  const last = d.run.syncVote ?? null;
  const same = last !== null && last.batchKey === batch.batchKey && !last.leaving;
  if (same && last.answer === "agreed") return; // held by the server until the sync
  if (same && last.pending && d.nowMs - last.atMs < AGREE_ANSWER_MS) return;
  if (same && !last.pending && d.nowMs - last.atMs < AGREE_RETRY_MS) {
    wakeAt(d, last.atMs + AGREE_RETRY_MS);
    return;
  }
  // refused as not listed (fell off the list): one more group of ours ends in this window and puts the run back
  if (same && last.answer === "refused" && last.notListed && last.rejoinGroups < MAX_REJOIN_GROUPS && !last.pending) {
    const opened = topUpBatch(d, batch, 1);
    if (opened > 0) {
      d.run.syncVote = { ...last, rejoinGroups: last.rejoinGroups + opened, notListed: false, answer: null };
      d.log("warn", "the server no longer lists this run as an active client; one more group puts it back before it agrees", { batch: batch.batchKey });
      return;
    }
  }
  send(d, batch.batchKey, batch.globalStep, same ? last : null, false);
}

/**
 * A draining run in the all mode, nothing of it in flight: its leaving vote (so it never holds the others' sync).
 * @returns true while the run should wait for the vote's answer before it finishes
 */
export function leavingVote(d: Draft): boolean {
  if (collectionMethod(d) !== "rollout_until_all_clients_agree_sync_weight" || d.run.config.episodeType !== "train") return false;
  const view = d.run.engines[0];
  if (!view || (view.engineStatus !== ENGINE.ROLLING && view.engineStatus !== ENGINE.ROLLING_POST)) return false;
  const key = batchKeyOf(view.restarts, view.globalStep);
  const last = d.run.syncVote ?? null;
  const same = last !== null && last.batchKey === key;
  if (same && last.answer === "agreed") return false;
  if (same && last.leaving && (last.sent >= LEAVING_VOTES || last.answer === "refused")) return false; // not listed: holds no one
  if (same && last.pending && d.nowMs - last.atMs < AGREE_ANSWER_MS) return true;
  if (same && !last.pending && d.nowMs - last.atMs < AGREE_RETRY_MS) {
    wakeAt(d, last.atMs + AGREE_RETRY_MS);
    return true;
  }
  send(d, key, view.globalStep, same ? last : null, true);
  return true;
}

/** The answer to the run's vote: recorded on the vote it answers (an answer for another step is stale). */
export function onSyncVoteAnswered(d: Draft, e: SyncVoteAnswered): void {
  const last = d.run.syncVote;
  if (!last?.pending || last.step !== e.step || e.swarm !== d.run.config.swarms[0]) return;
  const notListed = e.result === "refused" && isNotInActiveList(e.reason);
  d.run.syncVote = { ...last, pending: false, answer: e.result, atMs: d.nowMs, notListed };
  if (e.result === "agreed") {
    d.run.syncVotesAgreed = (d.run.syncVotesAgreed ?? 0) + 1;
    d.log("info", last.leaving ? "stopping: voted for the weight sync so the other clients are not held" : "voted for the weight sync of the batch holding this run's window", { batch: last.batchKey, votes: last.sent });
  } else if (last.sent === 1 || last.sent % 15 === 0) {
    d.log("warn", `the weight-sync vote was ${e.result}; voting again every ${AGREE_RETRY_MS / 1000} s`, { batch: last.batchKey, reason: e.reason.slice(0, 300) });
  }
}

function send(d: Draft, batchKey: string, step: number | null, last: NonNullable<Draft["run"]["syncVote"]> | null, leaving: boolean): void {
  d.agree(d.run.config.swarms[0]!, step);
  d.run.syncVote = {
    batchKey, step, atMs: d.nowMs, pending: true, answer: last?.answer ?? null, sent: (last?.sent ?? 0) + 1,
    rejoinGroups: last?.rejoinGroups ?? 0, notListed: false, ...(leaving ? { leaving: true } : {}),
  };
  wakeAt(d, d.nowMs + AGREE_ANSWER_MS);
}

/** The run's next poll (its wake) no later than `atMs`. */
function wakeAt(d: Draft, atMs: number): void {
  if (d.run.nextPollAtMs === null || d.run.nextPollAtMs > atMs) d.run.nextPollAtMs = atMs;
}
