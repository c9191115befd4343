/**
 * @module tasks/load — rows → `Task`s with stable ids and a load report (spec §6.1, BC-10, BC-30, BC-54, BC-58).
 * Platform-free: works on text or objects; the URL and file readers feed these.
 */
import { z } from "zod";
import type { Task } from "../protocol/index.ts";
import { DatasetKind, FIELD_MAPS } from "./field-maps.ts";
import { parseJsonlRows } from "./jsonl.ts";
import type { JsonlRow, RejectedRow } from "./jsonl.ts";
import { DEFAULT_SPLIT, ownTaskId, readOwnTaskId, rowTaskId, TaskIdPart } from "./task-id.ts";
import { RowValueError } from "./values.ts";

/** How to read one dataset: its name (the id namespace), kind (field map) and split. */
export const LoadOptions = z.object({
  name: TaskIdPart,
  kind: DatasetKind,
  split: TaskIdPart.default(DEFAULT_SPLIT),
  /** throw a DatasetLoadError when any row is rejected, instead of only reporting it */
  strict: z.boolean().default(false),
});
export type LoadOptions = z.input<typeof LoadOptions>;

/** What a load did: how many tasks came out, and every refused row with its 1-based line and reason. */
export interface LoadReport {
  name: string;
  split: string;
  accepted: number;
  rejected: RejectedRow[];
}

/** Tasks (in file order) plus the report. */
export interface LoadResult {
  tasks: Task[];
  report: LoadReport;
}

/** A dataset that cannot be read (bad options, unreachable source, or rejected rows in strict mode). */
export class DatasetLoadError extends Error {
  constructor(
    message: string,
    readonly report?: LoadReport,
  ) {
    super(message);
    this.name = "DatasetLoadError";
  }
}

/**
 * A dataset file that is no longer the one the run indexed: its validator differs (HTTP 412, an R2 etag), a row no
 * longer reads as a task, or a row's bytes no longer have the digest kept at index time. A run that meets it a
 * bounded number of times fails (edge/run/command-runner), it never retries for ever.
 */
export class DatasetChangedError extends DatasetLoadError {
  constructor(message: string) {
    super(message);
    this.name = "DatasetChangedError";
  }
}

/**
 * A dataset host that was too slow for a bound of the read (no headers within the first-byte bound, no byte for the
 * idle bound, under the least rate, or past the pass's time budget). A slow host at the inline index pass of `POST
 * /runs` moves the run to the background pass (edge/run/run-indexing); there it fails the run.
 */
export class DatasetSlowError extends DatasetLoadError {
  constructor(message: string) {
    super(message);
    this.name = "DatasetSlowError";
  }
}

/** An http(s) dataset file served without Range support: it can be read only by copying it whole (into R2). */
export class DatasetNoRangeError extends DatasetLoadError {
  constructor(message: string) {
    super(message);
    this.name = "DatasetNoRangeError";
  }
}

/** Parses load options. @throws DatasetLoadError naming the field and the fix. */
export function parseLoadOptions(options: LoadOptions): z.output<typeof LoadOptions> {
  const parsed = LoadOptions.safeParse(options);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new DatasetLoadError(`invalid dataset option \`${issue.path.join(".")}\`: ${issue.message}`);
}

/** The first `maxLines` refused rows as `line 7: reason; line 9: reason; … 4 more` (`""` when none). */
export function formatRejectedRows(rejected: readonly RejectedRow[], maxLines = 5): string {
  const shown = rejected.slice(0, maxLines).map((r) => `line ${r.line}: ${r.reason}`).join("; ");
  return rejected.length > maxLines ? `${shown}; … ${rejected.length - maxLines} more` : shown;
}

/** One line of a report, e.g. `gsm8k:test: 1318 accepted, 1 rejected (line 7: no gold answer …)`. */
export function formatLoadReport(report: LoadReport, maxLines = 5): string {
  const detail = report.rejected.length ? ` (${formatRejectedRows(report.rejected, maxLines)})` : "";
  return `${report.name}:${report.split}: ${report.accepted} accepted, ${report.rejected.length} rejected${detail}`;
}

/**
 * Maps parsed rows to tasks: the kind's field map, then the id (own `task_id` or row index). A second row with
 * the same own `task_id` is rejected (two different tasks must never share a task group, BC-30).
 * @param early rows already rejected by the caller (e.g. invalid JSON), merged into the report by line.
 * @throws DatasetLoadError in strict mode when anything was rejected, or for invalid options.
 */
export function tasksFromRows(rows: readonly JsonlRow[], options: LoadOptions, early: RejectedRow[] = []): LoadResult {
  const { name, kind, split, strict } = parseLoadOptions(options);
  const tasks: Task[] = [];
  const rejected = [...early];
  const firstLineOf = new Map<string, number>();
  for (const { line, index, value } of rows) {
    try {
      const task = taskFromRow(value, { name, kind, split, index });
      const seenAt = firstLineOf.get(task.task_id);
      if (seenAt !== undefined) throw duplicateIdError(task.task_id, seenAt);
      firstLineOf.set(task.task_id, line);
      tasks.push(task);
    } catch (err) {
      if (!(err instanceof RowValueError)) throw err;
      rejected.push({ line, reason: err.message });
    }
  }
  rejected.sort((a, b) => a.line - b.line);
  const report: LoadReport = { name, split, accepted: tasks.length, rejected };
  if (strict && rejected.length > 0) throw new DatasetLoadError(`rejected rows in ${formatLoadReport(report)}`, report);
  return { tasks, report };
}

/**
 * One row as a task: the kind's field map, then the id (`<name>:<split>:id=<own task_id>`, else
 * `<name>:<split>:<index>`). Duplicate own ids are the caller's to detect ({@link duplicateIdError}).
 * @param at the dataset's name, kind and split, and the row's 0-based index among the source's non-blank rows
 * @throws RowValueError with the reason the row is refused
 */
export function taskFromRow(value: Record<string, unknown>, at: { name: string; kind: DatasetKind; split: string; index: number }): Task {
  const ownId = readOwnTaskId(value["task_id"]);
  const taskId = ownId === undefined ? rowTaskId(at.name, at.split, at.index) : ownTaskId(at.name, at.split, ownId);
  const mapped = FIELD_MAPS[at.kind](value);
  return { main_query: mapped.mainQuery, init_messages: mapped.initMessages, task_id: taskId, env_type: mapped.envType, metadata: mapped.metadata };
}

/** The refusal of a second row with the same own `task_id` (two different tasks must never share a group, BC-30). */
export function duplicateIdError(taskId: string, firstLine: number): RowValueError {
  const ownId = taskId.slice(taskId.indexOf(":id=") + 4);
  return new RowValueError(`duplicate task_id ${JSON.stringify(ownId)} (first at line ${firstLine})`);
}

/**
 * Parses JSONL text (BOM, CRLF, U+2028 inside strings and blank lines handled; see `jsonl.ts`) into tasks.
 * Invalid JSON lines are rejected and counted with their line number, not thrown (unless `strict`).
 */
export function parseTasks(text: string, options: LoadOptions): LoadResult {
  const { rows, rejected } = parseJsonlRows(text);
  return tasksFromRows(rows, options, rejected);
}

/**
 * Tasks from in-memory rows (a run spec's inline `tasks`, a Parquet reader's objects with BigInt columns). Row `i`
 * is reported as line `i + 1` and gets index `i`.
 */
export function tasksFromObjects(rows: readonly unknown[], options: LoadOptions): LoadResult {
  const good: JsonlRow[] = [];
  const early: RejectedRow[] = [];
  rows.forEach((value, i) => {
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      good.push({ line: i + 1, index: i, value: value as Record<string, unknown> });
    } else {
      early.push({ line: i + 1, reason: "a row must be an object" });
    }
  });
  return tasksFromRows(good, options, early);
}
