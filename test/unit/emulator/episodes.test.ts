/**
 * Episode semantics of the emulator's server (spec §3.8–3.14, §5): FIFO claims, end checks in the server's
 * order, abort in ROLLING vs ROLLING_POST, the idle janitor, BC-29 drops, eval episodes, pool information,
 * FastAPI errors, verbose logs, sync_train_code, and the fault hooks.
 */
import { describe, expect, it } from "vitest";
import { ENGINE, ServerText } from "../../../src/protocol/index.ts";
import { abort, bootToRolling, call, callAdvancing, chat, claim, end, makeEmulator, runEpisode, yamlConfig } from "./helpers.ts";

const rolling = async (config: Parameters<typeof bootToRolling>[2] = { batchSize: 2, numRepeat: 2, maxEnvWorker: 4 }, options = {}) => {
  const { emu, clock } = makeEmulator(options);
  await bootToRolling(emu, clock, config);
  return { emu, clock };
};

describe("claim (spec §3.8)", () => {
  it("hands out the queue head, with the engine's base URL and an sk-ajet- key for that uuid", async () => {
    const { emu } = await rolling();
    const head = emu.engine.queue[0];
    const c = await claim(emu);
    expect(c.episode_uuid).toBe(head);
    expect(c.openai_base_url).toBe("http://127.0.0.1:10086/v1");
    const payload = JSON.parse(Buffer.from(c.openai_api_key.slice("sk-ajet-".length), "base64").toString());
    expect(payload).toEqual({ agent_name: "default_agent_name", target_tag: "default_target_tag", episode_uuid: head, episode_address: `ipc:///tmp/ajet/${head}-llm.sock` });
    emu.close();
  });

  it("fails with the exact no-episodes cause when every slot is claimed", async () => {
    const { emu } = await rolling({ batchSize: 1, numRepeat: 2, maxEnvWorker: 2 });
    await claim(emu);
    await claim(emu);
    const res = await call(emu, "POST", "/claim_episode", { client_uuid: "c", episode_type: "train", discard_episode_timeout: 60 });
    expect(res.json).toEqual({ success: false, client_uuid: "c", episode_uuid: "", openai_base_url: "", openai_api_key: "", fail_cause: ServerText.noAvailableEpisodes });
    emu.close();
  });

  it("answers each non-ROLLING status with its advice", async () => {
    const { emu } = makeEmulator({ simulateEngine: false });
    for (const status of [ENGINE.BOOTING, ENGINE.ROLLING_POST, ENGINE.WEIGHT_SYNCING, ENGINE.WEIGHT_EXPORTING]) {
      await call(emu, "POST", "/update_engine_status", { engine_status: status });
      const res = await call(emu, "POST", "/claim_episode", { client_uuid: "c", episode_type: "train", discard_episode_timeout: 60 });
      expect(res.json.fail_cause).toBe(ServerText.engineNotReady(status));
    }
    emu.close();
  });
});

describe("end_episode checks in the server's order (spec §3.9)", () => {
  it("400 not rolling, 500 bad metadata, 400 not found, 400 not claimed, 404 other client", async () => {
    const offline = makeEmulator().emu;
    expect((await end(offline, "e", "t", 1)).json).toEqual({ detail: ServerText.endNotRolling(ENGINE.OFFLINE) });

    const { emu } = await rolling();
    const mismatch = await call(emu, "POST", "/end_episode", { client_uuid: "c", episode_uuid: "nope", task_id: "t", workflow_output: { reward: 1, metadata: { task_id: "other" } } });
    expect([mismatch.status, mismatch.contentType, mismatch.text]).toEqual([500, "text/plain; charset=utf-8", "Internal Server Error"]);
    expect((await end(emu, "nope", "t", 1)).json).toEqual({ detail: ServerText.episodeNotFound("nope") });
    const registered = emu.engine.queue[0] as string;
    const notClaimed = await end(emu, registered, "t", 1);
    expect([notClaimed.status, notClaimed.json.detail]).toEqual([400, ServerText.episodeNotClaimed(registered)]);
    const c = await claim(emu, "owner");
    const other = await end(emu, c.episode_uuid, "t", 1, "intruder");
    expect([other.status, other.json.detail]).toEqual([404, ServerText.claimedByOther(c.episode_uuid, "owner", "intruder")]);
    offline.close();
    emu.close();
  });

  it("a second end of the same episode is 400 not found (spec §11.6)", async () => {
    const { emu } = await rolling();
    const uuid = await runEpisode(emu, "t", 1);
    const again = await end(emu, uuid, "t", 1);
    expect([again.status, again.json.detail]).toEqual([400, ServerText.episodeNotFound(uuid)]);
    emu.close();
  });
});

describe("abort (spec §3.10, §5.6)", () => {
  it("in ROLLING reverts the record: same uuid and key, registered, at the queue tail", async () => {
    const { emu } = await rolling();
    const c = await claim(emu);
    await chat(emu, c.openai_api_key);
    expect((await abort(emu, c.episode_uuid)).json).toEqual({ success: true });
    const record = emu.engine.records.get(c.episode_uuid);
    expect(record).toMatchObject({ episode_status: "registered", client_uuid: "", llm_call_count: 0, discard_episode_timeout: -1, openai_api_key: c.openai_api_key });
    expect(emu.engine.queue.at(-1)).toBe(c.episode_uuid);
    expect((await claim(emu)).episode_uuid).not.toBe(c.episode_uuid);
    const proxied = await chat(emu, c.openai_api_key);
    expect([proxied.status, proxied.json.detail]).toEqual([404, ServerText.proxyNotClaimed(c.episode_uuid)]);
    emu.close();
  });

  it("in ROLLING_POST deletes the record", async () => {
    const { emu } = await rolling({ batchSize: 1, numRepeat: 2, maxEnvWorker: 4 });
    const held = await claim(emu, "holder");
    await runEpisode(emu, "t", 1);
    await runEpisode(emu, "t", 0);
    expect(emu.engine.status).toBe(ENGINE.ROLLING_POST);
    expect((await abort(emu, held.episode_uuid, "holder")).json).toEqual({ success: true });
    expect(emu.engine.records.has(held.episode_uuid)).toBe(false);
    expect((await end(emu, held.episode_uuid, "t", 1, "holder")).json.detail).toBe(ServerText.episodeNotFound(held.episode_uuid));
    emu.close();
  });

  it("is a no-op success for unknown uuids and outside the rolling states", async () => {
    const { emu } = await rolling();
    expect((await abort(emu, "unknown")).json).toEqual({ success: true });
    expect(emu.engine.activeClients).toEqual([]);
    emu.close();
  });
});

describe("idle janitor (spec §5.4, BC-23)", () => {
  it("reverts a claim idle longer than discard_episode_timeout; the late end is refused", async () => {
    const { emu, clock } = await rolling(undefined, { timings: { janitorIntervalMs: 10_000 } });
    const c = await claim(emu, "slow", { discard_episode_timeout: 30 }); // t ≈ 0 (janitor runs at 10, 20, 30 … s)
    await clock.advance(25_000);
    expect(emu.engine.records.get(c.episode_uuid)?.episode_status).toBe("claimed");
    await chat(emu, c.openai_api_key); // activity at t ≈ 25 s
    await clock.advance(30_000); // janitor at 30, 40, 50 s: idle ≤ 25 s
    expect(emu.engine.records.get(c.episode_uuid)?.episode_status).toBe("claimed");
    await clock.advance(10_000); // janitor at 60 s: idle ≈ 35 s > 30 s
    expect(emu.engine.records.get(c.episode_uuid)?.episode_status).toBe("registered");
    expect(emu.engine.queue.at(-1)).toBe(c.episode_uuid);
    expect((await end(emu, c.episode_uuid, "t", 1, "slow")).json.detail).toBe(ServerText.episodeNotClaimed(c.episode_uuid));
    emu.close();
  });

  it("does not revert while a chat call is being generated", async () => {
    const { emu, clock } = await rolling(undefined, { timings: { janitorIntervalMs: 1000 } });
    emu.hooks.llmLatencyMs = 20_000;
    const c = await claim(emu, "c", { discard_episode_timeout: 5 });
    const pending = chat(emu, c.openai_api_key);
    await clock.advance(20_000);
    expect((await pending).status).toBe(200);
    expect(emu.engine.records.get(c.episode_uuid)?.episode_status).toBe("claimed");
    emu.close();
  });

  it("expires active clients idle for more than 600 s", async () => {
    const { emu, clock } = await rolling({ batchSize: 4, numRepeat: 4 }, { timings: { janitorIntervalMs: 10_000, tickMs: 1_000 } });
    await runEpisode(emu, "t", 1);
    expect(emu.engine.activeClients.map((c) => c.client_uuid)).toEqual(["client-a"]);
    await clock.advance(610_000);
    expect(emu.engine.activeClients).toEqual([]);
    emu.close();
  });
});

describe("BC-29 episodes with zero LLM calls are dropped", () => {
  it("BC-29 end succeeds but the engine drops the episode: it counts toward nothing and the slot is refilled", async () => {
    const { emu } = await rolling({ batchSize: 1, numRepeat: 2, maxEnvWorker: 2 });
    const c = await claim(emu);
    expect((await end(emu, c.episode_uuid, "t", 1)).json).toEqual({ success: true });
    expect(emu.stepLog[0]?.episodes[0]).toMatchObject({ episodeUuid: c.episode_uuid, llmCallCount: 0, dropped: true, dropReason: "no_llm_call" });
    expect(emu.engine.poolInformation().completed_episodes).toBe(0);
    expect(emu.engine.queue).toHaveLength(2);
    await runEpisode(emu, "t", 1);
    await runEpisode(emu, "t", 0);
    expect(emu.engine.status).toBe(ENGINE.ROLLING_POST);
    expect(emu.stepLog[0]?.completedTaskIds).toEqual(["t"]);
    expect(emu.stepLog[0]?.meanReward).toBe(0.5);
    emu.close();
  });

  it("a null reward is accepted by the server and dropped by the engine (spec §11.12)", async () => {
    const { emu } = await rolling();
    const c = await claim(emu);
    await chat(emu, c.openai_api_key);
    expect((await end(emu, c.episode_uuid, "t", null)).json).toEqual({ success: true });
    expect(emu.stepLog[0]?.episodes[0]).toMatchObject({ reward: null, dropped: true, dropReason: "invalid_reward" });
    emu.close();
  });
});

describe("eval episodes and can_continue (spec §3.9, §3.11, §5.8)", () => {
  it("an eval end reverts in ROLLING, is not logged, and can_continue follows the claim", async () => {
    const { emu } = await rolling();
    const c = await claim(emu, "e", { episode_type: "eval" });
    const cc = () => call(emu, "POST", "/can_continue_episode", { client_uuid: "someone-else", episode_uuid: c.episode_uuid });
    expect((await cc()).json).toEqual({ can_continue: true });
    await chat(emu, c.openai_api_key);
    expect((await end(emu, c.episode_uuid, "t", 1, "e")).json).toEqual({ success: true });
    expect(emu.engine.records.get(c.episode_uuid)?.episode_status).toBe("registered");
    expect(emu.stepLog).toEqual([]);
    expect((await cc()).json).toEqual({ can_continue: false });
    emu.close();
  });

  it("400 for an unknown episode_type", async () => {
    const { emu } = await rolling();
    const res = await call(emu, "POST", "/claim_episode", { client_uuid: "c", episode_type: "test", discard_episode_timeout: 1 });
    expect([res.status, res.json]).toEqual([400, { detail: ServerText.unknownEpisodeType("test") }]);
    emu.close();
  });
});

describe("pool information overlay (spec §3.13, §11.20)", () => {
  it("reports running episodes and the claimants of throttled finished episodes", async () => {
    const { emu, clock } = await rolling({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
    const policy = (task: string) => ({ throttle_policy: { ratio: 1.5, expected_batch_size: 2, expected_num_repeat: 2, current_task_id: task } });
    const a = await claim(emu, "a", policy("t1"));
    await chat(emu, a.openai_api_key);
    await end(emu, a.episode_uuid, "t1", 1, "a");
    const b = await claim(emu, "b", policy("t2"));
    await chat(emu, b.openai_api_key);
    await clock.advance(2_500);
    const pool = (await call(emu, "GET", "/get_current_batch_rollout_pool_information")).json;
    expect(pool.completed_tasks_client_uuids).toEqual({ t1: ["a"] });
    expect(pool.running_episode_details).toEqual({
      [b.episode_uuid]: { episode_status: "claimed", time_since_last_activity: "2.5s", discard_episode_timeout: "60.0s", llm_call_count: "1", client_uuid: "b", optional_task_id: "t2" },
    });
    expect(pool).toMatchObject({ engine_status: ENGINE.ROLLING, global_step: 1, training_model_path: "sim/fake-policy-model", completed_episodes: 1 });
    emu.close();
  });

  it("writes Python floats as the server does (-1.0, 60.0)", async () => {
    const { emu } = await rolling();
    await claim(emu);
    const text = (await call(emu, "POST", "/get_episode_buffer")).text;
    expect(text).toContain('"discard_episode_timeout":60.0');
    expect(text).toContain('"discard_episode_timeout":-1.0');
    emu.close();
  });
});

describe("FastAPI answers (spec §1)", () => {
  it("422 for wrong types, a missing body and invalid JSON; 404, 405 and the trailing-slash 307 for routing", async () => {
    const { emu } = makeEmulator();
    const wrong = await call(emu, "POST", "/claim_episode", { client_uuid: 5, episode_type: "train", discard_episode_timeout: "soon" });
    expect(wrong.status).toBe(422);
    expect(wrong.json.detail).toEqual([
      { type: "string_type", loc: ["body", "client_uuid"], msg: "Input should be a valid string", input: 5 },
      { type: "float_parsing", loc: ["body", "discard_episode_timeout"], msg: "Input should be a valid number, unable to parse string as a number", input: "soon" },
    ]);
    expect((await call(emu, "POST", "/claim_episode")).json).toEqual({ detail: [{ type: "missing", loc: ["body"], msg: "Field required", input: null }] });
    expect((await call(emu, "POST", "/claim_episode", '{"client_uuid": }')).json).toEqual({
      detail: [{ type: "json_invalid", loc: ["body", 16], msg: "JSON decode error", input: {}, ctx: { error: "Expecting value" } }],
    });
    expect(await call(emu, "GET", "/nowhere")).toMatchObject({ status: 404, json: { detail: "Not Found" } });
    expect(await call(emu, "GET", "/claim_episode")).toMatchObject({ status: 405, json: { detail: "Method Not Allowed" } });
    const slash = await emu.app.fetch(new Request("http://127.0.0.1:10086/health/"));
    expect([slash.status, slash.headers.get("location")]).toEqual([307, "http://127.0.0.1:10086/health"]);
    emu.close();
  });

  it("ignores unknown request fields like pydantic", async () => {
    const { emu } = await rolling();
    const res = await call(emu, "POST", "/claim_episode", { client_uuid: "c", episode_type: "train", discard_episode_timeout: 60, partition_limit: { ratio: 1 } });
    expect(res.json.success).toBe(true);
    emu.close();
  });
});

describe("verbose logs, experiment dir, sync_train_code (spec §3.3, §3.7, §3.19)", () => {
  it("keeps verbose log entries 30 s and at most 50", async () => {
    const { emu, clock } = makeEmulator();
    for (let i = 0; i < 55; i++) await call(emu, "POST", "/push_verbose_log", { message: `m${i}` });
    const entries = (await call(emu, "GET", "/get_verbose_logs")).json.entries;
    expect(entries).toHaveLength(50);
    expect(entries[0]).toEqual({ timestamp: expect.any(Number), tag: "", message: "m5" });
    await clock.advance(30_001);
    expect((await call(emu, "GET", "/get_verbose_logs")).json).toEqual({ entries: [] });
    emu.close();
  });

  it("reports the experiment dir after a start and accepts only a zip while OFFLINE", async () => {
    const { emu, clock } = makeEmulator({ workDir: "/srv/ajet" });
    expect((await call(emu, "GET", "/get_server_experiment_dir")).json).toEqual({ server_experiment_dir: null });
    const zip = (bytes: number[]) => emu.app.fetch(new Request("http://x/sync_train_code", { method: "POST", body: new Uint8Array(bytes), headers: { "content-type": "application/zip" } }));
    expect(await (await zip([])).json()).toEqual({ detail: "Uploaded zip file is empty." });
    expect(await (await zip([1, 2, 3])).json()).toEqual({ detail: "Uploaded file is not a valid zip file." });
    expect(await (await zip([0x50, 0x4b, 0x03, 0x04, 0])).json()).toMatchObject({ success: true, message: "Training code synced successfully." });
    await call(emu, "POST", "/sync_train_config", { yaml_as_string: yamlConfig() });
    await callAdvancing(emu, clock, "POST", "/start_engine", {});
    expect((await call(emu, "GET", "/get_server_experiment_dir")).json).toEqual({ server_experiment_dir: "/srv/ajet/saved_experiments/unit_run" });
    expect((await zip([0x50, 0x4b, 0x03, 0x04])).status).toBe(400);
    emu.close();
  });
});

describe("fault hooks", () => {
  it("BC-26 end_episode applied on the server while the client sees a 500, then a retry sees not found", async () => {
    const { emu, clock } = await rolling();
    emu.hooks.endEpisode = () => ({ delayMs: 45_000, status: 500, afterHandling: true });
    const c = await claim(emu);
    await chat(emu, c.openai_api_key);
    const body = { client_uuid: "client-a", episode_uuid: c.episode_uuid, task_id: "t", workflow_output: { reward: 1, metadata: { task_id: "t" } } };
    const first = await callAdvancing(emu, clock, "POST", "/end_episode", body, 1_000);
    expect([first.status, first.text]).toEqual([500, "Internal Server Error"]);
    expect(emu.stepLog[0]?.episodes).toHaveLength(1);
    emu.hooks.endEpisode = undefined;
    expect((await end(emu, c.episode_uuid, "t", 1)).json.detail).toBe(ServerText.episodeNotFound(c.episode_uuid));
    emu.close();
  });

  it("a claim hook can answer any status without touching the queue", async () => {
    const { emu } = await rolling();
    emu.hooks.claimEpisode = () => ({ status: 503, body: { detail: "overloaded" } });
    const before = [...emu.engine.queue];
    expect(await call(emu, "POST", "/claim_episode", { client_uuid: "c", episode_type: "train", discard_episode_timeout: 1 })).toMatchObject({ status: 503, json: { detail: "overloaded" } });
    expect(emu.engine.queue).toEqual(before);
    emu.close();
  });
});
