/**
 * @module scheduler/server-asks — what the run has asked its first server and awaits an answer to: a top-up ask
 * (scheduler/top-up-ask) and a weight-sync vote (agree modes, scheduler/sync-vote). Kept on the run row. Types only.
 */

/** The run's vote for one batch's weight sync (agree modes, spec §3.14). */
export interface SyncVote {
  /** the batch voted for (`batchKeyOf` of the first server's engine epoch and step) */
  batchKey: string;
  step: number | null;
  /** when the last vote was sent or answered, epoch ms */
  atMs: number;
  /** a vote is out and not answered yet */
  pending: boolean;
  /** the last answer: agreed (the server holds the vote until the sync), refused or failed (sent again), null before one */
  answer: "agreed" | "refused" | "failed" | null;
  /** votes sent for this batch */
  sent: number;
  /** groups opened to rejoin the server's active list after a "not in the active list" refusal */
  rejoinGroups: number;
  /** the last refusal said the run is not in the server's active list */
  notListed?: boolean;
  /** a draining run's leaving vote (it holds no one once answered) */
  leaving?: boolean;
}

/** A top-up ask: the batch's step, the groups asked, when, and whether it went out / was answered. */
export interface TopUpAsk {
  step: number | null;
  groups: number;
  askedAtMs: number;
  sent: boolean;
  /** the groups granted, once answered */
  granted: number | null;
  /** asked while the run had windows left (the object refuses those while another run shares the server); absent: no */
  midRun?: boolean;
}
