/**
 * The `SwarmClient` object's own rules (src/client/swarm-client.ts) that the endpoint tests do not state: its
 * defaults (uuid, fetch, clock, back-off, logger), what `withOptions` keeps and what it starts afresh, calls made
 * within a wait, the status wait's forms, throttled claims taken one at a time, and the end/abort edges.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { SwarmClient, SwarmAbortError, SwarmDeadlineError, SwarmInputError, type SwarmOperationError, SwarmServerOfflineError, type SwarmTimeoutError } from "../../../src/client/index.ts";
import { ServerText } from "../../../src/protocol/index.ts";
import { claimOk, json, never, recordingLogger, scriptedClient, scriptedFetch, status } from "./_support.ts";

const E1 = "e1000000000000000000000000000001";
const S = "GET /get_engine_status";
const ROLLING = status("ENGINE.ROLLING");
const OFFLINE = status("ENGINE.OFFLINE", null);

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

describe("defaults", () => {
  it("a client without a uuid gets a fresh random one (one per client object)", () => {
    const a = new SwarmClient({ baseURL: "http://swarm.test:10086" });
    const b = new SwarmClient({ baseURL: "http://swarm.test:10086" });
    expect(a.clientUuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.clientUuid).not.toBe(b.clientUuid);
  });

  it("without an injected fetch it calls the global fetch, with the client's headers and no others", async () => {
    const server = scriptedFetch({ "GET /health": json(200, { status: "ok" }) });
    vi.stubGlobal("fetch", server.fetch);
    const client = new SwarmClient({ baseURL: "http://swarm.test:10086/" });
    expect(await client.health()).toEqual({ status: "ok" });
    expect(server.calls[0]!.url).toBe("http://swarm.test:10086/health");
    expect(server.calls[0]!.headers).toEqual({ accept: "application/json" });
  });

  it("without an injected clock it sleeps for real: a 1 ms poll interval is waited, not skipped", async () => {
    const server = scriptedFetch({ [S]: [status("ENGINE.BOOTING"), ROLLING] });
    const client = new SwarmClient({ baseURL: "http://swarm.test:10086", fetch: server.fetch, backoff: { statusPollIntervalMs: 1 } });
    expect((await client.waitForEngineStatus("ENGINE.ROLLING", { deadlineMs: Date.now() + 60_000 })).status).toBe("ENGINE.ROLLING");
    expect(server.calls).toHaveLength(2);
  });

  it("without an injected random, waits are spread over ±25 %; without an injected clock, deadlines are read from Date.now", async () => {
    const sleeps: number[] = [];
    const server = scriptedFetch({ [S]: [status("ENGINE.BOOTING"), status("ENGINE.BOOTING"), status("ENGINE.BOOTING"), status("ENGINE.BOOTING"), ROLLING] });
    const client = new SwarmClient({ baseURL: "http://swarm.test:10086", fetch: server.fetch, sleep: async (ms) => void sleeps.push(ms), logger: recordingLogger().logger });
    await client.waitForEngineStatus("ENGINE.ROLLING");
    expect(sleeps).toHaveLength(4);
    for (const ms of sleeps) {
      expect(ms).toBeGreaterThanOrEqual(3_750);
      expect(ms).toBeLessThan(6_250);
    }
    const late = (await client.waitForEngineStatus("ENGINE.ROLLING", { deadlineMs: Date.now() - 1 }).catch((e: unknown) => e)) as SwarmDeadlineError;
    expect(late).toBeInstanceOf(SwarmDeadlineError);
    expect(server.calls).toHaveLength(5);
  });

  it("a partial back-off table overrides only the delays it names", async () => {
    const noEpisodes = json(200, { success: false, client_uuid: "client-1", episode_uuid: "", openai_base_url: "", openai_api_key: "", fail_cause: ServerText.noAvailableEpisodes });
    const empty = scriptedClient({ [S]: ROLLING, "POST /claim_episode": [noEpisodes, claimOk(E1)] }, { backoff: { noEpisodesDelayMs: 1_000 } });
    await empty.client.beginEpisode();
    expect(empty.clock.state.sleeps).toEqual([1_000]);
    // the status poll interval keeps its default (5 s)
    const booting = scriptedClient({ [S]: [status("ENGINE.BOOTING"), ROLLING] }, { backoff: { noEpisodesDelayMs: 1_000 } });
    await booting.client.waitForEngineStatus("ENGINE.ROLLING");
    expect(booting.clock.state.sleeps).toEqual([5_000]);
  });

  it("the default logger is silent for info and writes warnings and errors to the console, tagged, with their fields", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const error = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const info = vi.spyOn(console, "info").mockImplementation(() => undefined);
    const log = vi.spyOn(console, "log").mockImplementation(() => undefined);
    const server = scriptedFetch({ [S]: OFFLINE, "POST /sync_train_config": json(200, { success: true }), "POST /abort_episode": json(200, { success: false }), "POST /end_episode": json(400, { detail: ServerText.episodeNotFound(E1) }) });
    const client = new SwarmClient({ baseURL: "http://swarm.test:10086", clientUuid: "client-1", fetch: server.fetch });
    await client.syncTrainConfig("ajet: {}\n"); // logs at info
    expect(await client.abortEpisode(E1)).toBe(false); // logs an error
    await client.endEpisode("t", E1, { reward: 1 }); // logs a warning
    expect(info).not.toHaveBeenCalled();
    expect(log).not.toHaveBeenCalled();
    expect(error).toHaveBeenCalledWith(`[swarm-client] Failed to abort episode ${E1}`);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]).toHaveLength(1);
    expect(warn.mock.calls[0]![0]).toMatch(/^\[swarm-client\] end_episode e1000000000000000000000000000001: lost \(notFound\): /);
  });
});

describe("withOptions", () => {
  it("keeps every option and the uuid unless overridden, and starts with fresh local state", async () => {
    const server = scriptedFetch({ "POST /claim_episode": claimOk(E1), "POST /end_episode": json(200, { success: true }), "POST /abort_episode": json(200, { success: true }) });
    let now = 0;
    const client = new SwarmClient({ baseURL: "http://swarm.test:10086", clientUuid: "client-1", fetch: server.fetch, headers: { "x-token": "t" }, now: () => now, localExpiry: true, logger: recordingLogger().logger });
    await client.claimEpisode({ discardEpisodeTimeoutSeconds: 60 });
    now = 1_000_000; // past 8 × 60 s
    const other = client.withOptions({ timeoutsMs: { endEpisode: 1_000 } });
    expect(other.clientUuid).toBe("client-1");
    // the other client never claimed E1: it ends it (the original would abort it locally)
    expect(await other.endEpisode("t", E1, { reward: 1 })).toEqual({ kind: "ended", deliveredEarlier: false });
    expect(server.calls.at(-1)!.headers["x-token"]).toBe("t");
    expect((await client.endEpisode("t", E1, { reward: 1 })).kind).toBe("abortedLocally");
    expect(client.withOptions({ clientUuid: "client-2" }).clientUuid).toBe("client-2");
  });
});

describe("calls within a wait", () => {
  it("an engine control's timeout is capped by the time left before the deadline", async () => {
    vi.useFakeTimers();
    const { client, clock } = scriptedClient({ [S]: OFFLINE, "POST /start_engine": never });
    const outcome = client.requestEngineStart({ deadlineMs: clock.now() + 100 }).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(100);
    expect(((await outcome) as SwarmTimeoutError).timeoutMs).toBe(100);
    const b = client.requestEngineStart({ deadlineMs: clock.now() + 100, timeoutMs: 40 }).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(40);
    expect(((await b) as SwarmTimeoutError).timeoutMs).toBe(40);
  });

  it("a deadline already passed or a fired signal sends no engine control", async () => {
    const { client, server, clock } = scriptedClient({ [S]: status("ENGINE.ROLLING"), "POST /stop_engine": json(200, { success: true }) });
    const late = (await client.stopEngine({ deadlineMs: clock.now() }).catch((e: unknown) => e)) as SwarmDeadlineError;
    expect(late).toBeInstanceOf(SwarmDeadlineError);
    expect(late.message).toBe("/stop_engine: deadline reached");
    const ac = new AbortController();
    const stopped = client.stopEngine({ signal: ac.signal });
    ac.abort("stop");
    await expect(stopped).rejects.toBeInstanceOf(SwarmAbortError);
    expect(server.callsTo("POST /stop_engine")).toHaveLength(0);
  });
});

describe("waitForEngineStatus", () => {
  it("takes one status or a list, and returns the snapshot of the first awaited one seen", async () => {
    const { client } = scriptedClient({ [S]: [status("ENGINE.BOOTING"), status("ENGINE.ROLLING_POST", 9)] });
    expect(await client.waitForEngineStatus(["ENGINE.ROLLING", "ENGINE.ROLLING_POST"])).toEqual({ status: "ENGINE.ROLLING_POST", detail: null, globalStep: 9 });
  });

  it("an OFFLINE first answer is waited through unless the engine is assumed started", async () => {
    const a = scriptedClient({ [S]: [OFFLINE, ROLLING] });
    expect((await a.client.waitForEngineStatus("ENGINE.ROLLING")).status).toBe("ENGINE.ROLLING");
    const b = scriptedClient({ [S]: [OFFLINE, ROLLING] });
    await expect(b.client.waitForEngineStatus("ENGINE.ROLLING", { assumeStarted: true })).rejects.toBeInstanceOf(SwarmServerOfflineError);
  });

  it("polls with the client's status timeout", async () => {
    vi.useFakeTimers();
    const { client, log } = scriptedClient({ [S]: [never, ROLLING] }, { timeoutsMs: { getEngineStatus: 25 } });
    const outcome = client.waitForEngineStatus("ENGINE.ROLLING");
    await vi.advanceTimersByTimeAsync(25);
    expect((await outcome).status).toBe("ENGINE.ROLLING");
    expect(log.lines.some((l) => l.level === "debug" && l.msg.includes("timed out after 25 ms"))).toBe(true);
  });
});

describe("throttled claims of one client are taken one at a time (Python _begin_episode_lock)", () => {
  it("the second claim reads the pool only after the first claim was answered", async () => {
    const policy = { ratio: 0.5, expected_batch_size: 32, expected_num_repeat: 4, current_task_id: "gsm8k:train:1" };
    let releaseFirst!: () => void;
    const firstClaim = new Promise<void>((r) => (releaseFirst = r));
    const { client, server } = scriptedClient({
      [S]: ROLLING,
      "GET /get_current_batch_rollout_pool_information": json(200, {}),
      "POST /claim_episode": [async () => (await firstClaim, claimOk(E1)()), claimOk("e2000000000000000000000000000002")],
    });
    const a = client.beginEpisode({ throttlePolicy: policy });
    const b = client.beginEpisode({ throttlePolicy: { ...policy, current_task_id: "gsm8k:train:2" } });
    await vi.waitFor(() => expect(server.callsTo("POST /claim_episode")).toHaveLength(1), { timeout: 5_000 });
    expect(server.callsTo("GET /get_current_batch_rollout_pool_information")).toHaveLength(1);
    releaseFirst();
    expect([(await a).episodeUuid, (await b).episodeUuid]).toEqual([E1, "e2000000000000000000000000000002"]);
    expect(server.routes().filter((r) => r !== S)).toEqual(["GET /get_current_batch_rollout_pool_information", "POST /claim_episode", "GET /get_current_batch_rollout_pool_information", "POST /claim_episode"]);
  });

  it("a failed throttled claim does not hold the next one", async () => {
    const policy = { ratio: 0.5, expected_batch_size: 32, expected_num_repeat: 4, current_task_id: "gsm8k:train:1" };
    const { client } = scriptedClient({
      [S]: ROLLING,
      "GET /get_current_batch_rollout_pool_information": json(200, {}),
      "POST /claim_episode": [json(400, { detail: "bad" }), claimOk(E1)],
    });
    await expect(client.beginEpisode({ throttlePolicy: policy })).rejects.toThrow("bad");
    expect((await client.beginEpisode({ throttlePolicy: policy })).episodeUuid).toBe(E1);
  });
});

describe("end and abort edges", () => {
  it("a missing task is refused as input, before any request", async () => {
    const { client, server } = scriptedClient({ "POST /end_episode": json(200, { success: true }) });
    for (const task of [null, undefined, {}]) {
      const err = (await client.endEpisode(task as never, E1, { reward: 1 }).catch((e: unknown) => e)) as SwarmInputError;
      expect(err).toBeInstanceOf(SwarmInputError);
      expect(err.field).toBe("task.task_id");
    }
    expect(server.calls).toHaveLength(0);
  });

  it("a resend counts only 'not found' as delivered: any other refusal is still a refusal", async () => {
    const { client } = scriptedClient({ "POST /end_episode": json(400, { detail: ServerText.episodeNotClaimed(E1) }) });
    expect(await client.endEpisode("t", E1, { reward: 1 }, { isResend: true })).toMatchObject({ kind: "expired", reason: "notClaimed" });
  });

  it("an end answered success:false names the episode and the endpoint, with no server reason", async () => {
    const { client } = scriptedClient({ "POST /end_episode": json(200, { success: false }) });
    const err = (await client.endEpisode("t", E1, { reward: 1 }).catch((e: unknown) => e)) as SwarmOperationError;
    expect([err.message, err.endpoint, err.reason]).toEqual([`Failed to end episode ${E1}`, "endEpisode", ""]);
  });

  it("an empty uuid or task id is refused naming the field and what to pass", async () => {
    const { client } = scriptedClient({});
    expect(((await client.endEpisode("t", "", { reward: 1 }).catch((e: unknown) => e)) as Error).message).toBe("episodeUuid: is empty; pass the uuid returned by claimEpisode/beginEpisode");
    expect(((await client.endEpisode("", E1, { reward: 1 }).catch((e: unknown) => e)) as Error).message).toBe(
      "task.task_id: is empty; give every task a stable, namespaced id when it is loaded (e.g. gsm8k:train:0)",
    );
  });

  it("the abort sent instead of a locally expired end takes the caller's signal", async () => {
    const { client, server, clock } = scriptedClient({ "POST /claim_episode": claimOk(E1), "POST /abort_episode": json(200, { success: true }) }, { localExpiry: true });
    await client.claimEpisode({ discardEpisodeTimeoutSeconds: 60 });
    clock.advance(1_000_000);
    await expect(client.endEpisode("t", E1, { reward: 1 }, { signal: AbortSignal.abort("stop") })).rejects.toBeInstanceOf(SwarmAbortError);
    expect(server.callsTo("POST /abort_episode")).toHaveLength(0);
  });

  it("a successful abort logs nothing", async () => {
    const { client, log } = scriptedClient({ "POST /abort_episode": json(200, { success: true }) });
    expect(await client.abortEpisode(E1)).toBe(true);
    expect(log.lines).toEqual([]);
  });

  it("a refused end is logged with its kind, reason and the server's detail", async () => {
    const { client, log } = scriptedClient({ "POST /end_episode": json(400, { detail: ServerText.episodeNotFound(E1) }) });
    await client.endEpisode("t", E1, { reward: 1 });
    expect(log.lines).toContainEqual({ level: "warn", msg: `end_episode ${E1}: lost (notFound): ${ServerText.episodeNotFound(E1)}` });
  });

  it("a locally expired episode is logged as aborted instead of ended", async () => {
    const { client, log, clock } = scriptedClient({ "POST /claim_episode": claimOk(E1), "POST /abort_episode": json(200, { success: true }) }, { localExpiry: true });
    await client.claimEpisode({ discardEpisodeTimeoutSeconds: 60 });
    clock.advance(480_000 + 5);
    await client.endEpisode("t", E1, { reward: 1 });
    expect(log.lines.filter((l) => l.level === "warn").map((l) => l.msg)).toEqual([
      `Episode ${E1} has expired (5 ms ago). Aborting instead of ending: it outlived its local lifetime (a multiple of discard_episode_timeout), so the server may have reverted it.`,
    ]);
  });

  it("an abort forgets the episode's local expiry: a later end of the same uuid is sent", async () => {
    const { client, server, clock } = scriptedClient({ "POST /claim_episode": claimOk(E1), "POST /abort_episode": json(200, { success: true }), "POST /end_episode": json(200, { success: true }) }, { localExpiry: true });
    await client.claimEpisode({ discardEpisodeTimeoutSeconds: 60 });
    await client.abortEpisode(E1);
    clock.advance(1_000_000);
    expect((await client.endEpisode("t", E1, { reward: 1 })).kind).toBe("ended");
    expect(server.callsTo("POST /abort_episode")).toHaveLength(1);
  });

  it("abort: success:false is logged and returned; an empty uuid is refused (quietly: false); the caller's abort is thrown even when quiet", async () => {
    const { client, server, log } = scriptedClient({ "POST /abort_episode": json(200, { success: false }) });
    expect(await client.abortEpisode(E1)).toBe(false);
    expect(log.lines).toContainEqual({ level: "error", msg: `Failed to abort episode ${E1}` });
    await expect(client.abortEpisode("")).rejects.toBeInstanceOf(SwarmInputError);
    expect(await client.abortEpisode("", { quiet: true })).toBe(false);
    expect(log.lines.at(-1)).toEqual({ level: "error", msg: "Error aborting episode : episodeUuid: is empty; nothing to abort" });
    await expect(client.abortEpisode(E1, { quiet: true, signal: AbortSignal.abort() })).rejects.toBeInstanceOf(SwarmAbortError);
    expect(server.callsTo("POST /abort_episode")).toHaveLength(1);
  });
});
