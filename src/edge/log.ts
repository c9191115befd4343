/**
 * @module edge/log — the Worker's console lines: one JSON object per line, `{level, msg, ...tags, ...fields}`
 * (the dev CLI's `formatWorkerLog` renders them). Used by the queue consumer, the RolloutScheduler and the API.
 * Per-episode keys (`sk-ajet-…`) are redacted from every line, whatever field or error message carries them.
 */
import { API_KEY_PREFIX } from "../protocol/index.ts";
import type { RolloutLogger } from "../sdk/contract.ts";

const EPISODE_KEY = new RegExp(`${API_KEY_PREFIX}[A-Za-z0-9+/=_-]*`, "g");

/** `text` with every per-episode key replaced by `sk-ajet-<redacted>`. */
export function redactEpisodeKeys(text: string): string {
  return text.replace(EPISODE_KEY, `${API_KEY_PREFIX}<redacted>`);
}

/** A JSON-lines console logger; every line carries `tags` (run, episode, …). `debug` is dropped. */
export function jsonLogger(tags: Record<string, unknown> = {}): RolloutLogger {
  const line = (level: string, msg: string, fields?: Record<string, unknown>) => redactEpisodeKeys(JSON.stringify({ level, msg, ...tags, ...fields }));
  return {
    debug: () => {},
    info: (m, f) => console.log(line("info", m, f)),
    warn: (m, f) => console.warn(line("warn", m, f)),
    error: (m, f) => console.error(line("error", m, f)),
  };
}
