/**
 * @module edge/log — the Worker's console lines: one JSON object per line, `{level, msg, ...tags, ...fields}`
 * (the dev CLI's `formatWorkerLog` renders them). Used by the queue consumer, the RolloutScheduler and the API.
 */
import type { RolloutLogger } from "../sdk/contract.ts";

/** A JSON-lines console logger; every line carries `tags` (run, episode, …). `debug` is dropped. */
export function jsonLogger(tags: Record<string, unknown> = {}): RolloutLogger {
  const line = (level: string, msg: string, fields?: Record<string, unknown>) => JSON.stringify({ level, msg, ...tags, ...fields });
  return {
    debug: () => {},
    info: (m, f) => console.log(line("info", m, f)),
    warn: (m, f) => console.warn(line("warn", m, f)),
    error: (m, f) => console.error(line("error", m, f)),
  };
}
