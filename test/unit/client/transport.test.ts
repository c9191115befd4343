import { afterEach, describe, expect, it, vi } from "vitest";
import {
  SwarmAbortError,
  SwarmAPIError,
  SwarmConfigError,
  SwarmConnectionError,
  SwarmProtocolError,
  SwarmTimeoutError,
  isRetryableError,
} from "../../../src/client/index.ts";
import { allBodiesConsumed, json, never, refused, scriptedClient, status, text } from "./_support.ts";

afterEach(() => {
  vi.useRealTimers();
});

describe("HTTP errors are typed and carry status and detail (spec §1)", () => {
  it("BC-36 a 422 is a SwarmConfigError with FastAPI's issues, and is not retryable", async () => {
    const issues = [
      { type: "missing", loc: ["body", "episode_type"], msg: "Field required", input: {} },
      { type: "missing", loc: ["body", "discard_episode_timeout"], msg: "Field required", input: {} },
    ];
    const { client, server } = scriptedClient({ "POST /claim_episode": json(422, { detail: issues }) });
    const err = await client.claimEpisode().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SwarmConfigError);
    expect(err).toBeInstanceOf(SwarmAPIError);
    const e = err as SwarmConfigError;
    expect(e.status).toBe(422);
    expect(e.endpoint).toBe("claimEpisode");
    expect(e.issues).toEqual(issues);
    expect(e.detail).toBe("body.episode_type: Field required; body.discard_episode_timeout: Field required");
    expect(isRetryableError(e)).toBe(false);
    expect(allBodiesConsumed(server.responses)).toBe(true);
  });

  it("handles Starlette's plain-text 500 body", async () => {
    const { client, server } = scriptedClient({ "POST /end_episode": text(500, "Internal Server Error") });
    const err = (await client.endEpisode("t", "e1", { reward: 1 }).catch((e: unknown) => e)) as SwarmAPIError;
    expect(err).toBeInstanceOf(SwarmAPIError);
    expect(err.status).toBe(500);
    expect(err.detail).toBe("Internal Server Error");
    expect(err.body).toBe("Internal Server Error");
    expect(err.route).toBe("POST /end_episode");
    expect(err.message).toBe("SwarmClient error 500 on POST /end_episode: Internal Server Error");
    expect(isRetryableError(err)).toBe(true);
    expect(allBodiesConsumed(server.responses)).toBe(true);
  });

  it("keeps a 400's JSON detail string", async () => {
    const detail = "Engine is already started. Call `stop_engine` first before syncing new training configuration.";
    const { client } = scriptedClient({
      "GET /get_engine_status": status("ENGINE.OFFLINE"),
      "POST /sync_train_config": json(400, { detail }),
    });
    const err = (await client.syncTrainConfig("ajet: {}\n").catch((e: unknown) => e)) as SwarmAPIError;
    expect(err.status).toBe(400);
    expect(err.detail).toBe(detail);
    expect(err.body).toEqual({ detail });
    expect(isRetryableError(err)).toBe(false);
  });

  it("a 2xx body that is not JSON or has the wrong shape is a SwarmProtocolError", async () => {
    const a = scriptedClient({ "GET /get_engine_status": text(200, "<html>gateway</html>") });
    await expect(a.client.getEngineStatus()).rejects.toBeInstanceOf(SwarmProtocolError);
    const b = scriptedClient({ "GET /get_engine_status": json(200, { engine_status: 7 }) });
    const err = (await b.client.getEngineStatus().catch((e: unknown) => e)) as SwarmProtocolError;
    expect(err).toBeInstanceOf(SwarmProtocolError);
    expect(err.issues[0]?.path).toEqual(["engine_status"]);
  });

  it("BC-38 a 200 with an error-shaped body (status_code/detail, no success) is a SwarmProtocolError", async () => {
    const { client } = scriptedClient({ "POST /claim_episode": json(200, { status_code: 401, detail: "Missing authorization header", headers: null }) });
    const err = (await client.claimEpisode().catch((e: unknown) => e)) as SwarmProtocolError;
    expect(err).toBeInstanceOf(SwarmProtocolError);
    expect(err.issues.map((i) => i.path.join("."))).toEqual(["success"]);
    expect(isRetryableError(err)).toBe(false);
  });

  it("a transport failure is a retryable SwarmConnectionError with the cause", async () => {
    const { client } = scriptedClient({ "GET /get_engine_status": refused });
    const err = (await client.getEngineStatus().catch((e: unknown) => e)) as SwarmConnectionError;
    expect(err).toBeInstanceOf(SwarmConnectionError);
    expect(err.cause).toBeInstanceOf(TypeError);
    expect(isRetryableError(err)).toBe(true);
    expect(isRetryableError(new SwarmConnectionError("x", "budget", { retryable: false }))).toBe(false);
  });

  it("sends JSON with content-type and builds URLs under the server URL", async () => {
    const { client, server } = scriptedClient(
      { "POST /can_continue_episode": json(200, { can_continue: true }) },
      { headers: { "x-gateway-token": "tok" } },
    );
    expect(await client.canContinueEpisode("e1")).toBe(true);
    const call = server.calls[0]!;
    expect(call.url).toBe("http://swarm.test:10086/can_continue_episode");
    expect(call.headers["content-type"]).toBe("application/json");
    expect(call.headers["x-gateway-token"]).toBe("tok");
    expect(call.body).toEqual({ client_uuid: "client-1", episode_uuid: "e1" });
  });
});

describe("timeouts and the caller's signal", () => {
  it("times out a fetch that never answers (and ignores its signal)", async () => {
    vi.useFakeTimers();
    const { client } = scriptedClient({ "GET /get_engine_status": never });
    const outcome = client.getEngineStatus({ timeoutMs: 50 }).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(50);
    const err = (await outcome) as SwarmTimeoutError;
    expect(err).toBeInstanceOf(SwarmTimeoutError);
    expect(err).toBeInstanceOf(SwarmConnectionError);
    expect(err.timeoutMs).toBe(50);
  });

  it("BC-26 end_episode waits at least 300 s by default (330 s), the rest 30 s", async () => {
    vi.useFakeTimers();
    const { client, server } = scriptedClient({ "POST /end_episode": never, "GET /get_engine_status": never });
    let settled = false;
    const end = client.endEpisode("t", "e1", { reward: 1 }).catch((e: unknown) => ((settled = true), e));
    const stat = client.getEngineStatus().catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(((await stat) as SwarmTimeoutError).timeoutMs).toBe(30_000);
    await vi.advanceTimersByTimeAsync(270_000);
    expect(settled).toBe(false);
    expect(server.callsTo("POST /end_episode")[0]!.signal!.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(((await end) as SwarmTimeoutError).timeoutMs).toBe(330_000);
    expect(server.callsTo("POST /end_episode")).toHaveLength(1); // never retried blindly
  });

  it("timeouts are overridable per client and per call", async () => {
    vi.useFakeTimers();
    const { client } = scriptedClient({ "POST /start_engine": never, "GET /get_engine_status": status("ENGINE.OFFLINE") }, { timeoutsMs: { startEngine: 1_000 } });
    const a = client.startEngine().catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(((await a) as SwarmTimeoutError).timeoutMs).toBe(1_000);
    const b = client.startEngine({ timeoutMs: 200 }).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(200);
    expect(((await b) as SwarmTimeoutError).timeoutMs).toBe(200);
  });

  it("the caller's signal aborts the call (SwarmAbortError with the reason) and reaches the fetch", async () => {
    const { client, server } = scriptedClient({ "GET /get_engine_status": never });
    const ac = new AbortController();
    const outcome = client.getEngineStatus({ signal: ac.signal }).catch((e: unknown) => e);
    await Promise.resolve();
    await Promise.resolve();
    ac.abort("run stopped");
    const err = (await outcome) as SwarmAbortError;
    expect(err).toBeInstanceOf(SwarmAbortError);
    expect(err.cause).toBe("run stopped");
    expect(server.calls[0]!.signal!.aborted).toBe(true);
  });

  it("an already-aborted signal makes no request", async () => {
    const { client, server } = scriptedClient({ "GET /get_engine_status": status("ENGINE.ROLLING") });
    await expect(client.getEngineStatus({ signal: AbortSignal.abort() })).rejects.toBeInstanceOf(SwarmAbortError);
    expect(server.calls).toHaveLength(0);
  });

  it("BC-48 a response that arrives after the timeout has its body cancelled", async () => {
    vi.useFakeTimers();
    let deliver!: (r: Response) => void;
    const late = new Response(JSON.stringify({ engine_status: "ENGINE.ROLLING" }));
    const { client } = scriptedClient({ "GET /get_engine_status": () => new Promise<Response>((r) => (deliver = r)) });
    const outcome = client.getEngineStatus({ timeoutMs: 10 }).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(10);
    expect(await outcome).toBeInstanceOf(SwarmTimeoutError);
    deliver(late);
    await vi.advanceTimersByTimeAsync(0);
    expect(late.bodyUsed).toBe(true);
  });
});
