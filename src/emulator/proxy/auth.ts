/**
 * @module emulator/proxy/auth — decodes an episode key exactly as the real proxy does (spec §5.3, §9.2): strip
 * every `Bearer `, `bearer ` and `sk-ajet-`, base64-decode (CPython rules), UTF-8 decode, `json.loads`, and
 * require truthy `agent_name`, `target_tag`, `episode_uuid`. Failures carry the real server's detail text,
 * including the Python exception text (`Invalid authorization header: Incorrect padding`).
 */
import { API_KEY_PREFIX, ServerText } from "../../protocol/index.ts";
import { PyError, pyB64Decode, pyTruthy, pyTypeName, pyUtf8Decode } from "../python/codecs.ts";
import { PyJsonDecodeError, pyJsonLoads } from "../python/json-parse.ts";

/** A decoded key, or the 401 detail the proxy answers with. */
export type KeyDecodeResult =
  | { ok: true; agentName: string; targetTag: string; episodeUuid: string; episodeAddress: string | null }
  | { ok: false; detail: string };

const pyStr = (v: unknown): string => (typeof v === "string" ? v : v === true ? "True" : v === false ? "False" : String(v));

/**
 * Decodes the `Authorization` header value (or null when absent).
 * @example decodeEpisodeKey("Bearer sk-ajet-not-base64!!") → {ok: false, detail: "Invalid authorization header:
 *   Invalid base64-encoded string: number of data characters (9) cannot be 1 more than a multiple of 4"}
 */
export function decodeEpisodeKey(authorization: string | null | undefined): KeyDecodeResult {
  if (!authorization) return { ok: false, detail: ServerText.missingAuthorization };
  let data: unknown;
  try {
    const token = authorization.replaceAll("Bearer ", "").replaceAll("bearer ", "").replaceAll(API_KEY_PREFIX, "");
    data = pyJsonLoads(pyUtf8Decode(pyB64Decode(token)));
    if (typeof data !== "object" || data === null || Array.isArray(data)) {
      throw new PyError("AttributeError", `'${pyTypeName(data)}' object has no attribute 'get'`);
    }
  } catch (e) {
    if (e instanceof PyError || e instanceof PyJsonDecodeError) return { ok: false, detail: ServerText.invalidAuthorizationHeader(e.message) };
    throw e;
  }
  const obj = data as Record<string, unknown>;
  if (!pyTruthy(obj["agent_name"]) || !pyTruthy(obj["target_tag"]) || !pyTruthy(obj["episode_uuid"])) {
    return { ok: false, detail: ServerText.invalidAuthorizationData };
  }
  const address = obj["episode_address"];
  return {
    ok: true,
    agentName: pyStr(obj["agent_name"]),
    targetTag: pyStr(obj["target_tag"]),
    episodeUuid: pyStr(obj["episode_uuid"]),
    episodeAddress: address === undefined || address === null ? null : pyStr(address),
  };
}
