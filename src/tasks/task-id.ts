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
