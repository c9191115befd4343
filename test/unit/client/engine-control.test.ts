import { describe, expect, it } from "vitest";
import {
  isCannotConnect,
  SwarmAbortError,
  SwarmConnectionError,
  SwarmDeadlineError,
  SwarmEngineStateError,
  SwarmInputError,
  SwarmOperationError,
  SwarmServerOfflineError,
} from "../../../src/client/index.ts";
import { fakeClock, json, refused, scriptedClient, status } from "./_support.ts";

const S = "GET /get_engine_status";
const SYNC = "POST /sync_train_config";
const START = "POST /start_engine";
const STOP = "POST /stop_engine";
const OFFLINE = status("ENGINE.OFFLINE", null);
const BOOTING = status("ENGINE.BOOTING", null);
const ROLLING = status("ENGINE.ROLLING", 1);
const ok = json(200, { success: true });
const job = { toYaml: () => "ajet:\n  data:\n    train_batch_size: 4\n", sampleCollectionMethod: "rollout_until_finish_enough_tasks" };

describe("engine status (spec §3.6, §2.1)", () => {
  it("maps the wire body to camelCase and keeps global_step null", async () => {
    const { client } = scriptedClient({ [S]: json(200, { engine_status: "ENGINE.BOOTING", engine_status_detail: "loading", global_step: null }) });
    expect(await client.getEngineStatus()).toEqual({ status: "ENGINE.BOOTING", detail: "loading", globalStep: null });
  });
  it("keeps the pseudo status CANNOT_CONNECT in a separate method", async () => {
    const { client } = scriptedClient({ [S]: refused });
    const snap = await client.getEngineStatusOrCannotConnect();
    expect(snap.status).toBe("ENGINE.CANNOT_CONNECT");
    expect(isCannotConnect(snap) && snap.error).toBeInstanceOf(SwarmConnectionError);
    await expect(client.getEngineStatus()).rejects.toBeInstanceOf(SwarmConnectionError);
    await expect(client.getEngineStatusOrCannotConnect({ signal: AbortSignal.abort() })).rejects.toBeInstanceOf(SwarmAbortError);
  });
});

describe("syncTrainConfig (spec §3.2)", () => {
  it("sends exactly {yaml_as_string: job.toYaml()}", async () => {
    const { client, server } = scriptedClient({ [S]: OFFLINE, [SYNC]: ok });
    await client.syncTrainConfig(job);
    expect(server.callsTo(SYNC)[0]!.body).toEqual({ yaml_as_string: job.toYaml() });
    await client.syncTrainConfig("ajet: {}\n");
    expect(server.callsTo(SYNC)[1]!.body).toEqual({ yaml_as_string: "ajet: {}\n" });
  });
  it("refuses locally when the engine is not OFFLINE", async () => {
    const { client, server } = scriptedClient({ [S]: ROLLING, [SYNC]: ok });
    const err = (await client.syncTrainConfig(job).catch((e: unknown) => e)) as SwarmEngineStateError;
    expect(err).toBeInstanceOf(SwarmEngineStateError);
    expect(err.message).toBe("Cannot sync train config when engine is NOT ENGINE.OFFLINE. (current status: ENGINE.ROLLING)");
    expect(server.callsTo(SYNC)).toHaveLength(0);
  });
  it("success:false is an error", async () => {
    const { client } = scriptedClient({ [S]: OFFLINE, [SYNC]: json(200, { success: false, error: "disk full" }) });
    await expect(client.syncTrainConfig(job)).rejects.toThrow("Failed to sync train config: disk full");
  });
});

describe("startEngine / stopEngine (spec §3.4, §3.5)", () => {
  it("starts and waits until ROLLING", async () => {
    const { client, server, clock } = scriptedClient({ [S]: [OFFLINE, BOOTING, BOOTING, ROLLING], [START]: json(200, { success: true, pid: 1 }) });
    expect(await client.startEngine()).toEqual({ status: "ENGINE.ROLLING", detail: null, globalStep: 1 });
    expect(server.routes()).toEqual([S, START, S, S, S]);
    expect(server.callsTo(START)[0]!.body).toEqual({});
    expect(clock.state.sleeps).toEqual([5_000, 5_000]);
  });
  it("raises if the engine falls back to OFFLINE while booting", async () => {
    const { client } = scriptedClient({ [S]: [OFFLINE, OFFLINE], [START]: json(200, { success: true, pid: 1 }) });
    await expect(client.startEngine()).rejects.toBeInstanceOf(SwarmServerOfflineError);
  });
  it("refuses when not OFFLINE; success:false is an error", async () => {
    const a = scriptedClient({ [S]: ROLLING, [START]: ok });
    await expect(a.client.startEngine()).rejects.toBeInstanceOf(SwarmEngineStateError);
    expect(a.server.callsTo(START)).toHaveLength(0);
    const b = scriptedClient({ [S]: OFFLINE, [START]: json(200, { success: false, error: "No training config found" }) });
    const err = await b.client.startEngine().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SwarmOperationError);
    expect((err as Error).message).toBe("Failed to start training engine: No training config found");
  });
  it("a deadline bounds the wait for ROLLING", async () => {
    const { client, clock } = scriptedClient({ [S]: [OFFLINE, BOOTING], [START]: json(200, { success: true, pid: 1 }) });
    await expect(client.startEngine({ deadlineMs: clock.now() + 30_000 })).rejects.toBeInstanceOf(SwarmDeadlineError);
    expect(clock.state.sleeps.reduce((a, b) => a + b, 0)).toBe(30_000);
  });
  it("stop is a no-op when OFFLINE, else stops and waits for OFFLINE", async () => {
    const a = scriptedClient({ [S]: OFFLINE, [STOP]: ok });
    expect((await a.client.stopEngine()).status).toBe("ENGINE.OFFLINE");
    expect(a.server.callsTo(STOP)).toHaveLength(0);
    const b = scriptedClient({ [S]: [ROLLING, ROLLING, OFFLINE], [STOP]: json(200, { success: true, failure_reason: "" }) });
    await b.client.stopEngine();
    expect(b.server.routes()).toEqual([S, STOP, S, S]);
  });
});

describe("autoSyncTrainConfigAndStartEngine (spec §4.5)", () => {
  it("OFFLINE → sync + start + wait for ROLLING", async () => {
    const { client, server } = scriptedClient({ [S]: [OFFLINE, OFFLINE, OFFLINE, BOOTING, ROLLING], [SYNC]: ok, [START]: json(200, { success: true, pid: 7 }) });
    const r = await client.autoSyncTrainConfigAndStartEngine(job);
    expect(r).toEqual({ action: "started", engine: { status: "ENGINE.ROLLING", detail: null, globalStep: 1 } });
    expect(server.routes()).toEqual([S, S, SYNC, S, START, S, S]);
  });
  it.each(["ENGINE.ROLLING", "ENGINE.ROLLING_POST"])("%s → nothing", async (s) => {
    const { client, server } = scriptedClient({ [S]: status(s) });
    expect((await client.autoSyncTrainConfigAndStartEngine(job)).action).toBe("alreadyRolling");
    expect(server.routes()).toEqual([S]);
  });
  it.each(["ENGINE.BOOTING", "ENGINE.WEIGHT_SYNCING"])("%s → wait for ROLLING", async (s) => {
    const { client, server } = scriptedClient({ [S]: [status(s), status(s), ROLLING] });
    expect((await client.autoSyncTrainConfigAndStartEngine(job)).action).toBe("waitedForRolling");
    expect(server.routes()).toEqual([S, S, S]);
  });
  it("WEIGHT_EXPORTING → error", async () => {
    const { client } = scriptedClient({ [S]: status("ENGINE.WEIGHT_EXPORTING") });
    await expect(client.autoSyncTrainConfigAndStartEngine(job)).rejects.toThrow(
      "Cannot sync train config or start engine when engine is in status: ENGINE.WEIGHT_EXPORTING",
    );
  });
  it("BC-28 CANNOT_CONNECT waits 16 s and retries once, then fails without bootstrapping", async () => {
    const { client, server, clock } = scriptedClient({ [S]: refused, [SYNC]: ok, [START]: ok });
    const err = await client.autoSyncTrainConfigAndStartEngine(job).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SwarmConnectionError);
    expect((err as Error).message).toBe("Unable to connect to swarm server.");
    expect(clock.state.sleeps).toEqual([16_000]);
    expect(server.routes()).toEqual([S, S]);
  });
  it("CANNOT_CONNECT then ROLLING proceeds", async () => {
    const { client } = scriptedClient({ [S]: [refused, ROLLING] });
    expect((await client.autoSyncTrainConfigAndStartEngine(job)).action).toBe("alreadyRolling");
  });
  it("forceRestart stops first and pauses 8 s", async () => {
    const { client, server, clock } = scriptedClient({
      [S]: [ROLLING, OFFLINE, OFFLINE, OFFLINE, OFFLINE, ROLLING],
      [STOP]: json(200, { success: true, failure_reason: "" }),
      [SYNC]: ok,
      [START]: json(200, { success: true, pid: 7 }),
    });
    expect((await client.autoSyncTrainConfigAndStartEngine(job, { forceRestart: true })).action).toBe("started");
    expect(server.routes()).toEqual([S, STOP, S, S, S, SYNC, S, START, S]);
    expect(clock.state.sleeps).toEqual([8_000]);
  });
});

describe("small reads", () => {
  it("health, server experiment dir, episode buffer, rollout stat, can_continue", async () => {
    const { client, server } = scriptedClient({
      "GET /health": json(200, { status: "ok" }),
      "GET /get_server_experiment_dir": json(200, { server_experiment_dir: null }),
      "POST /get_episode_buffer": json(200, { buffer: [{ episode_uuid: "e1", episode_status: "registered" }] }),
      "GET /get_current_batch_rollout_pool_information": json(200, { completed_episodes: 3 }),
      "POST /can_continue_episode": json(200, { can_continue: false }),
    });
    expect(await client.health()).toEqual({ status: "ok" });
    expect(await client.getServerExperimentDir()).toBeNull();
    expect((await client.getEpisodeBuffer())[0]).toMatchObject({ episode_uuid: "e1", episode_status: "registered", discard_episode_timeout: -1 });
    expect(await client.getRolloutStat()).toMatchObject({ completed_episodes: 3, running_episode_details: null });
    expect(await client.canContinueEpisode("e1")).toBe(false);
    expect(await client.canContinueEpisode("")).toBe(false);
    expect(server.callsTo("POST /get_episode_buffer")[0]!.body).toEqual({});
    expect(server.callsTo("POST /can_continue_episode")).toHaveLength(1);
  });
  it("withOptions keeps the client uuid and changes options", async () => {
    const { client } = scriptedClient({});
    const other = client.withOptions({ baseURL: "https://gw.example.com/ajet/" });
    expect(other.clientUuid).toBe(client.clientUuid);
    expect(other.baseURL).toBe("https://gw.example.com/ajet");
  });
});

describe("engine control: the refusals and answers the calls above leave out", () => {
  const CODE = "POST /sync_train_code";
  const zip = new Uint8Array([0x50, 0x4b, 3, 4]);

  it("syncTrainConfig refuses an empty or blank YAML before any request; success:false without an error says only what failed", async () => {
    const { client, server } = scriptedClient({ [S]: OFFLINE, [SYNC]: json(200, { success: false }) });
    for (const yaml of ["", "  \n\t"]) {
      const err = (await client.syncTrainConfig(yaml).catch((e: unknown) => e)) as SwarmInputError;
      expect(err).toBeInstanceOf(SwarmInputError);
      expect(err.field).toBe("job");
    }
    expect(server.callsTo(SYNC)).toHaveLength(0);
    const err = (await client.syncTrainConfig(job).catch((e: unknown) => e)) as SwarmOperationError;
    expect([err.message, err.reason, err.endpoint]).toEqual(["Failed to sync train config", "", "syncTrainConfig"]);
  });

  it("a raw YAML sync forgets the job synced before it (its collection method no longer applies)", async () => {
    const { client, server, log } = scriptedClient({ [S]: OFFLINE, [SYNC]: ok, "POST /agree_sync_weight": json(200, { success: true, failure_reason: "" }) });
    await client.syncTrainConfig(job); // rollout_until_finish_enough_tasks: no agree mode
    await expect(client.agreeSyncWeight()).rejects.toBeInstanceOf(SwarmInputError);
    await client.syncTrainConfig("ajet: {}\n");
    expect(await client.agreeSyncWeight()).toEqual({ agreed: true });
    expect(server.callsTo("POST /agree_sync_weight")).toHaveLength(1);
    expect(log.lines.filter((l) => l.level === "info").map((l) => l.msg)).toEqual(["Synced train config to Swarm server", "Synced train config to Swarm server"]);
  });

  it("syncTrainCode: an empty archive is refused before any request; not OFFLINE is refused before the upload", async () => {
    const a = scriptedClient({ [S]: OFFLINE, [CODE]: ok });
    const empty = (await a.client.syncTrainCode(new Uint8Array()).catch((e: unknown) => e)) as SwarmInputError;
    expect(empty).toBeInstanceOf(SwarmInputError);
    expect(empty.field).toBe("zip");
    expect(a.server.calls).toHaveLength(0);
    const b = scriptedClient({ [S]: ROLLING, [CODE]: ok });
    const busy = (await b.client.syncTrainCode(zip).catch((e: unknown) => e)) as SwarmEngineStateError;
    expect(busy).toBeInstanceOf(SwarmEngineStateError);
    expect(busy.engineStatus).toBe("ENGINE.ROLLING");
    expect(busy.message).toBe("Cannot sync train code when engine is NOT ENGINE.OFFLINE. (current status: ENGINE.ROLLING); stop the engine first (--force-restart)");
    expect(b.server.routes()).toEqual([S]);
  });

  it("syncTrainCode returns where the server put the code and its message (null and empty when unsaid); success:false is an error", async () => {
    const { client, server, log } = scriptedClient({
      [S]: OFFLINE,
      [CODE]: [json(200, { success: true, temp_ajet_code_path: "/tmp/x/ajet", message: "extracted" }), json(200, { success: true }), json(200, { success: false, error: "not a zip" }), json(200, { success: false })],
    });
    expect(await client.syncTrainCode(zip)).toEqual({ tempAjetCodePath: "/tmp/x/ajet", message: "extracted" });
    expect(await client.syncTrainCode(zip)).toEqual({ tempAjetCodePath: null, message: "" });
    expect(server.routes()).toEqual([S, CODE, S, CODE]);
    await expect(client.syncTrainCode(zip)).rejects.toThrow(new SwarmOperationError("syncTrainCode", "Failed to sync train code", "not a zip"));
    const bare = (await client.syncTrainCode(zip).catch((e: unknown) => e)) as SwarmOperationError;
    expect(bare.message).toBe("Failed to sync train code");
    expect(log.lines.filter((l) => l.level === "info").map((l) => l.msg)).toEqual(["Synced training code to Swarm server", "Synced training code to Swarm server"]);
  });

  it("requestEngineStart returns the server's pid (null when unsaid) without waiting for ROLLING", async () => {
    const { client, server, clock, log } = scriptedClient({ [S]: OFFLINE, [START]: [json(200, { success: true, pid: 42 }), json(200, { success: true })] });
    expect(await client.requestEngineStart()).toBe(42);
    expect(await client.requestEngineStart()).toBeNull();
    expect(server.routes()).toEqual([S, START, S, START]);
    expect(clock.state.sleeps).toEqual([]);
    expect(log.lines.filter((l) => l.level === "info").map((l) => l.msg)).toEqual([
      "Started training engine (pid 42); waiting for ENGINE.ROLLING",
      "Started training engine (pid ?); waiting for ENGINE.ROLLING",
    ]);
  });

  it("requestEngineStart refuses when not OFFLINE (naming the status), and sends nothing past its deadline", async () => {
    const a = scriptedClient({ [S]: BOOTING, [START]: ok });
    const err = (await a.client.requestEngineStart().catch((e: unknown) => e)) as SwarmEngineStateError;
    expect(err.message).toBe("Cannot start engine when engine is NOT ENGINE.OFFLINE. (current status: ENGINE.BOOTING)");
    expect(err.engineStatus).toBe("ENGINE.BOOTING");
    const b = scriptedClient({ [S]: OFFLINE, [START]: ok });
    await expect(b.client.requestEngineStart({ deadlineMs: b.clock.now() - 1 })).rejects.toBeInstanceOf(SwarmDeadlineError);
    expect(b.server.callsTo(START)).toHaveLength(0);
    const c = scriptedClient({ [S]: OFFLINE, [START]: json(200, { success: false }) });
    const failed = (await c.client.requestEngineStart().catch((e: unknown) => e)) as SwarmOperationError;
    expect([failed.message, failed.endpoint]).toEqual(["Failed to start training engine", "startEngine"]);
  });

  it("stopEngine: success:false is an error carrying the server's reason", async () => {
    const { client } = scriptedClient({ [S]: ROLLING, [STOP]: json(200, { success: false, failure_reason: "engine busy" }) });
    const err = (await client.stopEngine().catch((e: unknown) => e)) as SwarmOperationError;
    expect(err).toBeInstanceOf(SwarmOperationError);
    expect([err.message, err.endpoint]).toEqual(["Failed to stop training engine: engine busy", "stopEngine"]);
  });

  it("auto start: OFFLINE syncs the job given, even a raw YAML; forceRestart warns; a status it cannot handle names it", async () => {
    const { client, server, log } = scriptedClient({ [S]: [OFFLINE, OFFLINE, OFFLINE, ROLLING], [SYNC]: ok, [START]: json(200, { success: true, pid: 1 }) });
    await client.autoSyncTrainConfigAndStartEngine("ajet: {raw: 1}\n");
    expect(server.callsTo(SYNC)[0]!.body).toEqual({ yaml_as_string: "ajet: {raw: 1}\n" });
    const b = scriptedClient({ [S]: [OFFLINE, status("ENGINE.WEIGHT_EXPORTING")], [STOP]: ok });
    const err = (await b.client.autoSyncTrainConfigAndStartEngine(job, { forceRestart: true }).catch((e: unknown) => e)) as SwarmEngineStateError;
    expect(err.engineStatus).toBe("ENGINE.WEIGHT_EXPORTING");
    expect(b.log.lines).toContainEqual({ level: "warn", msg: "Force restarting the engine..." });
    expect(log.lines.some((l) => l.level === "warn")).toBe(false);
  });

  it("auto start on a booting engine: OFFLINE next means it died (raised, not waited on); the deadline bounds the wait", async () => {
    const a = scriptedClient({ [S]: [BOOTING, OFFLINE, ROLLING] });
    await expect(a.client.autoSyncTrainConfigAndStartEngine(job)).rejects.toBeInstanceOf(SwarmServerOfflineError);
    const b = scriptedClient({ [S]: BOOTING });
    await expect(b.client.autoSyncTrainConfigAndStartEngine(job, { deadlineMs: b.clock.now() + 20_000 })).rejects.toBeInstanceOf(SwarmDeadlineError);
    expect(b.clock.state.sleeps.reduce((x, y) => x + y, 0)).toBe(20_000);
  });

  it("the auto start remembers the job it was given: a non-agree job refuses a vote afterwards", async () => {
    const { client, server } = scriptedClient({ [S]: ROLLING, "POST /agree_sync_weight": ok });
    await client.autoSyncTrainConfigAndStartEngine(job);
    await expect(client.agreeSyncWeight()).rejects.toBeInstanceOf(SwarmInputError);
    expect(server.callsTo("POST /agree_sync_weight")).toHaveLength(0);
  });

  it("getVerboseLogs returns the engine's entries", async () => {
    const entries = [{ timestamp: 1_700_000_000, tag: "rollout", message: "step 3" }];
    const { client } = scriptedClient({ "GET /get_verbose_logs": json(200, { entries }) });
    expect(await client.getVerboseLogs()).toEqual(entries);
  });
});

describe("the caller's signal reaches every read an engine control makes", () => {
  it("an already-fired signal sends no request at all", async () => {
    const ops: [string, (c: ReturnType<typeof scriptedClient>["client"], signal: AbortSignal) => Promise<unknown>][] = [
      ["syncTrainConfig", (c, signal) => c.syncTrainConfig(job, { signal })],
      ["syncTrainCode", (c, signal) => c.syncTrainCode(new Uint8Array([1]), { signal })],
      ["requestEngineStart", (c, signal) => c.requestEngineStart({ signal })],
      ["stopEngine", (c, signal) => c.stopEngine({ signal })],
      ["autoSyncTrainConfigAndStartEngine", (c, signal) => c.autoSyncTrainConfigAndStartEngine(job, { signal })],
      ["agreeSyncWeightAndWait", (c, signal) => c.agreeSyncWeightAndWait({ signal })],
    ];
    for (const [name, op] of ops) {
      const { client, server } = scriptedClient({ [S]: ROLLING, [STOP]: ok, "POST /agree_sync_weight": ok });
      await expect(op(client, AbortSignal.abort("stop")), name).rejects.toBeInstanceOf(SwarmAbortError);
      expect(server.calls, name).toEqual([]);
    }
  });

  it("a signal that fires during the auto start's sync is honoured by the sync", async () => {
    const ac = new AbortController();
    const { client, server } = scriptedClient({ [S]: [OFFLINE, () => (ac.abort("stop"), OFFLINE())], [SYNC]: ok });
    await expect(client.autoSyncTrainConfigAndStartEngine(job, { signal: ac.signal })).rejects.toBeInstanceOf(SwarmAbortError);
    expect(server.callsTo(SYNC)).toHaveLength(0);
  });

  it("a signal that fires as the vote is answered stops the wait before its next status read", async () => {
    const ac = new AbortController();
    const { client, server } = scriptedClient({ [S]: status("ENGINE.ROLLING", 3), "POST /agree_sync_weight": () => (ac.abort("stop"), ok()) });
    await expect(client.agreeSyncWeightAndWait({ signal: ac.signal })).rejects.toBeInstanceOf(SwarmAbortError);
    expect(server.routes()).toEqual([S, "POST /agree_sync_weight"]);
  });
});

describe("what the engine controls' refusals say", () => {
  it("an empty YAML or archive names the field and how to make one; a server it cannot reach carries the poll's error", async () => {
    const { client } = scriptedClient({ [S]: OFFLINE });
    expect(((await client.syncTrainConfig(" ").catch((e: unknown) => e)) as Error).message).toBe("job: the training YAML is empty; build it with AgentJetJob.toYaml()");
    expect(((await client.syncTrainCode(new Uint8Array()).catch((e: unknown) => e)) as Error).message).toBe("zip: the training code archive is empty; zip a directory holding ajet/");
    const down = scriptedClient({ [S]: refused });
    const err = (await down.client.autoSyncTrainConfigAndStartEngine(job).catch((e: unknown) => e)) as SwarmConnectionError;
    expect(err.endpoint).toBe("getEngineStatus");
    expect(err.cause).toBeInstanceOf(SwarmConnectionError);
    expect((err.cause as Error).message).toBe("GET /get_engine_status failed: fetch failed");
  });

  it("a deadline reached in the auto start's own pauses names the step (here a status read that took 2 s)", async () => {
    const clock = fakeClock();
    const slow = (reply: () => Response | Promise<Response>) => () => (clock.advance(2_000), reply());
    const clockOptions = { now: clock.now, sleep: clock.sleep, random: clock.random };
    const a = scriptedClient({ [S]: [ROLLING, slow(OFFLINE)], [STOP]: json(200, { success: true, failure_reason: "" }) }, clockOptions);
    const restart = (await a.client.autoSyncTrainConfigAndStartEngine(job, { forceRestart: true, deadlineMs: clock.now() + 1_000 }).catch((e: unknown) => e)) as SwarmDeadlineError;
    expect(restart).toBeInstanceOf(SwarmDeadlineError);
    expect(restart.message).toBe("forceRestart: deadline reached");
    const b = scriptedClient({ [S]: slow(refused) }, clockOptions);
    const unreachable = (await b.client.autoSyncTrainConfigAndStartEngine(job, { deadlineMs: clock.now() + 1_000 }).catch((e: unknown) => e)) as SwarmDeadlineError;
    expect(unreachable).toBeInstanceOf(SwarmDeadlineError);
    expect(unreachable.message).toBe("autoSyncTrainConfigAndStartEngine: deadline reached");
  });
});
