/**
 * The agree-mode client methods (spec §3.14, §7.3; llm-routes §10): `agreeSyncWeight` (one vote: body, refusals as
 * values, the local mode check), `agreeSyncWeightAndWait` (the Python loop: not rolling → false, retry every 2 s,
 * then wait until the engine moves on) and `getActiveClientEntry`, against a scripted server and against the
 * in-process emulator in the all-agree mode.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { SwarmAbortError, SwarmAPIError, SwarmClient, SwarmDeadlineError, SwarmInputError, SwarmServerOfflineError } from "../../../src/client/index.ts";
import { createEmulator, createManualClock, type Emulator } from "../../../src/emulator/index.ts";
import { ENGINE, ServerText } from "../../../src/protocol/index.ts";
import { advancingFetch } from "../../support/emulator-fetch.ts";
import { json, never, recordingLogger, scriptedClient, status, text } from "./_support.ts";

const ALL = "rollout_until_all_clients_agree_sync_weight";

describe("agreeSyncWeight (one vote)", () => {
  it("posts exactly {client_uuid} with the 10 s timeout and maps the answers", async () => {
    const { client, server } = scriptedClient({
      "POST /agree_sync_weight": [
        json(200, { success: true, failure_reason: "" }),
        json(200, { success: false, failure_reason: ServerText.notInActiveList("client-1") }),
        json(200, { success: false, failure_reason: "client_uuid required" }),
        text(500, "Internal Server Error"),
      ],
    });
    expect(await client.agreeSyncWeight()).toEqual({ agreed: true });
    expect(server.calls[0]?.body).toEqual({ client_uuid: "client-1" });
    expect(await client.agreeSyncWeight()).toEqual({ agreed: false, reason: "notActive", failureReason: ServerText.notInActiveList("client-1") });
    expect(await client.agreeSyncWeight()).toEqual({ agreed: false, reason: "clientUuidRequired", failureReason: "client_uuid required" });
    await expect(client.agreeSyncWeight()).rejects.toBeInstanceOf(SwarmAPIError); // the server's assert: not an agree mode
  });

  it("refuses locally, before any request, when the synced job is not in an agree mode", async () => {
    const { client, server } = scriptedClient({ "GET /get_engine_status": status(ENGINE.OFFLINE), "POST /sync_train_config": json(200, { success: true }) });
    await client.syncTrainConfig({ toYaml: () => "ajet: {}\n", sampleCollectionMethod: "rollout_until_finish_enough_tasks" });
    await expect(client.agreeSyncWeight()).rejects.toThrow(SwarmInputError);
    await expect(client.agreeSyncWeight()).rejects.toThrow(/agree_sync_weight needs rollout_until_any_client_agree_sync_weight/);
    expect(server.callsTo("POST /agree_sync_weight")).toHaveLength(0);
  });
});

describe("agreeSyncWeightAndWait (the Python loop)", () => {
  it("returns false at once when the engine is not ROLLING / ROLLING_POST", async () => {
    const { client, server } = scriptedClient({ "GET /get_engine_status": status(ENGINE.WEIGHT_SYNCING) });
    expect(await client.agreeSyncWeightAndWait()).toBe(false);
    expect(server.callsTo("POST /agree_sync_weight")).toHaveLength(0);
  });

  it("retries every 2 s after a refusal or a 5xx, then waits until ROLLING_POST", async () => {
    const { client, server, clock } = scriptedClient({
      "GET /get_engine_status": [status(ENGINE.ROLLING, 3), status(ENGINE.ROLLING, 3), status(ENGINE.ROLLING_POST, 3)],
      "POST /agree_sync_weight": [json(200, { success: false, failure_reason: ServerText.notInActiveList("client-1") }), text(502, "Bad Gateway"), json(200, { success: true, failure_reason: "" })],
    });
    expect(await client.agreeSyncWeightAndWait()).toBe(true);
    expect(server.callsTo("POST /agree_sync_weight")).toHaveLength(3);
    expect(clock.state.sleeps.slice(0, 2)).toEqual([2_000, 2_000]);
  });

  it("counts a higher global_step as the sync having happened (a sync faster than the poll)", async () => {
    const { client } = scriptedClient({
      "GET /get_engine_status": [status(ENGINE.ROLLING, 3), status(ENGINE.ROLLING, 3), status(ENGINE.ROLLING, 4)],
      "POST /agree_sync_weight": json(200, { success: true, failure_reason: "" }),
    });
    expect(await client.agreeSyncWeightAndWait()).toBe(true);
  });

  it("stops at its deadline while refused", async () => {
    const { client, clock } = scriptedClient({
      "GET /get_engine_status": status(ENGINE.ROLLING),
      "POST /agree_sync_weight": json(200, { success: false, failure_reason: ServerText.notInActiveList("client-1") }),
    });
    await expect(client.agreeSyncWeightAndWait({ deadlineMs: clock.now() + 7_000 })).rejects.toBeInstanceOf(SwarmDeadlineError);
  });
});

describe("against the emulator in the all-agree mode", () => {
  let emu: Emulator | null = null;
  afterEach(() => emu?.close());

  it("two clients: each is listed after its first end, the batch closes when both agreed, then the list is empty", async () => {
    const clock = createManualClock();
    emu = createEmulator({ profile: "fast", clock, seed: 5, timings: { weightSyncMs: 30_000 } });
    const fetch = advancingFetch(emu, clock);
    const make = (clientUuid: string) =>
      new SwarmClient({ baseURL: "http://127.0.0.1:10086", clientUuid, fetch, now: () => clock.nowMs(), sleep: (ms) => clock.advance(ms), random: () => 0.5, logger: recordingLogger().logger });
    const a = make("run-a");
    const b = make("run-b");
    const yaml = ["ajet:", "  data:", "    train_batch_size: 1", "  rollout:", "    num_repeat: 1", "    max_env_worker: 8", `  swarm_mode_sample_collection_method: ${ALL}`, ""].join("\n");
    await a.autoSyncTrainConfigAndStartEngine({ toYaml: () => yaml, sampleCollectionMethod: ALL });
    for (const client of [a, b]) {
      expect(await client.getActiveClientEntry()).toBeNull();
      const ep = await client.beginEpisode({ discardEpisodeTimeoutSeconds: 60 });
      const key = ep.apiKey;
      await fetch(`${ep.baseUrl}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }) });
      expect((await client.endEpisode("t", ep.episodeUuid, { reward: 1 })).kind).toBe("ended");
      expect(await client.getActiveClientEntry()).toMatchObject({ client_uuid: client.clientUuid, allowed_sync_weight: false });
    }
    expect(await a.agreeSyncWeight()).toEqual({ agreed: true });
    expect(await a.getActiveClientEntry()).toMatchObject({ allowed_sync_weight: true });
    await clock.advance(1_000);
    expect(emu.engine.status).toBe(ENGINE.ROLLING); // b has not agreed
    expect(await b.agreeSyncWeightAndWait({ deadlineMs: clock.nowMs() + 60_000 })).toBe(true);
    expect([ENGINE.ROLLING_POST, ENGINE.WEIGHT_SYNCING]).toContain(emu.engine.status);
    await clock.advance(1_000);
    expect(emu.engine.status).toBe(ENGINE.WEIGHT_SYNCING);
    expect(await a.getActiveClientEntry()).toBeNull(); // the list and the votes are wiped at the sync
  });
});

describe("agree rules the runs above leave out", () => {
  const S = "GET /get_engine_status";
  const A = "POST /agree_sync_weight";
  const agreed = json(200, { success: true, failure_reason: "" });

  it("getActiveClientEntry finds this client's own entry among the listed ones; none listed, or no instruction at all, is null", async () => {
    const own = { client_uuid: "client-1", last_activity_at: 1_700_000_000, allowed_sync_weight: true };
    const other = { client_uuid: "client-2", last_activity_at: 1_700_000_001, allowed_sync_weight: false };
    const { client } = scriptedClient({
      "GET /get_current_batch_rollout_pool_information": [
        json(200, { swarm_client_instruction: { active_clients: [other, own] } }),
        json(200, { swarm_client_instruction: { active_clients: [other] } }),
        json(200, {}),
      ],
    });
    expect(await client.getActiveClientEntry()).toEqual(own);
    expect(await client.getActiveClientEntry()).toBeNull();
    expect(await client.getActiveClientEntry()).toBeNull();
  });

  it("a refusal that is neither 'not active' nor 'client_uuid required' is reason other, with the server's text", async () => {
    const { client } = scriptedClient({ [A]: json(200, { success: false, failure_reason: "batch already closed" }) });
    expect(await client.agreeSyncWeight()).toEqual({ agreed: false, reason: "other", failureReason: "batch already closed" });
  });

  it("the local mode check names the field and the job's method, and stops the loop before it reads the status; a job without a method is not checked", async () => {
    const { client, server } = scriptedClient({ [S]: [status(ENGINE.OFFLINE), status(ENGINE.OFFLINE), status(ENGINE.ROLLING, 1), status(ENGINE.ROLLING_POST, 1)], "POST /sync_train_config": json(200, { success: true }), [A]: agreed });
    await client.syncTrainConfig({ toYaml: () => "ajet: {}\n", sampleCollectionMethod: "rollout_until_finish_enough_tasks" });
    const err = (await client.agreeSyncWeightAndWait().catch((e: unknown) => e)) as SwarmInputError;
    expect(err).toBeInstanceOf(SwarmInputError);
    expect(err.field).toBe("sampleCollectionMethod");
    expect(err.message).toContain("is rollout_until_finish_enough_tasks;");
    expect(server.routes()).toEqual([S, "POST /sync_train_config"]);
    await client.syncTrainConfig({ toYaml: () => "ajet: {}\n" });
    expect(await client.agreeSyncWeightAndWait()).toBe(true);
  });

  it("a vote is cast from ROLLING_POST too, and WEIGHT_SYNCING after it means the sync began", async () => {
    const { client, server } = scriptedClient({ [S]: [status(ENGINE.ROLLING_POST, 3), status(ENGINE.WEIGHT_SYNCING, 3)], [A]: agreed });
    expect(await client.agreeSyncWeightAndWait()).toBe(true);
    expect(server.routes()).toEqual([S, A, S]);
  });

  it("after the vote it polls every 5 s (a failed poll too) while the step is the same or unknown, until a higher step", async () => {
    const { client, server, clock } = scriptedClient({
      [S]: [status(ENGINE.ROLLING, 3), status(ENGINE.ROLLING, 3), () => Promise.reject(new TypeError("fetch failed")), status(ENGINE.ROLLING, null), status(ENGINE.ROLLING, 4)],
      [A]: agreed,
    });
    expect(await client.agreeSyncWeightAndWait()).toBe(true);
    expect(server.callsTo(S)).toHaveLength(5);
    expect(clock.state.sleeps).toEqual([5_000, 5_000, 5_000]);
    // a step unknown at the start never counts as passed
    const b = scriptedClient({ [S]: [status(ENGINE.ROLLING, null), status(ENGINE.ROLLING, 7), status(ENGINE.ROLLING_POST, 7)], [A]: agreed });
    expect(await b.client.agreeSyncWeightAndWait()).toBe(true);
    expect(b.server.callsTo(S)).toHaveLength(3);
  });

  it("OFFLINE after the vote is SwarmServerOfflineError naming what it waited for", async () => {
    const { client } = scriptedClient({ [S]: [status(ENGINE.ROLLING, 3), status(ENGINE.OFFLINE, null)], [A]: agreed });
    const err = (await client.agreeSyncWeightAndWait().catch((e: unknown) => e)) as SwarmServerOfflineError;
    expect(err).toBeInstanceOf(SwarmServerOfflineError);
    expect(err.waitingFor).toEqual([ENGINE.ROLLING_POST, ENGINE.WEIGHT_SYNCING]);
  });

  it("a vote refused or failed is logged with the server's reason or the error; a non-retryable error is thrown at once", async () => {
    const { client, log } = scriptedClient({
      [S]: [status(ENGINE.ROLLING, 3), status(ENGINE.ROLLING_POST, 3)],
      [A]: [json(200, { success: false, failure_reason: "not yet" }), text(503, "busy"), agreed],
    });
    expect(await client.agreeSyncWeightAndWait()).toBe(true);
    expect(log.lines.filter((l) => l.level === "warn").map((l) => l.msg)).toEqual([
      "agree_sync_weight refused: not yet",
      "agree_sync_weight failed: SwarmClient error 503 on POST /agree_sync_weight: busy",
    ]);
    const b = scriptedClient({ [S]: status(ENGINE.ROLLING, 3), [A]: json(400, { detail: "bad client" }) });
    await expect(b.client.agreeSyncWeightAndWait()).rejects.toBeInstanceOf(SwarmAPIError);
    expect(b.server.callsTo(A)).toHaveLength(1);
    expect(b.clock.state.sleeps).toEqual([]);
  });

  it("the caller's signal cuts a status read in flight while it waits for the sync", async () => {
    const ac = new AbortController();
    const { client, server } = scriptedClient({ [S]: [status(ENGINE.ROLLING, 3), never], [A]: agreed });
    const outcome = client.agreeSyncWeightAndWait({ signal: ac.signal }).catch((e: unknown) => e);
    await vi.waitFor(() => expect(server.callsTo(S)).toHaveLength(2), { timeout: 5_000 });
    ac.abort("run stopped");
    const err = (await outcome) as SwarmAbortError;
    expect(err).toBeInstanceOf(SwarmAbortError);
    expect(err.message).toBe("GET /get_engine_status aborted by the caller's signal");
    expect(server.callsTo(S)[1]!.signal!.aborted).toBe(true);
  });

  it("each vote's timeout is capped by the time left before the deadline", async () => {
    vi.useFakeTimers();
    try {
      const { client, log, clock } = scriptedClient({ [S]: status(ENGINE.ROLLING, 3), [A]: () => new Promise<Response>(() => undefined) });
      const outcome = client.agreeSyncWeightAndWait({ deadlineMs: clock.now() + 3_000 }).catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(3_000); // the first vote: 3 s left (not its 10 s)
      await vi.advanceTimersByTimeAsync(1_000); // after a 2 s pause: 1 s left
      const err = (await outcome) as SwarmDeadlineError;
      expect(err).toBeInstanceOf(SwarmDeadlineError);
      expect(err.message).toBe("agreeSyncWeight: deadline reached (last engine status: ENGINE.ROLLING)");
      expect(log.lines.filter((l) => l.level === "warn").map((l) => l.msg)).toEqual([
        "agree_sync_weight failed: POST /agree_sync_weight timed out after 3000 ms (the server may still complete it)",
        "agree_sync_weight failed: POST /agree_sync_weight timed out after 1000 ms (the server may still complete it)",
      ]);
    } finally {
      vi.useRealTimers();
    }
  });
});
