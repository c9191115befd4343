/**
 * @module edge/ground/log — the Worker's console lines: one JSON object per line, `{level, msg, ...tags, ...fields}`
 * (the dev CLI's `formatWorkerLog` renders them). Used by the queue consumer, the RolloutScheduler and the API; and
 * the run log of a run object ({@link runLog}: its SQLite lines, the console for warnings and errors).
 * Per-episode keys (`sk-ajet-…`) are redacted from every line, whatever field or error message carries them.
 */
import { API_KEY_PREFIX } from "../../protocol/index.ts";
import type { RolloutLogger } from "../../sdk/contract.ts";

const EPISODE_KEY = new RegExp(`${API_KEY_PREFIX}[A-Za-z0-9+/=_-]*`, "g");

/** `text` with every per-episode key replaced by `sk-ajet-<redacted>`. */
export function redactEpisodeKeys(text: string): string {
  return text.replace(EPISODE_KEY, `${API_KEY_PREFIX}<redacted>`);
}

/**
 * A JSON-lines console logger; every line carries `tags` (run, episode, …). `debug` goes to console.debug (shown
 * by `ajet-edge dev --log-level debug`; on Cloudflare, Workers Logs keep it at level debug).
 */
export function jsonLogger(tags: Record<string, unknown> = {}): RolloutLogger {
  const line = (level: string, msg: string, fields?: Record<string, unknown>) => redactEpisodeKeys(JSON.stringify({ level, msg, ...tags, ...fields }));
  return {
    debug: (m, f) => console.debug(line("debug", m, f)),
    info: (m, f) => console.log(line("info", m, f)),
    warn: (m, f) => console.warn(line("warn", m, f)),
    error: (m, f) => console.error(line("error", m, f)),
  };
}

/** A line of a run's log: level, message, structured fields. */
export type RunLog = (level: "info" | "warn" | "error", message: string, fields: Record<string, unknown>) => void;

/**
 * The run log of a run object: every line is stored (shown by `GET /runs/:id`); warnings and errors go to the console
 * too, tagged with the run's id.
 * @param store writes one line (`atMs` epoch ms)
 * @param runId the run's id, undefined before the run exists
 */
export function runLog(store: (line: { atMs: number; level: string; message: string; fields: Record<string, unknown> }) => void, runId: () => string | undefined): RunLog {
  return (level, message, fields) => {
    store({ atMs: Date.now(), level, message, fields });
    if (level === "warn" || level === "error") jsonLogger({ run: runId() })[level](message, fields);
  };
}
