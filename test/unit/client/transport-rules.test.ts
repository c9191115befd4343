/**
 * The transport's own rules (src/client/transport.ts) that the client tests reach only in part: when a failed fetch
 * is sent once more (never a second claim or reward after a reset), how an HTTP error body becomes `detail`, what a
 * request carries (JSON, a raw zip, nothing for a GET), and that a call leaves no timer or listener behind.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  SwarmAPIError,
  SwarmConfigError,
  SwarmConnectionError,
  SwarmInputError,
  SwarmProtocolError,
  SwarmTimeoutError,
} from "../../../src/client/index.ts";
import { apiErrorFrom, callEndpoint, classifyFetchFailure, mayResend, type TransportConfig } from "../../../src/client/transport.ts";
import { json, scriptedClient, scriptedFetch, status } from "./_support.ts";

afterEach(() => {
  vi.useRealTimers();
});

/** What undici throws: `TypeError: fetch failed` with the socket or system error as its cause. */
const undiciError = (code: string, message: string) => Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error(message), { code }) });
const refusedConnection = () => undiciError("ECONNREFUSED", "connect ECONNREFUSED 10.0.0.5:10086");
const resetConnection = () => undiciError("UND_ERR_SOCKET", "other side closed");
const fails = (make: () => unknown) => () => Promise.reject(make());

describe("which failed fetch is sent once more", () => {
  it("no connection made (refused, DNS, connect timeout): the request never left, so any endpoint may be resent", () => {
    for (const code of ["ECONNREFUSED", "UND_ERR_CONNECT_TIMEOUT", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]) {
      const err = undiciError(code, `connect ${code}`);
      expect(classifyFetchFailure(err)).toBe("notSent");
      expect(mayResend("claimEpisode", err)).toBe(true);
      expect(mayResend("endEpisode", err)).toBe(true);
    }
  });

  it("a reset under the request: only reads and the config sync are resent, never a claim, an end, an abort or an engine control", () => {
    for (const code of ["ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_CLOSED"]) {
      const err = undiciError(code, "socket error");
      expect(classifyFetchFailure(err)).toBe("reset");
      for (const read of ["health", "getEngineStatus", "getServerExperimentDir", "getRolloutStat", "getEpisodeBuffer", "canContinueEpisode", "syncTrainConfig"] as const) {
        expect(mayResend(read, err)).toBe(true);
      }
      for (const write of ["claimEpisode", "endEpisode", "abortEpisode", "startEngine", "stopEngine", "agreeSyncWeight", "syncTrainCode"] as const) {
        expect(mayResend(write, err)).toBe(false);
      }
    }
  });

  it("a reset is also known by its text (workerd, node's socket hang up), in the error or in its cause", () => {
    expect(classifyFetchFailure(new Error("Network connection lost."))).toBe("reset");
    expect(classifyFetchFailure(new Error("read: Connection reset by peer"))).toBe("reset");
    expect(classifyFetchFailure(new Error("socket hang up"))).toBe("reset");
    expect(classifyFetchFailure(new TypeError("fetch failed", { cause: new Error("other side closed") }))).toBe("reset");
    expect(classifyFetchFailure("Network connection lost")).toBe("reset");
  });

  it("a code is found along the cause chain; a connect error anywhere in it wins over a reset", () => {
    const deep = new Error("a", { cause: new Error("b", { cause: new Error("c", { cause: Object.assign(new Error("d"), { code: "ECONNREFUSED" }) }) }) });
    expect(classifyFetchFailure(deep)).toBe("notSent");
    const both = Object.assign(new Error("x"), { code: "ECONNRESET", cause: Object.assign(new Error("y"), { code: "ENOTFOUND" }) });
    expect(classifyFetchFailure(both)).toBe("notSent");
  });

  it("anything else is not resent: other codes, other texts, non-errors, a cause chain that loops", () => {
    expect(classifyFetchFailure(undiciError("CERT_HAS_EXPIRED", "certificate has expired"))).toBe("other");
    expect(classifyFetchFailure(Object.assign(new Error("boom"), { code: 42 }))).toBe("other");
    expect(classifyFetchFailure(null)).toBe("other");
    expect(classifyFetchFailure("boom")).toBe("other");
    const loop = new Error("loop") as Error & { cause?: unknown };
    loop.cause = loop;
    expect(classifyFetchFailure(loop)).toBe("other");
    expect(mayResend("getEngineStatus", new Error("boom"))).toBe(false);
  });
});

describe("the one resend, as a client sees it", () => {
  it("a read reset under its request is sent once more and answered", async () => {
    const { client, server } = scriptedClient({ "GET /get_engine_status": [fails(resetConnection), status("ENGINE.ROLLING", 3)] });
    expect(await client.getEngineStatus()).toEqual({ status: "ENGINE.ROLLING", detail: null, globalStep: 3 });
    expect(server.callsTo("GET /get_engine_status")).toHaveLength(2);
  });

  it("an end reset under its request is not sent again: the reward may have landed (BC-26)", async () => {
    const { client, server } = scriptedClient({ "POST /end_episode": [fails(resetConnection), json(200, { success: true })] });
    const err = (await client.endEpisode("t", "e1", { reward: 1 }).catch((e: unknown) => e)) as SwarmConnectionError;
    expect(err).toBeInstanceOf(SwarmConnectionError);
    expect(err.message).toBe("POST /end_episode failed: fetch failed");
    expect(err.cause).toBeInstanceOf(TypeError);
    expect(server.callsTo("POST /end_episode")).toHaveLength(1);
  });

  it("an end whose connection was refused is sent once more; a second failure is thrown, not resent again", async () => {
    const a = scriptedClient({ "POST /end_episode": [fails(refusedConnection), json(200, { success: true })] });
    expect(await a.client.endEpisode("t", "e1", { reward: 1 })).toEqual({ kind: "ended", deliveredEarlier: false });
    expect(a.server.callsTo("POST /end_episode")).toHaveLength(2);
    const b = scriptedClient({ "GET /get_engine_status": [fails(refusedConnection), fails(refusedConnection), status("ENGINE.ROLLING")] });
    await expect(b.client.getEngineStatus()).rejects.toBeInstanceOf(SwarmConnectionError);
    expect(b.server.callsTo("GET /get_engine_status")).toHaveLength(2);
  });

  it("a fetch that throws a non-Error is a SwarmConnectionError naming it", async () => {
    const { client } = scriptedClient({ "GET /health": () => Promise.reject("gateway gone") });
    const err = (await client.health().catch((e: unknown) => e)) as SwarmConnectionError;
    expect(err).toBeInstanceOf(SwarmConnectionError);
    expect(err.message).toBe("GET /health failed: gateway gone");
  });
});

describe("HTTP error bodies (spec §1)", () => {
  it("a 422 lists FastAPI's issues as loc: msg; an issue without loc or msg says its type, or invalid", () => {
    const err = apiErrorFrom("claimEpisode", "POST /claim_episode", 422, JSON.stringify({ detail: [{ loc: ["body", "x"], msg: "bad" }, { type: "missing" }, {}] }));
    expect(err).toBeInstanceOf(SwarmConfigError);
    expect(err.detail).toBe("body.x: bad; : missing; : invalid");
  });

  it("a 422 with a detail string keeps it; one with a non-JSON body keeps the text; neither has issues", () => {
    const a = apiErrorFrom("claimEpisode", "POST /claim_episode", 422, JSON.stringify({ detail: "episode_type is wrong" })) as SwarmConfigError;
    expect([a.detail, a.issues, a.body]).toEqual(["episode_type is wrong", [], { detail: "episode_type is wrong" }]);
    const b = apiErrorFrom("claimEpisode", "POST /claim_episode", 422, "Unprocessable") as SwarmConfigError;
    expect([b.detail, b.issues, b.body, b.status]).toEqual(["Unprocessable", [], "Unprocessable", 422]);
    const c = apiErrorFrom("claimEpisode", "POST /claim_episode", 422, JSON.stringify({ detail: [] })) as SwarmConfigError;
    expect(c.detail).toBe(JSON.stringify({ detail: [] }));
  });

  it("other statuses: a detail string as is, any other detail as JSON, a body without detail (or not an object) as its text", () => {
    const at = (status: number, text: string) => apiErrorFrom("endEpisode", "POST /end_episode", status, text);
    expect(at(400, JSON.stringify({ detail: "Episode not found" })).detail).toBe("Episode not found");
    expect(at(500, JSON.stringify({ detail: { code: 7, why: "oom" } })).detail).toBe('{"code":7,"why":"oom"}');
    expect(at(503, JSON.stringify({ error: "overloaded" })).detail).toBe('{"error":"overloaded"}');
    expect(at(502, JSON.stringify(null)).detail).toBe("null");
    expect(at(502, JSON.stringify("bad gateway")).detail).toBe('"bad gateway"');
    const e = at(404, "Not Found");
    expect(e).not.toBeInstanceOf(SwarmConfigError);
    expect([e.status, e.endpoint, e.route, e.detail, e.body]).toEqual([404, "endEpisode", "POST /end_episode", "Not Found", "Not Found"]);
  });

  it("a 2xx that is not JSON names its status and the body's first 200 characters", async () => {
    const page = `<html>${"x".repeat(300)}</html>`;
    const { client } = scriptedClient({ "GET /health": () => new Response(page, { status: 203 }) });
    const err = (await client.health().catch((e: unknown) => e)) as SwarmProtocolError;
    expect(err).toBeInstanceOf(SwarmProtocolError);
    expect(err.message).toContain(`HTTP 203 body is not JSON: ${page.slice(0, 200)}`);
    expect(err.message).not.toContain(page.slice(0, 201));
    expect(err.issues).toEqual([]);
  });
});

describe("what a request carries", () => {
  const config = (fetch: TransportConfig["fetch"], headers: Record<string, string> = {}): TransportConfig => ({ serverUrl: "http://swarm.test:10086/p", fetch, timeoutsMs: {}, headers });

  it("a GET has no body and no content-type; every call asks for JSON unless the client's headers say otherwise", async () => {
    const server = scriptedFetch({ "GET /p/health": json(200, { status: "ok" }) });
    await callEndpoint(config(server.fetch), "health", undefined);
    expect(server.calls[0]!.headers).toEqual({ accept: "application/json" });
    expect(server.calls[0]!.body).toBeUndefined();
    await callEndpoint(config(server.fetch, { accept: "*/*", "x-token": "t" }), "health", undefined);
    expect(server.calls[1]!.headers).toEqual({ accept: "*/*", "x-token": "t" });
  });

  it("a POST without a request schema sends {} for no body; a zip is sent as its bytes, as application/zip", async () => {
    const seen: RequestInit[] = [];
    const fetch = async (_url: string, init: RequestInit) => {
      seen.push(init);
      return new Response(JSON.stringify({ success: true, pid: 1, message: "ok" }));
    };
    await callEndpoint(config(fetch), "startEngine", undefined);
    expect(seen[0]!.body).toBe("{}");
    expect(new Headers(seen[0]!.headers).get("content-type")).toBe("application/json");
    const zip = new Uint8Array([0x50, 0x4b, 3, 4]);
    await callEndpoint(config(fetch), "syncTrainCode", zip);
    expect(seen[1]!.body).toBe(zip);
    expect(new Headers(seen[1]!.headers).get("content-type")).toBe("application/zip");
    expect(seen[1]!.method).toBe("POST");
  });

  it("a body that fails the endpoint's request schema is refused before any request, naming each field", async () => {
    const server = scriptedFetch({ "POST /p/can_continue_episode": json(200, { can_continue: true }) });
    const err = (await callEndpoint(config(server.fetch), "canContinueEpisode", { client_uuid: 5 }).catch((e: unknown) => e)) as SwarmInputError;
    expect(err).toBeInstanceOf(SwarmInputError);
    expect(err.message).toMatch(/^canContinueEpisode request: client_uuid: .+; episode_uuid: .+/);
    const whole = (await callEndpoint(config(server.fetch), "canContinueEpisode", "text").catch((e: unknown) => e)) as SwarmInputError;
    expect(whole.message).toMatch(/^canContinueEpisode request: \(body\): /);
    expect(server.calls).toHaveLength(0);
  });

  it("only an endpoint without a request schema takes raw bytes, and only as a POST", async () => {
    const server = scriptedFetch({ "GET /p/health": json(200, { status: "ok" }), "POST /p/can_continue_episode": json(200, { can_continue: true }) });
    const seen: RequestInit[] = [];
    const fetch = (url: string, init: RequestInit) => (seen.push(init), server.fetch(url, init));
    await callEndpoint(config(fetch), "health", new Uint8Array([1]));
    expect(seen[0]!.body).toBeUndefined();
    await expect(callEndpoint(config(fetch), "canContinueEpisode", new Uint8Array([1]))).rejects.toBeInstanceOf(SwarmInputError);
    expect(seen).toHaveLength(1);
  });

  it("a nested field of a refused body is named by its dotted path", async () => {
    const server = scriptedFetch({});
    const body = { client_uuid: "c", episode_uuid: "e", workflow_output: { reward: "high" }, task_id: "t" };
    const err = (await callEndpoint(config(server.fetch), "endEpisode", body).catch((e: unknown) => e)) as SwarmInputError;
    expect(err.message).toMatch(/^endEpisode request: workflow_output\.reward: /);
  });

  it("a 2xx of the wrong shape names each field path, or (body) for the whole", async () => {
    const server = scriptedFetch({ "GET /p/health": json(200, "ok"), "POST /p/can_continue_episode": json(200, { can_continue: "yes" }) });
    const whole = (await callEndpoint(config(server.fetch), "health", undefined).catch((e: unknown) => e)) as SwarmProtocolError;
    expect(whole.message).toMatch(/unexpected response shape: \(body\): /);
    const field = (await callEndpoint(config(server.fetch), "canContinueEpisode", { client_uuid: "c", episode_uuid: "e" }).catch((e: unknown) => e)) as SwarmProtocolError;
    expect(field.message).toMatch(/unexpected response shape: can_continue: /);
    const nested = scriptedFetch({ "GET /p/get_engine_status": json(200, { engine_status: 7, engine_status_detail: null, global_step: "x" }), "POST /p/get_episode_buffer": json(200, { buffer: [{ episode_uuid: 5 }] }) });
    const two = (await callEndpoint(config(nested.fetch), "getEngineStatus", undefined).catch((e: unknown) => e)) as SwarmProtocolError;
    expect(two.message).toMatch(/unexpected response shape: engine_status: [^;]+; global_step: /);
    const deep = (await callEndpoint(config(nested.fetch), "getEpisodeBuffer", {}).catch((e: unknown) => e)) as SwarmProtocolError;
    expect(deep.message).toMatch(/unexpected response shape: buffer\.0\.episode_uuid: /);
  });
});

describe("the end of a call", () => {
  it("a body that cannot be read is a SwarmConnectionError; one that does not arrive in time is a timeout", async () => {
    const broken = () => new Response(new ReadableStream({ pull: (c) => c.error(new Error("stream cut")) }));
    const { client } = scriptedClient({ "GET /health": broken });
    const err = (await client.health().catch((e: unknown) => e)) as SwarmConnectionError;
    expect(err).toBeInstanceOf(SwarmConnectionError);
    expect(err).not.toBeInstanceOf(SwarmTimeoutError);
    expect(err.message).toBe("GET /health: reading the response failed");

    vi.useFakeTimers();
    const stalled = () => new Response(new ReadableStream({ pull: () => new Promise(() => undefined) }));
    const slow = scriptedClient({ "GET /health": stalled });
    const outcome = slow.client.health({ timeoutMs: 40 }).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(40);
    expect(((await outcome) as SwarmTimeoutError).timeoutMs).toBe(40);
  });

  it("a late answer without a body, after a timeout, is dropped quietly", async () => {
    vi.useFakeTimers();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      let deliver!: (r: Response) => void;
      const { client } = scriptedClient({ "GET /health": () => new Promise<Response>((r) => (deliver = r)) });
      const outcome = client.health({ timeoutMs: 10 }).catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(10);
      expect(await outcome).toBeInstanceOf(SwarmTimeoutError);
      deliver(new Response(null, { status: 204 }));
      vi.useRealTimers();
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("a finished call leaves no timer running and no listener on the caller's signal", async () => {
    vi.useFakeTimers();
    const { client } = scriptedClient({ "GET /health": json(200, { status: "ok" }), "GET /get_engine_status": json(500, { detail: "x" }) });
    const ac = new AbortController();
    const added = vi.spyOn(ac.signal, "addEventListener");
    const removed = vi.spyOn(ac.signal, "removeEventListener");
    await client.health({ signal: ac.signal });
    await expect(client.getEngineStatus({ signal: ac.signal })).rejects.toBeInstanceOf(SwarmAPIError);
    expect(vi.getTimerCount()).toBe(0);
    expect(added).toHaveBeenCalledTimes(2);
    expect(removed.mock.calls.map((c) => [c[0], c[1]])).toEqual(added.mock.calls.map((c) => [c[0], c[1]]));
  });
});
