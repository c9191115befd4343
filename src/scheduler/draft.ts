/**
 * @module scheduler/draft — the working copy one `decide` call edits: copy-on-write rows (the episode table and the
 * batches' landed episodes are persistent maps, so a write costs O(log n), never a copy of every row), the episode
 * index kept row by row (scheduler/episode-index), the set of changed rows (so the DO upserts only those), and a
 * command buffer that merges commands of one kind into one command.
 */
import type { AgreeSyncWeight, WeightSyncHook, ClosedAttempt, Decision, EpisodeAbort, EpisodeDispatch, EpisodeResolve, EpisodeSettle, LogMessage, SchedulerCommand, TopUpPlanRequest } from "./commands.ts";
import type { EventAck } from "../port/index.ts";
import { attentionAtMs, copyIndex, countRow, episodeIndex, exactEarliestMs, rememberIndex, type EpisodeIndex } from "./episode-index.ts";
import type { BatchRow, EpisodeRow, EpisodeTable, EvalTaskRow, LandedChange, RunRow, SchedulerState, WindowRow } from "./state.ts";
import type { RunSummary } from "./summary.ts";

/** A mutable view of the state during one `decide`; the input state is never mutated. */
export class Draft {
  readonly run: RunRow;
  /** the episode table as this decision left it so far (the base's until the first write) */
  private table: EpisodeTable;
  /** the table's index, kept up to date by every episode write */
  private readonly idx: EpisodeIndex;
  /** the records this decision wrote to (copied on the first write; the base's until then) */
  private readonly own: {
    steps: Record<string, WindowRow> | null;
    evalTasks: Record<string, EvalTaskRow> | null;
    batches: Record<string, BatchRow> | null;
  } = { steps: null, evalTasks: null, batches: null };
  /** `[...episodes.values()]`, kept until the next episode write (for the few passes that need every row) */
  private liveRows: readonly EpisodeRow[] | null = null;
  private readonly touched = { episodes: new Set<string>(), deleted: new Set<string>(), steps: new Set<string>(), evalTasks: new Set<string>(), batches: new Set<string>() };
  /** attempts closed on a lease expiry in this decision */
  private readonly closed: ClosedAttempt[] = [];
  /** landed-episode writes by `"{batchKey}\u0000{uuid}"` (the last one wins) */
  private readonly landed = new Map<string, LandedChange>();
  private readonly logs: LogMessage[] = [];
  private readonly aborts: EpisodeAbort[] = [];
  private readonly resolves: EpisodeResolve[] = [];
  private readonly settles: EpisodeSettle[] = [];
  private readonly dispatches: EpisodeDispatch[] = [];
  private poll: { swarms: string[]; withPool: string[]; plan?: TopUpPlanRequest } | null = null;
  private summary: RunSummary | null = null;
  private vote: AgreeSyncWeight | null = null;
  private hooks: WeightSyncHook[] = [];

  constructor(
    private readonly base: SchedulerState,
    /** the event's instant, epoch ms */
    readonly nowMs: number,
  ) {
    this.run = cloneRun(base.run);
    this.table = base.episodes;
    this.idx = copyIndex(episodeIndex(base.episodes));
  }

  /** The live episode rows by key (read-only: write with the methods below). */
  get episodes(): EpisodeTable {
    return this.table;
  }

  /** Counts per status and the attention bound of the live rows as they stand now (read-only). */
  get index(): Readonly<EpisodeIndex> {
    return this.idx;
  }

  /** The step rows by `String(windowIndex)` (read-only). */
  get steps(): Readonly<Record<string, WindowRow>> {
    return this.own.steps ?? this.base.steps;
  }

  /** The finished eval task rows by group key (read-only). */
  get evalTasks(): Readonly<Record<string, EvalTaskRow>> {
    return this.own.evalTasks ?? this.base.evalTasks;
  }

  /** The server batch rows by batch key (read-only). */
  get batches(): Readonly<Record<string, BatchRow>> {
    return this.own.batches ?? this.base.batches ?? {};
  }

  /**
   * Inserts or replaces a batch row (the caller passes a fresh object) and marks it changed. Its landed episodes
   * that differ from the stored ones are written too: only `changedUuids` are compared when given (a landing names
   * its one uuid), else every uuid of the old and the new row.
   */
  putBatch(row: BatchRow, changedUuids?: Iterable<string>): BatchRow {
    const old = this.batches[row.batchKey]?.episodes;
    if (old !== row.episodes) {
      const keys = changedUuids ?? new Set([...(old?.keys() ?? []), ...row.episodes.keys()]);
      for (const uuid of keys) {
        const before = old?.get(uuid);
        const after = row.episodes.get(uuid);
        if (before !== after) this.landed.set(`${row.batchKey}\u0000${uuid}`, { batchKey: row.batchKey, uuid, episode: after ?? null });
      }
    }
    (this.own.batches ??= { ...(this.base.batches ?? {}) })[row.batchKey] = row;
    this.touched.batches.add(row.batchKey);
    return row;
  }

  /** The live episode rows as they stand now: a snapshot, safe to iterate while writing. O(n): not for per-event paths. */
  rows(): readonly EpisodeRow[] {
    return (this.liveRows ??= [...this.table.values()]);
  }

  /** Replaces a row with a patched copy and marks it changed. @throws Error when the key is not live (a core bug). */
  patchEpisode(key: string, patch: Partial<EpisodeRow>): EpisodeRow {
    const row = this.table.get(key);
    if (!row) throw new Error(`scheduler: no live episode ${key}`);
    return this.putEpisode({ ...row, ...patch, updatedAtMs: this.nowMs });
  }

  /** Inserts or replaces a row (the caller passes a fresh object) and marks it changed. */
  putEpisode(row: EpisodeRow): EpisodeRow {
    const old = this.table.get(row.episodeKey);
    if (old) countRow(this.idx, old, -1);
    countRow(this.idx, row, 1);
    this.idx.earliestMs = Math.min(this.idx.earliestMs, attentionAtMs(row));
    this.table = this.table.set(row.episodeKey, row);
    this.liveRows = null;
    this.touched.episodes.add(row.episodeKey);
    this.touched.deleted.delete(row.episodeKey);
    return row;
  }

  /** Removes a live row; reported in `deletedEpisodeKeys` only if the base state had it (it is stored). */
  deleteEpisode(key: string): void {
    const old = this.table.get(key);
    if (!old) return;
    countRow(this.idx, old, -1);
    this.table = this.table.delete(key);
    this.liveRows = null;
    this.touched.episodes.delete(key);
    if (this.base.episodes.has(key)) this.touched.deleted.add(key);
  }

  /** Recomputes the attention bound exactly (after a pass that handled every row due by `nowMs`). O(n). */
  refreshEarliest(): void {
    this.idx.earliestMs = exactEarliestMs(this.table.values());
  }

  /** Replaces a step row with a patched copy. @throws Error when the window has no row (a core bug). */
  patchStep(windowIndex: number, patch: Partial<WindowRow>): WindowRow {
    const key = String(windowIndex);
    const row = this.steps[key];
    if (!row) throw new Error(`scheduler: no step row for window ${windowIndex}`);
    return this.putStep({ ...row, ...patch });
  }

  /** Inserts or replaces a step row and marks it changed. */
  putStep(row: WindowRow): WindowRow {
    const key = String(row.windowIndex);
    (this.own.steps ??= { ...this.base.steps })[key] = row;
    this.touched.steps.add(key);
    return row;
  }

  /** Inserts a finished eval task row and marks it changed. */
  putEvalTask(row: EvalTaskRow): void {
    (this.own.evalTasks ??= { ...this.base.evalTasks })[row.groupKey] = row;
    this.touched.evalTasks.add(row.groupKey);
  }

  /** Adds `by` to a counter of a `Record<string, number>` in the run row. */
  count(record: Record<string, number>, key: string, by = 1): void {
    record[key] = (record[key] ?? 0) + by;
  }

  /** Queues a `log` command. The other buffers below merge into one command of their kind at {@link done}. */
  log(level: LogMessage["level"], message: string, fields: LogMessage["fields"] = {}): void {
    this.logs.push({ type: "log", level, message, fields });
  }
  abort(item: EpisodeAbort): void {
    this.aborts.push(item);
  }
  resolve(item: EpisodeResolve): void {
    this.resolves.push(item);
  }
  settle(item: EpisodeSettle): void {
    this.settles.push(item);
  }
  dispatch(item: EpisodeDispatch): void {
    this.dispatches.push(item);
  }
  pollEngines(swarms: string[], withPool: string[] = [], plan?: TopUpPlanRequest): void {
    this.poll = { swarms, withPool, ...(plan ? { plan } : {}) };
  }
  /** Notes an attempt the core closes itself (no report will say so), before its row is patched. */
  closedAttempt(row: EpisodeRow, cause: string): void {
    this.closed.push({ row, cause, atMs: this.nowMs });
  }
  finishRun(summary: RunSummary): void {
    this.summary = summary;
  }
  /** Queues a weight-sync hook call (once per server step, scheduler/decide). */
  weightSyncHook(item: WeightSyncHook): void {
    this.hooks.push(item);
  }
  /** Queues the run's vote for the weight sync of the batch at `step` (agree modes; the last one of a decision wins). */
  agree(swarm: string, step: number | null): void {
    this.vote = { type: "agreeSyncWeight", swarm, step };
  }

  /** The state as it stands now (for status/summary computed mid-decision). */
  snapshot(): SchedulerState {
    return { run: this.run, episodes: this.episodes, steps: this.steps, evalTasks: this.evalTasks, batches: this.batches };
  }

  /** Freezes the result: state, commands in execution order, changed rows, ack. */
  done(ack: EventAck): Decision {
    const commands: SchedulerCommand[] = [...this.logs];
    if (this.aborts.length) commands.push({ type: "abortEpisodes", episodes: this.aborts });
    if (this.resolves.length) commands.push({ type: "resolveOutbox", episodes: this.resolves });
    if (this.settles.length) commands.push({ type: "settleEnds", episodes: this.settles });
    if (this.dispatches.length) commands.push({ type: "dispatchEpisodes", episodes: this.dispatches });
    if (this.poll) {
      commands.push({
        type: "pollEngineStatus", swarms: this.poll.swarms,
        ...(this.poll.withPool.length > 0 ? { withPool: this.poll.withPool } : {}), ...(this.poll.plan ? { plan: this.poll.plan } : {}),
      });
    }
    if (this.vote) commands.push(this.vote);
    commands.push(...this.hooks);
    if (this.summary) commands.push({ type: "finishRun", summary: this.summary });
    const runChanged = !sameData(this.run, this.base.run);
    const pick = <T>(record: Readonly<Record<string, T>>, keys: Set<string>) => [...keys].map((k) => record[k]).filter((r): r is T => r !== undefined);
    rememberIndex(this.table, this.idx); // an unchanged table keeps its counts; its bound may have been tightened
    return {
      state: runChanged || this.table !== this.base.episodes || this.touched.episodes.size || this.touched.deleted.size || this.touched.steps.size || this.touched.evalTasks.size || this.touched.batches.size
        ? this.snapshot()
        : this.base,
      commands,
      changes: {
        run: runChanged ? this.run : null,
        episodes: [...this.touched.episodes].map((k) => this.table.get(k)).filter((r): r is EpisodeRow => r !== undefined),
        deletedEpisodeKeys: [...this.touched.deleted],
        steps: pick(this.steps, this.touched.steps),
        evalTasks: pick(this.evalTasks, this.touched.evalTasks),
        batches: pick(this.batches, this.touched.batches),
        landed: [...this.landed.values()],
        ...(this.closed.length ? { closedAttempts: [...this.closed] } : {}),
      },
      ack,
    };
  }
}

/**
 * A deep copy of the run row whose `config` is shared, not copied: the configuration never changes after the run is
 * created, and copying it on every event was the largest fixed cost of `decide` (it runs on every RPC).
 */
function cloneRun(run: RunRow): RunRow {
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(run)) copy[key] = key === "config" ? value : cloneData(value);
  return copy as unknown as RunRow;
}

/** A deep copy of plain JSON data (objects, arrays, primitives): what the run row holds. */
function cloneData<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(cloneData) as T;
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) copy[key] = cloneData(item);
  return copy as T;
}

/** Deep equality of plain JSON data, in the sense of the stored row (a key holding `undefined` counts as absent). */
function sameData(a: unknown, b: unknown): boolean {
  if (a === b || (Number.isNaN(a) && Number.isNaN(b))) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const keys = Object.keys(ra).filter((k) => ra[k] !== undefined);
  if (keys.length !== Object.keys(rb).filter((k) => rb[k] !== undefined).length) return false;
  return keys.every((k) => sameData(ra[k], rb[k]));
}
