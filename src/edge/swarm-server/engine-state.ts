/**
 * @module edge/swarm-server/engine-state — the words of a swarm server's object and its pure core
 * (edge/swarm-server/engine-watch.ts): the state it keeps, the commands the core hands the object, the engine statuses
 * that mean "down" and "running", and the message a run with other batch settings fails with. Types and constants.
 */
import { ENGINE } from "../../protocol/index.ts";
import type { EngineSubscription } from "./engine-note.ts";

/** Per run, what the object remembers (the subscription without its headers: those are kept in memory only). */
export interface Subscriber extends Omit<EngineSubscription, "headers"> {
  subscribedAtMs: number;
  /** the engine was seen ROLLING while this run was subscribed (then an OFFLINE is not ours to restart) */
  sawRolling: boolean;
  /** set once: the run cannot train here */
  failed: string | null;
  /** `expectEdge` was called: quick polls until this instant */
  expectEdgeUntilMs: number | null;
  /** the run's last subscribe (its heartbeat), epoch ms */
  heardAtMs: number;
}

/** The engine as last seen. Instants are epoch ms. */
export interface Seen {
  engineStatus: string;
  globalStep: number | null;
  seenAtMs: number | null;
  changedAtMs: number | null;
  /** restarts this object has seen (status down after up, or `global_step` back while running) */
  restarts: number;
  /** the last poll's connection error, null when it answered */
  lastError: string | null;
  /** when OFFLINE followed a running status this object did not cause */
  stoppedElsewhereAtMs: number | null;
  /** when the status (not the step) last changed (absent in state stored before it existed) */
  statusSinceMs?: number | null;
  /** how long each running status lasted the last time it ended, ms, as the polls saw it: the watcher's pace (edge/swarm-server/swarm-watch.ts) */
  dwellMs?: Record<string, number>;
}

/** The bootstrap this object runs (at most one at a time): idle → starting (sync + start sent) → booting → idle. */
export interface Boot {
  phase: "idle" | "starting" | "booting";
  byRunId: string | null;
  sinceMs: number | null;
  /** failed attempts in a row (a race with another client's start is not one) */
  failures: number;
  lastError: string | null;
}

/** Batch settings the server runs with: from pool information, or the config this object synced and started. */
export interface Batching {
  batchSize: number;
  numRepeat: number;
  source: "pool" | "synced";
}

/** Everything the object keeps (a few small keys of its storage). */
export interface WatchState {
  /** the server's normalised URL, set by the first subscribe */
  url: string | null;
  subs: Record<string, Subscriber>;
  seen: Seen;
  boot: Boot;
  batching: Batching | null;
  /** the last run that asked for `stopWhenDone` left: the engine is stopped at the next step unless a run came */
  stopPending: { byRunId: string; atMs: number } | null;
  /** this object's `/stop_engine` is under way since (epoch ms): an OFFLINE seen meanwhile is its own */
  stoppingSinceMs: number | null;
  /**
   * runs that left (finished), by when (epoch ms), kept for the subscriber TTL: a subscribe of theirs that arrives
   * late (sent before they finished) never makes them a run of the server again (it would hold the watcher, cancel a
   * `stopWhenDone` stop, or start the engine anew)
   */
  left: Record<string, number>;
}

/** What the core asks the object to do. */
export type WatchCommand =
  /** one status poll (the object polls single flight), then `polled` */
  | { type: "poll" }
  /** the pool information for the batch settings, then `poolRead` */
  | { type: "readPool" }
  /** `/sync_train_config` with the starter's job, then `/start_engine`, then `bootAnswered` */
  | { type: "startEngine"; byRunId: string; yaml: string; batchSize: number; numRepeat: number }
  /** `/stop_engine`, then `engineStopped` */
  | { type: "stopEngine"; byRunId: string }
  /** the alarm at `atMs`: always (`set`), only when none is armed (`ifNone`), or when none is armed sooner (`ifLater`) */
  | { type: "alarm"; atMs: number; mode: "set" | "ifNone" | "ifLater" }
  | { type: "log"; level: "info" | "warn" | "error"; message: string; fields: Record<string, unknown> };

/** Statuses of an engine that is not running (a restart goes through them). */
export const DOWN: ReadonlySet<string> = new Set<string>([ENGINE.OFFLINE, ENGINE.BOOTING]);
const RUNNING: ReadonlySet<string> = new Set<string>([ENGINE.ROLLING, ENGINE.ROLLING_POST, ENGINE.WEIGHT_SYNCING, ENGINE.WEIGHT_EXPORTING]);

/** True for the statuses of a running engine (ROLLING and the training statuses between two ROLLINGs). */
export function isRunning(engineStatus: string): boolean {
  return RUNNING.has(engineStatus);
}

/** No bootstrap. */
export const INITIAL_BOOT: Readonly<Boot> = { phase: "idle", byRunId: null, sinceMs: null, failures: 0, lastError: null };

/** The mismatch message a run fails with: both values, where they come from, and the fix. */
export function batchMismatchMessage(url: string, server: Batching, run: { batchSize: number; numRepeat: number }): string {
  const where = server.source === "pool" ? "its pool information (completed_task_target, task_expected_num_repeat)" : "the config synced to it";
  return (
    `the swarm server ${url} already runs an engine with batch size ${server.batchSize} and num_repeat ${server.numRepeat} (${where}), ` +
    `but this run has batchSize ${run.batchSize} and numRepeat ${run.numRepeat}: its batch windows could never close. ` +
    `Create the run with batchSize ${server.batchSize} and numRepeat ${server.numRepeat}, or stop that engine (POST /stop_engine on the server) so this run syncs its own config`
  );
}
