/**
 * @module scheduler/batch-rows — the server batch rows of the core's state (scheduler/batches owns what they mean):
 * a batch, the episodes that landed in it, how they are stored, and the batch keys. Re-exported by scheduler/state.
 */
import type { Map as ImmutableMap } from "immutable";

/** A batch row as stored: its landed episodes are rows of their own ({@link LandedRow}); older rows carry them inline. */
export type StoredBatchRow = Omit<BatchRow, "episodes"> & { episodes?: Readonly<Record<string, LandedEpisode>> };

/** One landed episode as stored (key: batch key and server episode uuid). */
export interface LandedRow {
  batchKey: string;
  uuid: string;
  episode: LandedEpisode;
}

/** A write of one landed episode: upsert it, or delete it (`episode` null). */
export interface LandedChange {
  batchKey: string;
  uuid: string;
  episode: LandedEpisode | null;
}

/** The batch row to store: without its landed episodes (those are written as {@link LandedChange}s). */
export function storedBatchRow(row: BatchRow): StoredBatchRow {
  const { episodes: _episodes, ...rest } = row;
  return rest;
}

/** What a server batch holds of this run: one accepted train episode (kept until the batch closes or is wiped). */
export interface LandedEpisode {
  episodeKey: string;
  groupKey: string;
  source: string;
  taskIndex: number;
  epoch: number;
  windowIndex: number;
  /** re-run generation of its group (0 = first run) */
  rerun: number;
  reward: number;
  /** seen in the server's pool information (`completed_tasks_details`) for this batch */
  confirmed: boolean;
  /**
   * another server of the run wiped this episode (a multi-swarm function's claim there), so it runs again: its
   * reward here still sits in this batch, but it is neither counted nor re-run a second time
   */
  rerunElsewhere?: boolean;
}

/** open: collecting (not yet trained); closed: trained (the engine moved past it); wiped: gone before training. */
export type BatchState = "open" | "closed" | "wiped";

/**
 * One server batch (one training step of one engine epoch) as this run knows it: which of its accepted episodes
 * landed there, what the pool information says of it, and whether the server trained or wiped it.
 */
export interface BatchRow {
  /**
   * `"{engineEpoch}:{globalStep}"` on the run's first server, `"{server}@{engineEpoch}:{globalStep}"` on another
   * (`"…:?"` when the step is unknown)
   */
  batchKey: string;
  /** the run-spec swarm name of its server; absent for the run's first server */
  server?: string;
  /** its server's restart count: a restart wipes every batch (spec §4.3), so a step number names one batch only within an epoch */
  engineEpoch: number;
  globalStep: number | null;
  /** its server's ROLLING edges when the batch was first seen (closes a batch whose step is unknown) */
  openedAtRollingEdges: number;
  state: BatchState;
  /** server episode uuid → what landed; emptied once the batch closed or was wiped (the counts stay). Stored as one row per episode */
  episodes: ImmutableMap<string, LandedEpisode>;
  /** accepted episodes that landed here, over its life (wiped ones included) */
  episodesLanded: number;
  rewardSum: number;
  /** the pool information named other clients' episodes in this batch (exact per-batch mixing cannot hold) */
  foreignEpisodes: number;
  /** the pool's `completed_tasks` / `completed_task_target` for this batch, when seen */
  poolCompletedTasks: number | null;
  poolTaskTarget: number | null;
  /** complete tasks of other clients in the batch when the pool was read (its complete tasks less ours it listed) */
  poolForeignTasks?: number;
  /** of those, tasks another client is serving now (an episode claimed, not ended) at that read; absent: not read */
  poolForeignRunning?: number;
  /** other clients' complete tasks whose rewards are not all equal, from the pool's per-task rewards (non-dummy method) */
  poolForeignNonDummyTasks?: number;
  /** the last engine status seen while this batch was the engine's (ROLLING, ROLLING_POST or WEIGHT_SYNCING) */
  lastStatus: string;
  firstLandedAtMs: number;
  closedAtMs: number | null;
  wipedAtMs: number | null;
  /** why the batch was wiped (what the core saw: an engine restart or stop, the pool no longer listing it); wiped only */
  wipedWhy?: string;
}

/**
 * `"{engineEpoch}:{globalStep}"` for the run's first server, `"{server}@{engineEpoch}:{globalStep}"` for another
 * (swarm names never hold "@"); `"…:?"` when the step is unknown.
 * @param server the run-spec swarm name of a server other than the first; omit (or null) for the first
 */
export function batchKeyOf(engineEpoch: number, globalStep: number | null, server: string | null = null): string {
  return `${server === null ? "" : `${server}@`}${engineEpoch}:${globalStep ?? "?"}`;
}

/** The global step of a batch key (null for `"…:?"`). */
export function stepOfBatchKey(key: string): number | null {
  const step = Number(key.slice(key.lastIndexOf(":") + 1));
  return Number.isInteger(step) ? step : null;
}

/** The server of a batch key: null for the run's first server, else its run-spec swarm name. */
export function serverOfBatchKey(key: string): string | null {
  const at = key.indexOf("@");
  return at < 0 ? null : key.slice(0, at);
}
