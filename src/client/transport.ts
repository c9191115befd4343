/**
 * @module client/transport — one HTTP call to one swarm endpoint through the injected fetch: URL from the endpoint
 * table, per-call timeout combined with the caller's signal, every body read or cancelled (BC-48), errors mapped to
 * the typed classes, the response validated with the endpoint's zod schema.
 */
import type { z } from "zod";
import { endpoints, type EndpointName } from "../protocol/index.ts";
import {
  SwarmAbortError,
  SwarmAPIError,
  SwarmConfigError,
  SwarmConnectionError,
  SwarmInputError,
  SwarmProtocolError,
  SwarmTimeoutError,
  type FastApiValidationIssue,
} from "./errors.ts";
import { routeUrl } from "./url.ts";

/**
 * The fetch the client calls for ALL network I/O (issue 2 §3). The edge passes a guarded fetch (6-connection cap,
 * subrequest budget, BC-48/BC-49); tests pass a scripted one or `emulator.app.fetch`.
 */
export type SwarmFetch = (input: string, init: RequestInit) => Promise<Response>;

/** Per-call options of every SwarmClient method. */
export interface SwarmRequestOptions {
  /** the caller's signal; combined with the timeout */
  signal?: AbortSignal;
  /** this call's timeout in milliseconds; default: the client's `timeoutsMs[endpoint]`, else the endpoint table */
  timeoutMs?: number;
}

/** What a transport needs from its client. */
export interface TransportConfig {
  /** normalised server URL (see `normalizeServerUrl`) */
  serverUrl: string;
  fetch: SwarmFetch;
  /** per-endpoint timeout overrides in milliseconds */
  timeoutsMs: Partial<Record<EndpointName, number>>;
  headers: Record<string, string>;
}

/** The parsed response type of an endpoint. */
export type EndpointResponse<N extends EndpointName> = z.output<(typeof endpoints)[N]["response"]>;

/**
 * Endpoints whose request may be sent twice with the same effect as once (reads, and a config sync of the same
 * YAML): after a connection reset they are retried once on a fresh connection whatever the reset's timing.
 * Everything else — `/claim_episode` (a second claim holds a second episode), `/end_episode` (a second reward),
 * `/abort_episode`, the engine controls — is retried only when the request provably never left (below).
 */
export const RESET_SAFE_ENDPOINTS: ReadonlySet<EndpointName> = new Set<EndpointName>([
  "health",
  "getEngineStatus",
  "getServerExperimentDir",
  "getRolloutStat",
  "getEpisodeBuffer",
  "canContinueEpisode",
  "syncTrainConfig",
]);

/** Error codes of a connection that was never made: the request did not leave, so any endpoint may be resent. */
const NEVER_CONNECTED = new Set(["ECONNREFUSED", "UND_ERR_CONNECT_TIMEOUT", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);
/** Error codes of a connection reset or closed under a request that had (at least partly) been written. */
const RESET = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_CLOSED"]);

/** The `code`s along an error's `cause` chain (undici: `TypeError: fetch failed` → `SocketError` / system error). */
function errorCodes(err: unknown): string[] {
  const codes: string[] = [];
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") codes.push(code);
  }
  return codes;
}

/**
 * How a failed fetch failed, for the one retry on a fresh connection:
 *  - `notSent`: no connection was made (refused, DNS, connect timeout). undici also re-dispatches by itself the
 *    requests it had queued but not yet written on a socket that closed, so a request that errors with a socket
 *    error WAS being written; only a connect error proves it never left.
 *  - `reset`: the connection was reset or closed under the request (undici `SocketError` "other side closed",
 *    `ECONNRESET`; workerd "Network connection lost") — e.g. uvicorn closing a keep-alive connection after a 500.
 *    The server may or may not have read it.
 *  - `other`: anything else (not retried here).
 */
export function classifyFetchFailure(err: unknown): "notSent" | "reset" | "other" {
  const codes = errorCodes(err);
  if (codes.some((c) => NEVER_CONNECTED.has(c))) return "notSent";
  if (codes.some((c) => RESET.has(c))) return "reset";
  const text = err instanceof Error ? `${err.message} ${String((err as { cause?: unknown }).cause ?? "")}` : String(err);
  if (/network connection lost|connection reset|other side closed|socket hang up/i.test(text)) return "reset";
  return "other";
}

/** True when a fetch of `endpoint` that failed with `err` may be sent once more (see {@link classifyFetchFailure}). */
export function mayResend(endpoint: EndpointName, err: unknown): boolean {
  const kind = classifyFetchFailure(err);
  return kind === "notSent" || (kind === "reset" && RESET_SAFE_ENDPOINTS.has(endpoint));
}

/** Cancels an unread body so its connection slot is freed (BC-48). Never throws. */
function discardBody(res: Response): void {
  if (res.body && !res.bodyUsed) res.body.cancel().catch(() => undefined);
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** Builds the typed error for an HTTP status ≥ 400 (spec §1: JSON `{detail}`, FastAPI 422 list, or plain text). */
export function apiErrorFrom(endpoint: string, route: string, status: number, text: string): SwarmAPIError {
  const json = parseJson(text);
  const body = json.ok ? json.value : text;
  const raw = json.ok && json.value && typeof json.value === "object" ? (json.value as { detail?: unknown }).detail : undefined;
  if (status === 422) {
    const issues = Array.isArray(raw) ? (raw as FastApiValidationIssue[]) : [];
    const detail = issues.length
      ? issues.map((i) => `${(i.loc ?? []).join(".")}: ${i.msg ?? i.type ?? "invalid"}`).join("; ")
      : typeof raw === "string" ? raw : text;
    return new SwarmConfigError(endpoint, route, detail, body, issues);
  }
  const detail = typeof raw === "string" ? raw : raw !== undefined ? JSON.stringify(raw) : text;
  return new SwarmAPIError(status, endpoint, route, detail, body);
}

/**
 * Sends one request to endpoint `name` and returns its validated response.
 * @param body request body (validated with the endpoint's request schema; `{}` for body-less POSTs, none for GET; a
 *   `Uint8Array` for an endpoint without a request schema is sent as is, `application/zip`: `/sync_train_code`)
 * @throws SwarmInputError (request fails its schema) | SwarmAPIError / SwarmConfigError (HTTP ≥ 400) |
 *   SwarmTimeoutError | SwarmAbortError | SwarmConnectionError | SwarmProtocolError (2xx of the wrong shape)
 */
export async function callEndpoint<N extends EndpointName>(
  cfg: TransportConfig,
  name: N,
  body: unknown,
  options: SwarmRequestOptions = {},
): Promise<EndpointResponse<N>> {
  const ep = endpoints[name];
  const route = `${ep.method} ${ep.path}`;
  const timeoutMs = options.timeoutMs ?? cfg.timeoutsMs[name] ?? ep.timeoutMs;
  if (options.signal?.aborted) throw new SwarmAbortError(route, options.signal.reason);

  let payload: string | Uint8Array | undefined;
  if (ep.method === "POST" && ep.request === null && body instanceof Uint8Array) {
    payload = body;
  } else if (ep.method === "POST") {
    const checked = ep.request ? ep.request.safeParse(body) : { success: true as const, data: body ?? {} };
    if (!checked.success) {
      const where = checked.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`).join("; ");
      throw new SwarmInputError(`${name} request`, where);
    }
    payload = JSON.stringify(checked.data);
  }

  const controller = new AbortController();
  let timedOut = false;
  const stopError = () =>
    timedOut ? new SwarmTimeoutError(name, route, timeoutMs) : new SwarmAbortError(route, options.signal?.reason);
  const stopped = new Promise<never>((_, reject) =>
    controller.signal.addEventListener("abort", () => reject(stopError()), { once: true }),
  );
  stopped.catch(() => undefined);
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const onCallerAbort = () => controller.abort();
  options.signal?.addEventListener("abort", onCallerAbort, { once: true });

  try {
    const headers: Record<string, string> = { accept: "application/json", ...cfg.headers };
    if (payload !== undefined) headers["content-type"] = payload instanceof Uint8Array ? "application/zip" : "application/json";
    const send = () =>
      Promise.resolve().then(() =>
        cfg.fetch(routeUrl(cfg.serverUrl, ep.path), { method: ep.method, headers, body: payload, signal: controller.signal }),
      );
    let res: Response | undefined;
    // One resend on a fresh connection (the failed one is gone from the pool) when it cannot do harm: the server
    // closes a keep-alive connection after a 500 and resets the next request on it (uvicorn).
    for (let tries = 0; !res; tries++) {
      const pending = send();
      try {
        // Race, so a fetch that ignores its signal still times out; a response that arrives later is discarded.
        res = await Promise.race([pending, stopped]);
      } catch (err) {
        pending.then(discardBody, () => undefined);
        if (controller.signal.aborted) throw stopError();
        if (tries === 0 && mayResend(name, err)) continue;
        throw new SwarmConnectionError(name, `${route} failed: ${err instanceof Error ? err.message : String(err)}`, err);
      }
    }
    let text: string;
    try {
      text = await Promise.race([res.text(), stopped]);
    } catch (err) {
      discardBody(res);
      if (controller.signal.aborted) throw stopError();
      throw new SwarmConnectionError(name, `${route}: reading the response failed`, err);
    }
    if (res.status >= 400) throw apiErrorFrom(name, route, res.status, text);
    const json = parseJson(text);
    if (!json.ok) throw new SwarmProtocolError(name, route, `HTTP ${res.status} body is not JSON: ${text.slice(0, 200)}`, [], text);
    const parsed = ep.response.safeParse(json.value);
    if (!parsed.success) {
      const where = parsed.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`).join("; ");
      throw new SwarmProtocolError(name, route, `unexpected response shape: ${where}`, parsed.error.issues, json.value);
    }
    return parsed.data as EndpointResponse<N>;
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onCallerAbort);
  }
}
