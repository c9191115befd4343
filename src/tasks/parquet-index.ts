/**
 * @module tasks/parquet-index — the Parquet side of tasks/dataset-index: a ByteSource as hyparquet's AsyncBuffer, the
 * index pass one row group at a time within its total time budget, and one task read alone from its entry.
 */
import { parquetMetadataAsync, parquetReadObjects, type AsyncBuffer, type FileMetaData } from "hyparquet";
import type { Task } from "../protocol/index.ts";
import type { ByteSource } from "./byte-source.ts";
import { DatasetChangedError, DatasetLoadError, DatasetSlowError, duplicateIdError, taskFromRow } from "./load.ts";
import { RowValueError } from "./values.ts";
import { ChunkWriter, rowDigest, type IndexEntry, type IndexLimits, type IndexResult, type IndexSink, type RowOptions } from "./dataset-index.ts";

/** A {@link ByteSource} as hyparquet's AsyncBuffer (every slice one ranged read of the indexed version). */
export function parquetFile(source: ByteSource, size: number, etag: string | null): AsyncBuffer {
  return {
    byteLength: size,
    async slice(start: number, end?: number): Promise<ArrayBuffer> {
      const bytes = await source.read(start, (end ?? size) - start, etag);
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
  };
}

/** hyparquet's errors (bad file, unsupported codec) as a DatasetLoadError naming the file. */
async function parquetCall<T>(where: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    if (err instanceof DatasetLoadError) throw err;
    throw new DatasetLoadError(`cannot read Parquet dataset ${where}: ${(err as Error).message}`);
  }
}

/** The file's footer (schema, row groups). @throws DatasetLoadError for a file that is not Parquet */
export function parquetMetadata(where: string, file: AsyncBuffer): Promise<FileMetaData> {
  return parquetCall(where, () => parquetMetadataAsync(file));
}

/**
 * The total time budget of an index pass (the caps table's `inlineIndexSeconds` or `indexBudgetSeconds`): each of its
 * reads already has its own bounds (first byte, idle); this bounds their sum.
 */
export interface IndexBudget {
  /** epoch ms (of `now`) past which the pass fails */
  deadlineAtMs: number;
  /** the budget in seconds, as the message names it */
  seconds: number;
  /** the setting that sets it (e.g. `AJET_INDEX_BUDGET_SECONDS`), named in the message */
  setting: string;
  /** the clock (default Date.now; tests drive it) */
  now?: () => number;
}

/**
 * `file` with every slice bounded by `budget`: a slice asked for past the deadline, or not answered by it, fails
 * with the DatasetSlowError of {@link parquetOverBudget} (the slice's read is then abandoned, its own bounds end it).
 */
function budgetedFile(where: string, file: AsyncBuffer, budget: IndexBudget): AsyncBuffer {
  const now = budget.now ?? Date.now;
  return {
    byteLength: file.byteLength,
    async slice(start: number, end?: number): Promise<ArrayBuffer> {
      const left = budget.deadlineAtMs - now();
      if (left <= 0) throw parquetOverBudget(where, budget);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(parquetOverBudget(where, budget)), left)));
      try {
        const bytes = await Promise.race([file.slice(start, end), late]);
        if (now() > budget.deadlineAtMs) throw parquetOverBudget(where, budget);
        return bytes;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** The error of a Parquet index pass past its budget: the file, the budget, its setting and the fix. */
function parquetOverBudget(where: string, budget: IndexBudget): DatasetSlowError {
  return new DatasetSlowError(
    `Parquet dataset ${where}: its index pass took longer than its budget of ${budget.seconds} s (${budget.setting}); ` +
      "serve the file from a faster host, or put it in R2 (r2://BUCKET/KEY)",
  );
}

/**
 * Indexes a Parquet file one row group at a time (memory: one decoded row group): every row is checked with the
 * kind's field map (BigInt columns become numbers when safe, BC-58); accepted rows get an entry with their row
 * number. Row numbers are the ids' index (`<name>:<split>:<row>`); messages call them "line" = row + 1.
 * @param budget the pass's total time budget (none: only each read's own bounds)
 * @throws DatasetLoadError for a file hyparquet cannot read, or more than `maxRows` accepted rows; DatasetSlowError
 *   when the pass runs past `budget` (naming the file, the budget and its setting)
 */
export async function indexParquet(where: string, given: AsyncBuffer, options: RowOptions, sink: IndexSink, limits: IndexLimits, budget?: IndexBudget): Promise<IndexResult> {
  const file = budget ? budgetedFile(where, given, budget) : given;
  const metadata = await parquetMetadata(where, file);
  const w = new ChunkWriter(sink, limits);
  let start = 0;
  for (const group of metadata.row_groups) {
    if (budget && (budget.now ?? Date.now)() > budget.deadlineAtMs) throw parquetOverBudget(where, budget);
    const end = start + Number(group.num_rows);
    if (end > start) {
      const rows = await parquetCall(where, () => parquetReadObjects({ file, metadata, rowStart: start, rowEnd: end }));
      rows.forEach((value, i) => {
        const row = start + i;
        try {
          const task = taskFromRow(value, { ...options, index: row });
          if (task.task_id.includes(":id=")) {
            const first = sink.claimId(task.task_id, row + 1);
            if (first !== undefined) throw duplicateIdError(task.task_id, first);
          }
          w.accept({ offset: row, length: 0, index: row, line: row + 1, digest: taskDigest(task) });
        } catch (err) {
          if (!(err instanceof RowValueError)) throw err;
          w.reject(row + 1, err.message);
        }
      });
    }
    start = end;
  }
  return w.result();
}

/**
 * Reads one indexed Parquet row as its task (hyparquet reads only the row group holding it, and with an offset
 * index only the pages that hold it).
 * @throws DatasetLoadError when the read fails or the row no longer maps
 */
export async function readParquetTask(where: string, file: AsyncBuffer, metadata: FileMetaData, entry: IndexEntry, options: RowOptions): Promise<Task> {
  const rows = await parquetCall(where, () => parquetReadObjects({ file, metadata, rowStart: entry.offset, rowEnd: entry.offset + 1, useOffsetIndex: true }));
  const row = rows[0];
  const replaced = "the file was replaced during the run: start a new run on the new file";
  if (!row) throw new DatasetChangedError(`Parquet dataset ${where} has no row ${entry.offset} any more; ${replaced}`);
  let task: Task;
  try {
    task = taskFromRow(row, { ...options, index: entry.index });
  } catch (err) {
    if (!(err instanceof RowValueError)) throw err;
    throw new DatasetChangedError(`Parquet dataset ${where} row ${entry.offset} no longer reads as at the start of the run (${err.message}); ${replaced}`);
  }
  if (entry.digest !== null && taskDigest(task) !== entry.digest) throw new DatasetChangedError(`Parquet dataset ${where} row ${entry.offset} is not the row the run indexed (its values differ); ${replaced}`);
  return task;
}

/** A Parquet row's digest: {@link rowDigest} of the task it maps to, as JSON (its values, not its encoding). */
function taskDigest(task: Task): number {
  return rowDigest(new TextEncoder().encode(JSON.stringify(task)));
}
