/**
 * @module test/unit/client/_support — a scripted fetch (answers from a table, records every call, keeps every
 * Response so tests can check bodies were read or cancelled, BC-48) and a fake clock whose sleep only advances time.
 */
import { SwarmClient, type SwarmClientOptions, type SwarmLogger } from "../../../src/client/index.ts";
import { defaultEpisodeKey } from "../../../src/protocol/index.ts";

/** One request the client made. `body` is the parsed JSON body (undefined for GET). */
export interface RecordedCall {
  method: string;
  url: string;
  /** `METHOD /path` relative to the server URL's origin */
  route: string;
  body: unknown;
  headers: Record<string, string>;
  signal: AbortSignal | undefined;
}

/** A scripted answer: a Response factory, or a function of the call. */
export type Reply = () => Response | Promise<Response>;
export type ReplyFn = (call: RecordedCall) => Response | Promise<Response>;

/** JSON answer. */
export const json = (status: number, body: unknown): Reply => () =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
/** Plain-text answer (e.g. Starlette's `Internal Server Error`). */
export const text = (status: number, body: string): Reply => () =>
  new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
/** A fetch that never answers and ignores its signal. */
export const never: Reply = () => new Promise<Response>(() => undefined);
/** A transport failure (what undici throws for a refused connection). */
export const refused: Reply = () => Promise.reject(new TypeError("fetch failed"));

/** `GET /get_engine_status` answer. */
export const status = (engineStatus: string, globalStep: number | null = 1): Reply =>
  json(200, { engine_status: engineStatus, engine_status_detail: null, global_step: globalStep });

/** A successful `/claim_episode` answer (engine-host base URL, real key format). */
export const claimOk = (episodeUuid: string, baseUrl = "http://10.0.0.5:10086/v1"): Reply =>
  json(200, {
    success: true,
    client_uuid: "client-1",
    episode_uuid: episodeUuid,
    openai_base_url: baseUrl,
    openai_api_key: defaultEpisodeKey(episodeUuid),
    fail_cause: "",
  });
/** A failed `/claim_episode` answer with this fail_cause. */
export const claimFail = (failCause: string): Reply =>
  json(200, { success: false, client_uuid: "client-1", episode_uuid: "", openai_base_url: "", openai_api_key: "", fail_cause: failCause });

/** Routes: `"POST /claim_episode"` → one reply (repeated) or a list consumed in order (the last one repeats). */
export type Script = Record<string, Reply | ReplyFn | (Reply | ReplyFn)[]>;

/** A fetch answering from `script`; an unscripted route throws a non-retryable error (so loops stop). */
export function scriptedFetch(script: Script, originPrefix = "") {
  const calls: RecordedCall[] = [];
  const responses: Response[] = [];
  const served = new Map<string, number>();
  const fetch = async (input: string, init: RequestInit): Promise<Response> => {
    const url = new URL(input);
    const method = init.method ?? "GET";
    const route = `${method} ${url.pathname.slice(originPrefix.length)}`;
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const body = typeof init.body === "string" ? JSON.parse(init.body) : undefined;
    const call: RecordedCall = { method, url: input, route, body, headers, signal: init.signal ?? undefined };
    calls.push(call);
    const entry = script[route];
    if (!entry) throw Object.assign(new Error(`unscripted route ${route}`), { retryable: false });
    const list = Array.isArray(entry) ? entry : [entry];
    const n = served.get(route) ?? 0;
    served.set(route, n + 1);
    const reply = list[Math.min(n, list.length - 1)]!;
    const res = await reply(call);
    responses.push(res);
    return res;
  };
  return {
    fetch,
    calls,
    responses,
    /** calls of one route, e.g. `"POST /end_episode"` */
    callsTo: (route: string) => calls.filter((c) => c.route === route),
    routes: () => calls.map((c) => c.route),
  };
}

/** A clock whose `sleep` records the delay and advances `now` at once; `random` is fixed (0.5 = no jitter). */
export function fakeClock(startMs = 1_700_000_000_000, random = () => 0.5) {
  const state = { nowMs: startMs, sleeps: [] as number[] };
  return {
    state,
    now: () => state.nowMs,
    random,
    sleep: async (ms: number, signal?: AbortSignal) => {
      if (signal?.aborted) throw signal.reason;
      if (state.sleeps.length > 10_000) throw new Error("fake clock: runaway loop (over 10,000 sleeps)");
      state.sleeps.push(ms);
      state.nowMs += ms;
    },
    advance: (ms: number) => {
      state.nowMs += ms;
    },
  };
}

/** A logger that records lines by level. */
export function recordingLogger() {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (msg: string) => void lines.push({ level, msg });
  const logger: SwarmLogger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
  return { logger, lines };
}

/** A client on `http://swarm.test:10086` with a scripted fetch, a fake clock and a recording logger. */
export function scriptedClient(script: Script, options: Partial<SwarmClientOptions> = {}) {
  const server = scriptedFetch(script);
  const clock = fakeClock();
  const log = recordingLogger();
  const client = new SwarmClient({
    baseURL: "http://swarm.test:10086",
    clientUuid: "client-1",
    fetch: server.fetch,
    now: clock.now,
    sleep: clock.sleep,
    random: clock.random,
    logger: log.logger,
    ...options,
  });
  return { client, server, clock, log };
}

/** True when every response the server produced had its body read or cancelled (BC-48). */
export function allBodiesConsumed(responses: Response[]): boolean {
  return responses.every((r) => r.body === null || r.bodyUsed);
}
