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
 * @param body request body (validated with the endpoint's request schema; `{}` for body-less POSTs, none for GET)
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

  let payload: string | undefined;
  if (ep.method === "POST") {
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
    if (payload !== undefined) headers["content-type"] = "application/json";
    const pending = Promise.resolve().then(() =>
      cfg.fetch(routeUrl(cfg.serverUrl, ep.path), { method: ep.method, headers, body: payload, signal: controller.signal }),
    );
    let res: Response;
    try {
      // Race, so a fetch that ignores its signal still times out; a response that arrives later is discarded.
      res = await Promise.race([pending, stopped]);
    } catch (err) {
      pending.then(discardBody, () => undefined);
      if (controller.signal.aborted) throw stopError();
      throw new SwarmConnectionError(name, `${route} failed: ${err instanceof Error ? err.message : String(err)}`, err);
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
