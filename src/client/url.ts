/**
 * @module client/url — server-URL normalisation, route URLs that keep a path prefix, and the rewrite of the
 * engine-registered `openai_base_url` onto the server URL (spec §5.3, §11.19, BC-37).
 */
import { SwarmInputError } from "./errors.ts";

/** Collapses runs of `/` in a path and strips trailing slashes (`/ajet//v1/` → `/ajet/v1`, `/` → ``). */
function cleanPath(path: string): string {
  return path.replace(/\/{2,}/g, "/").replace(/\/+$/, "");
}

/**
 * Normalises a swarm server URL: `http(s)` only, no query or fragment, duplicate and trailing slashes removed, a
 * path prefix kept (a server behind a gateway, BC-37).
 * @example normalizeServerUrl("https://gw.example.com/ajet/") → "https://gw.example.com/ajet"
 * @throws SwarmInputError(`baseURL`) when the URL does not parse or is not http(s).
 */
export function normalizeServerUrl(serverUrl: string): string {
  let url: URL;
  try {
    url = new URL(serverUrl);
  } catch {
    throw new SwarmInputError("baseURL", `not a URL: ${JSON.stringify(serverUrl)}; pass e.g. "http://127.0.0.1:10086"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new SwarmInputError("baseURL", `must be http(s), got ${JSON.stringify(serverUrl)}`);
  }
  return url.origin + cleanPath(url.pathname);
}

/**
 * The URL of a server route under a normalised server URL, keeping its path prefix.
 * @example routeUrl("https://gw.example.com/ajet", "/claim_episode") → "https://gw.example.com/ajet/claim_episode"
 */
export function routeUrl(normalizedServerUrl: string, path: string): string {
  return `${normalizedServerUrl}/${path.replace(/^\/+/, "")}`;
}

/**
 * Rewrites the engine-registered `openai_base_url` (`http://<MASTER_NODE_IP>:<port>/v1`, unreachable from the
 * edge) onto the server URL: scheme, host and port are replaced, the server URL's path prefix is kept, slashes are
 * normalised (spec §5.3, §11.19, BC-37). An empty or path-less value gives `<server>/v1`.
 * @example rewriteBaseUrl("https://gw.example.com/ajet", "http://10.0.0.5:10086/v1") → "https://gw.example.com/ajet/v1"
 */
export function rewriteBaseUrl(normalizedServerUrl: string, returnedBaseUrl: string): string {
  const withoutOrigin = returnedBaseUrl.trim().replace(/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*/, "");
  const path = cleanPath(withoutOrigin.startsWith("/") ? withoutOrigin : `/${withoutOrigin}`);
  return normalizedServerUrl + (path === "" ? "/v1" : path);
}
