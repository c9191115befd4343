/**
 * @module tasks/task-id — stable, namespaced task ids (BC-30). Derived at load, before any claim; identical for
 * every repeat, every read and every restart; never random.
 *
 * Formats (name and split are restricted to `[A-Za-z0-9][A-Za-z0-9_.-]*`, so `:` only separates):
 * - `<name>:<split>:<index>`: a row without its own id, `index` = its 0-based position among the file's
 *   NON-BLANK lines (blank lines do not shift ids; a rejected line still consumes its index), e.g. `gsm8k:test:17`.
 * - `<name>:<split>:id=<task_id>`: a row with its own non-empty `task_id` (string or integer); the `id=` marker
 *   keeps it apart from index ids (`task_id: "17"` → `gsm8k:test:id=17`, never `gsm8k:test:17`).
 * - `<name>:gen-<seed>:<i>`: the Countdown generator's tasks, e.g. `countdown:gen-7:0`.
 *
 * A run sends them run-scoped by default (`<id>@<runTag>`, e.g. `gsm8k:test:17@a35a9d90`, see {@link runScopedTaskId}):
 * the server groups episodes by task id across ALL clients (spec §6.3), so two runs on one dataset would otherwise
 * merge their repeats into one group of 2 × numRepeat and close batches early.
 */
import { z } from "zod";
import { RowValueError, toSafeInteger } from "./values.ts";

/** One part of a task id: a dataset name or split. */
export const TaskIdPart = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "use 1-64 of A-Z a-z 0-9 _ . - (no ':' or spaces), e.g. gsm8k");

/** The split used when a dataset names none. */
export const DEFAULT_SPLIT = "train";

/** `<name>:<split>:<index>` for a row without its own id. */
export function rowTaskId(name: string, split: string, index: number): string {
  return `${name}:${split}:${index}`;
}

/** `<name>:<split>:id=<ownId>` for a row that carries its own `task_id`. */
export function ownTaskId(name: string, split: string, ownId: string): string {
  return `${name}:${split}:id=${ownId}`;
}

/**
 * A row's own `task_id`, if it has one: a non-empty string (no control characters, at most 256 chars) or a
 * safe integer (written in decimal). `undefined`, `null` and `""` mean "none" (the reference reader's default).
 * @throws RowValueError for any other value.
 */
export function readOwnTaskId(value: unknown): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value === "string") {
    if (value.length > 256 || /[\u0000-\u001f\u007f]/.test(value)) {
      throw new RowValueError("`task_id` must be at most 256 characters without control characters");
    }
    return value;
  }
  if (typeof value === "number" || typeof value === "bigint") return String(toSafeInteger(value, "task_id"));
  throw new RowValueError(`\`task_id\` must be a string or an integer (got ${typeof value})`);
}

/**
 * A short, stable tag of a run id for task ids: the run id's trailing 8 hex digits (`run-20261129111832-a35a9d90`
 * → `a35a9d90`), else an FNV-1a hash of the whole id as 8 hex digits. Never empty.
 */
export function runTag(runId: string): string {
  const tail = /([0-9a-f]{8})$/i.exec(runId)?.[1];
  if (tail) return tail.toLowerCase();
  let h = 0x811c9dc5;
  for (let i = 0; i < runId.length; i++) h = Math.imul(h ^ runId.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, "0");
}

/**
 * The task id a run sends to the server: `<taskId>@<runTag(runId)>` (scope `run`, the default: runs never share a
 * task group), or the dataset's id unchanged (scope `dataset`: every run on the dataset feeds one group per task).
 * Stable for the run (every repeat, attempt, re-run and restart) and non-empty (BC-30).
 * @throws RangeError when `taskId` is empty (a loader bug: ids are derived before any claim)
 */
export function runScopedTaskId(taskId: string, runId: string, scope: "run" | "dataset"): string {
  if (!taskId) throw new RangeError("a task id must be non-empty (BC-30)");
  return scope === "dataset" ? taskId : `${taskId}@${runTag(runId)}`;
}
