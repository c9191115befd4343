/**
 * @module protocol/api-key — the per-episode proxy key format (spec §5.3): `sk-ajet-` + standard base64 (padded)
 * of UTF-8 JSON `{"agent_name", "target_tag", "episode_uuid", "episode_address"}` serialised with Python's
 * default separators (`", "` and `": "`).
 */

/** `API_KEY_PREFIX` (spec §2.1). */
export const API_KEY_PREFIX = "sk-ajet-";

/** The decoded payload of an episode key (spec §5.3). */
export interface EpisodeKeyPayload {
  agent_name: string;
  target_tag: string;
  episode_uuid: string;
  episode_address: string;
}

function toBase64(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

/**
 * A string as Python's `json.dumps` writes it with the default `ensure_ascii=True`: JSON quoting, and every
 * character from U+007F up as `\uXXXX` (lowercase hex; astral characters as their two UTF-16 surrogates).
 * @example pythonJsonString("é✓") → `"\u00e9\u2713"`
 */
export function pythonJsonString(s: string): string {
  return JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

/** Python `json.dumps` of a flat string map with default separators and `ensure_ascii=True`. */
function pythonJsonDumps(obj: Record<string, string>): string {
  return "{" + Object.entries(obj).map(([k, v]) => `${pythonJsonString(k)}: ${pythonJsonString(v)}`).join(", ") + "}";
}

/**
 * Builds an episode key exactly as the engine does (spec §5.3).
 * @example encodeEpisodeKey({agent_name: "default_agent_name", target_tag: "default_target_tag",
 *   episode_uuid: "c802…", episode_address: "ipc:///tmp/ajet/c802…-llm.sock"}) → "sk-ajet-eyJhZ2Vud…"
 */
export function encodeEpisodeKey(payload: EpisodeKeyPayload): string {
  const json = pythonJsonDumps({
    agent_name: payload.agent_name,
    target_tag: payload.target_tag,
    episode_uuid: payload.episode_uuid,
    episode_address: payload.episode_address,
  });
  return API_KEY_PREFIX + toBase64(new TextEncoder().encode(json));
}

/** Key for a swarm episode with the default agent name and target tag and an `ipc://` address (spec §13.1). */
export function defaultEpisodeKey(episodeUuid: string): string {
  return encodeEpisodeKey({
    agent_name: "default_agent_name",
    target_tag: "default_target_tag",
    episode_uuid: episodeUuid,
    episode_address: `ipc:///tmp/ajet/${episodeUuid}-llm.sock`,
  });
}
