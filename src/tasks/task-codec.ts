/**
 * @module tasks/task-codec — one task ⇄ one stored value (the scheduler keeps one row per task, BC-53): JSON text,
 * lossless for any prompt size and any Unicode (U+2028, astral characters, lone `\r`).
 */
import { Task } from "../protocol/index.ts";

/**
 * A task as JSON text for one storage row. Throws nothing for a valid Task; its size is reported by
 * {@link taskSizeBytes} so the caller can decide to chunk or offload (Durable Object values are limited, BC-53).
 */
export function serializeTask(task: Task): string {
  return JSON.stringify(Task.parse(task));
}

/**
 * The task stored by {@link serializeTask}.
 * @throws SyntaxError for text that is not JSON; ZodError for JSON that is not a Task.
 */
export function deserializeTask(text: string): Task {
  return Task.parse(JSON.parse(text));
}

/** UTF-8 size in bytes of the serialised task (what a storage value limit counts). */
export function taskSizeBytes(task: Task): number {
  return new TextEncoder().encode(serializeTask(task)).byteLength;
}
