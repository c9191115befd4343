/**
 * The simulated engine's state machine end to end (spec §4, §5.2, §7.3): OFFLINE → BOOTING → ROLLING →
 * ROLLING_POST → WEIGHT_SYNCING → ROLLING with global_step + 1, the timing shape, stop_engine from any state,
 * the sample-collection methods and the agree modes. Manual clock, `fast` profile.
 */
import { describe, expect, it } from "vitest";
import { ENGINE, ServerText, serverEpisodeCapacity } from "../../../src/protocol/index.ts";
import { abort, advanceUntil, bootToRolling, call, callAdvancing, claim, end, makeEmulator, runEpisode, yamlConfig } from "./helpers.ts";

describe("engine capacity (spec §5.2)", () => {
  it("is min(B, ceil(max_env_worker / R)) × R", () => {
    expect(serverEpisodeCapacity({ batchSize: 32, numRepeat: 4, maxEnvWorker: 128 })).toBe(128);
    expect(serverEpisodeCapacity({ batchSize: 32, numRepeat: 4, maxEnvWorker: 10 })).toBe(12);
    expect(serverEpisodeCapacity({ batchSize: 2, numRepeat: 4, maxEnvWorker: 128 })).toBe(8);
  });
});

describe("state machine", () => {
  it("runs two full steps with num_repeat 4: global_step 1 → 3, ROLLING_POST and WEIGHT_SYNCING observed, records wiped", async () => {
    const { emu, clock } = makeEmulator({ seed: 7 });
    await bootToRolling(emu, clock, { batchSize: 2, numRepeat: 4, maxEnvWorker: 8 });
    expect(emu.engine.globalStep).toBe(1);
    expect(emu.engine.bootingStartTime).toBeNull();
    expect(emu.engine.queue).toHaveLength(8);
    for (const uuid of emu.engine.queue) expect(uuid).toMatch(/^[0-9a-f]{32}$/);

    for (const step of [1, 2]) {
      const registered = new Set(emu.engine.queue);
      for (const task of ["a", "b"]) for (let r = 0; r < 4; r++) await runEpisode(emu, `s${step}-${task}`, r % 2);
      // The worker that completes the batch soft-stops at once (upstream stop callback).
      expect(emu.engine.status).toBe(ENGINE.ROLLING_POST);
      expect((await call(emu, "GET", "/get_engine_status")).json).toEqual({ engine_status: ENGINE.ROLLING_POST, engine_status_detail: null, global_step: step });
      expect(emu.engine.finishedRecords.size).toBe(8);
      await advanceUntil(clock, () => emu.engine.status === ENGINE.WEIGHT_SYNCING, 1);
      expect(emu.engine.records.size).toBe(0);
      expect(emu.engine.finishedRecords.size).toBe(0);
      expect(emu.engine.queue).toEqual([]);
      expect((await claim(emu).catch(() => null))).toBeNull();
      await advanceUntil(clock, () => emu.engine.status === ENGINE.ROLLING, 1);
      expect(emu.engine.globalStep).toBe(step + 1);
      expect(emu.engine.queue).toHaveLength(8);
      expect(emu.engine.queue.some((u) => registered.has(u))).toBe(false);
    }

    const seen = emu.engine.statusHistory.map((c) => `${c.to}@${c.globalStep}`);
    expect(seen).toEqual([
      "ENGINE.BOOTING@null",
      "ENGINE.ROLLING@1",
      "ENGINE.ROLLING_POST@1",
      "ENGINE.ROLLING_POST@1", // the trainer's own post at its next tick (upstream posts it twice)
      "ENGINE.WEIGHT_SYNCING@1",
      "ENGINE.WEIGHT_SYNCING@1",
      "ENGINE.ROLLING@2",
      "ENGINE.ROLLING_POST@2",
      "ENGINE.ROLLING_POST@2",
      "ENGINE.WEIGHT_SYNCING@2",
      "ENGINE.WEIGHT_SYNCING@2",
      "ENGINE.ROLLING@3",
    ]);
    expect(emu.stepLog.map((s) => [s.globalStep, s.episodes.length, s.completedTaskIds])).toEqual([
      [1, 8, ["s1-a", "s1-b"]],
      [2, 8, ["s2-a", "s2-b"]],
    ]);
    emu.close();
    expect(clock.pendingTimers()).toBe(0);
  });

  it("answers /start_engine only after BOOTING was observable for startEngineMs, then ROLLING after bootMs", async () => {
    const { emu, clock } = makeEmulator({ timings: { startEngineMs: 2000, bootMs: 3000 } });
    await call(emu, "POST", "/sync_train_config", { yaml_as_string: yamlConfig() });
    let answered = false;
    const pending = call(emu, "POST", "/start_engine", {}).finally(() => (answered = true));
    await clock.advance(1999);
    expect(answered).toBe(false);
    expect((await call(emu, "GET", "/get_engine_status")).json.engine_status).toBe(ENGINE.BOOTING);
    const claimWhileBooting = await call(emu, "POST", "/claim_episode", { client_uuid: "c", episode_type: "train", discard_episode_timeout: 60 });
    expect(claimWhileBooting.json.fail_cause).toBe(ServerText.engineNotReady(ENGINE.BOOTING));
    await clock.advance(1);
    const res = await pending;
    expect(res.json).toEqual({ success: true, pid: expect.any(Number) });
    expect(emu.engine.poolInformation().booting_start_time).toBe(clock.nowMs() / 1000);
    await clock.advance(2999);
    expect(emu.engine.status).toBe(ENGINE.BOOTING);
    await clock.advance(1);
    expect(emu.engine.status).toBe(ENGINE.ROLLING);
    expect(emu.engine.globalStep).toBe(1);
    emu.close();
  });

  it("refuses a second start (400) and a start without config (success false, status unchanged)", async () => {
    const { emu, clock } = makeEmulator();
    expect((await call(emu, "POST", "/start_engine", {})).json).toEqual({ success: false, error: "No training config found" });
    expect(emu.engine.status).toBe(ENGINE.OFFLINE);
    await bootToRolling(emu, clock);
    const again = await call(emu, "POST", "/start_engine", {});
    expect(again.status).toBe(400);
    expect(again.json).toEqual({ detail: ServerText.startWhenNotOffline(ENGINE.ROLLING) });
    emu.close();
  });

  it("leaves BOOTING stuck when the YAML does not parse (spec §11.9)", async () => {
    const { emu } = makeEmulator();
    await call(emu, "POST", "/sync_train_config", { yaml_as_string: "just a string" });
    expect((await call(emu, "POST", "/start_engine", {})).json).toEqual({ success: false, error: "'str' object has no attribute 'get'" });
    expect(emu.engine.status).toBe(ENGINE.BOOTING);
    emu.close();
  });

  it.each([ENGINE.BOOTING, ENGINE.ROLLING, ENGINE.ROLLING_POST, ENGINE.WEIGHT_SYNCING])("stop_engine from %s: OFFLINE, records wiped, global_step kept, engine dead", async (target) => {
    const { emu, clock } = makeEmulator({ timings: { weightSyncMs: 10_000, tickMs: 10 } });
    await call(emu, "POST", "/sync_train_config", { yaml_as_string: yamlConfig({ batchSize: 1, numRepeat: 2 }) });
    await callAdvancing(emu, clock, "POST", "/start_engine", {});
    if (target !== ENGINE.BOOTING) await advanceUntil(clock, () => emu.engine.status === ENGINE.ROLLING);
    if (target === ENGINE.ROLLING_POST || target === ENGINE.WEIGHT_SYNCING) {
      const held = await claim(emu, "holder"); // keeps ROLLING_POST draining
      await runEpisode(emu, "t", 1);
      await runEpisode(emu, "t", 0);
      if (target === ENGINE.WEIGHT_SYNCING) {
        await abort(emu, held.episode_uuid, "holder");
        await advanceUntil(clock, () => emu.engine.status === ENGINE.WEIGHT_SYNCING);
      }
    }
    expect(emu.engine.status).toBe(target);
    const step = emu.engine.globalStep;
    expect((await callAdvancing(emu, clock, "POST", "/stop_engine", {})).json).toEqual({ success: true, failure_reason: "" });
    expect(emu.engine.status).toBe(ENGINE.OFFLINE);
    expect(emu.engine.globalStep).toBe(step);
    expect(emu.engine.records.size).toBe(0);
    expect(emu.engine.queue).toEqual([]);
    await clock.advance(60_000);
    expect(emu.engine.status).toBe(ENGINE.OFFLINE);
    expect(emu.engine.sim?.isRunning).toBe(false);
    emu.close();
  });

  it("exits with OFFLINE and global_step 0 after total_training_steps", async () => {
    const { emu, clock } = makeEmulator();
    await bootToRolling(emu, clock, { batchSize: 1, numRepeat: 2, totalTrainingSteps: 1 });
    await runEpisode(emu, "t", 1);
    await runEpisode(emu, "t", 0);
    await advanceUntil(clock, () => emu.engine.status === ENGINE.OFFLINE);
    expect(emu.engine.globalStep).toBe(0);
    expect(emu.engine.sim?.isRunning).toBe(false);
    emu.close();
  });

  it("counts surplus episodes ended in ROLLING_POST in the closed step (spec §6.3)", async () => {
    const { emu, clock } = makeEmulator();
    await bootToRolling(emu, clock, { batchSize: 1, numRepeat: 2, maxEnvWorker: 4 });
    const surplus = await claim(emu, "late");
    await call(emu, "POST", "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }] }, { authorization: `Bearer ${surplus.openai_api_key}` });
    await runEpisode(emu, "t", 1);
    await runEpisode(emu, "t", 0);
    expect(emu.engine.status).toBe(ENGINE.ROLLING_POST);
    await clock.advance(100);
    expect(emu.engine.status).toBe(ENGINE.ROLLING_POST); // waits for the claimed surplus episode
    expect(emu.engine.records.size).toBe(1);
    expect((await end(emu, surplus.episode_uuid, "u", 1, "late")).json).toEqual({ success: true });
    await advanceUntil(clock, () => emu.engine.status === ENGINE.WEIGHT_SYNCING);
    expect(emu.stepLog[0]?.episodes.map((e) => e.taskId)).toEqual(["t", "t", "u"]);
    emu.close();
  });
});

describe("sample-collection methods (spec §7.3)", () => {
  it("rollout_until_finish_enough_episodes closes on B × R episodes whatever their task ids", async () => {
    const { emu, clock } = makeEmulator();
    await bootToRolling(emu, clock, { batchSize: 2, numRepeat: 2, method: "rollout_until_finish_enough_episodes" });
    for (const t of ["a", "b", "c"]) await runEpisode(emu, t, 1);
    expect(emu.engine.status).toBe(ENGINE.ROLLING);
    await runEpisode(emu, "d", 1);
    expect(emu.engine.status).toBe(ENGINE.ROLLING_POST);
    emu.close();
  });

  it("rollout_until_finish_enough_tasks needs B task ids with R episodes each", async () => {
    const { emu, clock } = makeEmulator();
    await bootToRolling(emu, clock, { batchSize: 2, numRepeat: 2, maxEnvWorker: 8 });
    for (const t of ["a", "b", "c", "a"]) await runEpisode(emu, t, 1);
    expect(emu.engine.status).toBe(ENGINE.ROLLING);
    const pool = emu.engine.poolInformation();
    expect(pool).toMatchObject({ completed_episodes: 4, completed_tasks: 1, completed_task_target: 2, completed_episode_target: 4, task_expected_num_repeat: 2 });
    expect(pool.completed_tasks_rewards).toEqual({ a: [1, 1], b: [1], c: [1] });
    await runEpisode(emu, "b", 1);
    expect(emu.engine.status).toBe(ENGINE.ROLLING_POST);
    emu.close();
  });

  it("rollout_until_finish_enough_non_dummy_tasks ignores groups whose rewards are all equal", async () => {
    const { emu, clock } = makeEmulator();
    await bootToRolling(emu, clock, { batchSize: 1, numRepeat: 2, method: "rollout_until_finish_enough_non_dummy_tasks" });
    await runEpisode(emu, "same", 1);
    await runEpisode(emu, "same", 1);
    expect(emu.engine.status).toBe(ENGINE.ROLLING);
    expect(emu.engine.poolInformation()).toMatchObject({ completed_tasks: 1, completed_non_dummy_tasks: 0 });
    await runEpisode(emu, "mixed", 1);
    await runEpisode(emu, "mixed", 0);
    expect(emu.engine.status).toBe(ENGINE.ROLLING_POST);
    emu.close();
  });

  it("rollout_until_any_client_agree_sync_weight closes on the tick after one active client agrees", async () => {
    const { emu, clock } = makeEmulator({ timings: { weightSyncMs: 10_000 } });
    await bootToRolling(emu, clock, { batchSize: 1, numRepeat: 1, method: "rollout_until_any_client_agree_sync_weight" });
    const notActive = await call(emu, "POST", "/agree_sync_weight", { client_uuid: "client-a" });
    expect(notActive.json).toEqual({ success: false, failure_reason: ServerText.notInActiveList("client-a") });
    await runEpisode(emu, "t", 1);
    await runEpisode(emu, "u", 1);
    await clock.advance(100);
    expect(emu.engine.status).toBe(ENGINE.ROLLING); // B = 1 is ignored in agree modes
    expect((await call(emu, "POST", "/agree_sync_weight", { client_uuid: "client-a" })).json).toEqual({ success: true, failure_reason: "" });
    expect(emu.engine.activeClients).toEqual([{ client_uuid: "client-a", last_activity_at: expect.any(Number), allowed_sync_weight: true }]);
    await advanceUntil(clock, () => emu.engine.status === ENGINE.WEIGHT_SYNCING);
    expect(emu.engine.activeClients).toEqual([]); // votes are wiped with the records
    emu.close();
  });

  it("rollout_until_all_clients_agree_sync_weight waits for every active client", async () => {
    const { emu, clock } = makeEmulator();
    await bootToRolling(emu, clock, { batchSize: 4, numRepeat: 1, method: "rollout_until_all_clients_agree_sync_weight" });
    await runEpisode(emu, "t", 1, { clientUuid: "a" });
    await runEpisode(emu, "u", 1, { clientUuid: "b" });
    await call(emu, "POST", "/agree_sync_weight", { client_uuid: "a" });
    await clock.advance(200);
    expect(emu.engine.status).toBe(ENGINE.ROLLING);
    await call(emu, "POST", "/agree_sync_weight", { client_uuid: "b" });
    await advanceUntil(clock, () => emu.engine.statusHistory.some((c) => c.to === ENGINE.ROLLING_POST));
    expect((await call(emu, "POST", "/agree_sync_weight", { client_uuid: "" })).json).toEqual({ success: false, failure_reason: "client_uuid required" });
    emu.close();
  });
});
