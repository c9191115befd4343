/**
 * The five sample-collection methods of the simulated engine, at their exact closing points (spec §6.3, §7.3,
 * §3.14, §4.3; llm-routes §7, §10): which episode closes a batch, what does not count (zero-LLM-call episodes,
 * surplus episodes, groups whose rewards are all equal), the agree modes' active list (who joins, who refreshes it,
 * expiry after 600 s idle — a single long LLM call does not keep a client), the engine's lagging view of the votes
 * (its pool push every 12 s or after a finished episode), votes wiped at every sync, and the 500 outside agree modes.
 * Manual clock; `fast` profile unless a test needs the real tick.
 */
import { describe, expect, it } from "vitest";
import { ENGINE, ServerText } from "../../../src/protocol/index.ts";
import { abort, advanceUntil, bootToRolling, call, chat, claim, end, makeEmulator, runEpisode } from "./helpers.ts";

const ANY = "rollout_until_any_client_agree_sync_weight";
const ALL = "rollout_until_all_clients_agree_sync_weight";
const agree = (emu: Parameters<typeof call>[0], clientUuid: string) => call(emu, "POST", "/agree_sync_weight", { client_uuid: clientUuid });
const closed = (emu: Parameters<typeof call>[0]) => emu.engine.statusHistory.some((c) => c.to === ENGINE.ROLLING_POST);

describe("task-counting methods close on the episode the spec names", () => {
  it("finish_enough_episodes: the B×R-th kept episode closes it; zero-LLM-call episodes are not kept", async () => {
    const { emu, clock } = makeEmulator();
    await bootToRolling(emu, clock, { batchSize: 2, numRepeat: 2, maxEnvWorker: 8, method: "rollout_until_finish_enough_episodes" });
    for (const t of ["a", "b", "c"]) await runEpisode(emu, t, 1);
    await runEpisode(emu, "d", 1, { llmCalls: 0 }); // dropped by the engine: no timeline
    expect(emu.engine.status).toBe(ENGINE.ROLLING);
    expect(emu.engine.poolInformation().completed_episodes).toBe(3);
    await runEpisode(emu, "e", 0);
    expect(emu.engine.status).toBe(ENGINE.ROLLING_POST);
    emu.close();
  });

  it("finish_enough_tasks: surplus episodes of a group count once; B-1 full groups and partial ones do not close it", async () => {
    const { emu, clock } = makeEmulator();
    await bootToRolling(emu, clock, { batchSize: 2, numRepeat: 2, maxEnvWorker: 16 });
    for (const t of ["a", "a", "a", "b", "c", "d"]) await runEpisode(emu, t, 1);
    expect(emu.engine.status).toBe(ENGINE.ROLLING);
    expect(emu.engine.poolInformation()).toMatchObject({ completed_tasks: 1, completed_episodes: 6 });
    await runEpisode(emu, "c", 1);
    expect(emu.engine.status).toBe(ENGINE.ROLLING_POST);
    emu.close();
  });

  it("finish_enough_non_dummy_tasks: all-equal groups never count, a surplus episode with another reward turns one non-dummy", async () => {
    const { emu, clock } = makeEmulator();
    await bootToRolling(emu, clock, { batchSize: 2, numRepeat: 2, maxEnvWorker: 16, method: "rollout_until_finish_enough_non_dummy_tasks" });
    for (const [t, r] of [["a", 1], ["a", 1], ["b", 0], ["b", 0], ["c", 0], ["c", 1]] as const) await runEpisode(emu, t, r);
    expect(emu.engine.status).toBe(ENGINE.ROLLING);
    expect(emu.engine.poolInformation()).toMatchObject({ completed_tasks: 3, completed_non_dummy_tasks: 1, completed_non_dummy_task_target: 2 });
    await runEpisode(emu, "a", 0); // the third repeat of "a" differs: the group is no longer all-equal
    expect(emu.engine.status).toBe(ENGINE.ROLLING_POST);
    emu.close();
  });

  it("an unknown method falls back to finish_enough_tasks, is reported raw, and agreeing in it is a 500", async () => {
    const { emu, clock } = makeEmulator();
    await bootToRolling(emu, clock, { batchSize: 1, numRepeat: 2, method: "rollout_until_the_moon" });
    expect(emu.engine.trainConfig?.sampleCollectionMethod).toBe("rollout_until_finish_enough_tasks");
    expect(emu.engine.poolInformation().sample_collection_method).toBe("rollout_until_the_moon");
    await runEpisode(emu, "t", 1);
    expect((await agree(emu, "client-a")).status).toBe(500);
    await runEpisode(emu, "t", 0);
    expect(emu.engine.status).toBe(ENGINE.ROLLING_POST);
    emu.close();
  });
});

describe("episodes that only speak Responses / Messages", () => {
  it("are kept like chat episodes (their calls count), close the batch, and the policy learns from their rewards", async () => {
    const { emu, clock } = makeEmulator();
    await bootToRolling(emu, clock, { batchSize: 2, numRepeat: 2, maxEnvWorker: 8 });
    const p0 = emu.policy.accuracy;
    for (const [i, task] of ["a", "a", "b", "b"].entries()) {
      const c = await claim(emu);
      const res =
        i % 2 === 0
          ? await call(emu, "POST", "/v1/messages", { max_tokens: 64, messages: [{ role: "user", content: "What is 2 + 3?" }], stream: true }, { "x-api-key": c.openai_api_key })
          : await call(emu, "POST", "/v1/responses", { input: "What is 2 + 3?" }, { authorization: `Bearer ${c.openai_api_key}` });
      expect(res.status).toBe(200);
      expect((await end(emu, c.episode_uuid, task, 1)).status).toBe(200);
    }
    expect(emu.stepLog[0]?.episodes.map((e) => [e.llmCallCount, e.dropped])).toEqual([[1, false], [1, false], [1, false], [1, false]]);
    await advanceUntil(clock, () => emu.engine.globalStep === 2 && emu.engine.status === ENGINE.ROLLING);
    expect(emu.policy.accuracy).toBeGreaterThan(p0);
    emu.close();
  });
});

describe("agree modes (spec §3.14, §7.3; llm-routes §10)", () => {
  it("the active list: joined by a train end or an abort (declare_client_active), not by a claim, an LLM call, an eval end or declare_client_active false", async () => {
    const { emu, clock } = makeEmulator();
    await bootToRolling(emu, clock, { batchSize: 8, numRepeat: 1, maxEnvWorker: 8, method: ANY });
    const c = await claim(emu, "claimer");
    await chat(emu, c.openai_api_key);
    const ev = await claim(emu, "evaluator", { episode_type: "eval" });
    await chat(emu, ev.openai_api_key);
    await end(emu, ev.episode_uuid, "t", 1, "evaluator");
    const quiet = await claim(emu, "quiet");
    await chat(emu, quiet.openai_api_key);
    await call(emu, "POST", "/end_episode", { client_uuid: "quiet", episode_uuid: quiet.episode_uuid, task_id: "t", workflow_output: { reward: 1, metadata: { task_id: "t" } }, declare_client_active: false });
    expect(emu.engine.activeClients).toEqual([]);
    for (const who of ["claimer", "evaluator", "quiet"]) expect((await agree(emu, who)).json).toEqual({ success: false, failure_reason: ServerText.notInActiveList(who) });
    const a = await claim(emu, "aborter");
    await abort(emu, a.episode_uuid, "aborter"); // newest server code: an abort joins too (spec §11.16)
    expect(emu.engine.activeClients.map((x) => x.client_uuid)).toEqual(["aborter"]);
    emu.close();
  });

  it("any: the engine sees a vote only at its next pool push (every 12 s) — or at once when an episode finishes", async () => {
    const { emu, clock } = makeEmulator({ timings: { tickMs: 4_000, weightSyncMs: 60_000 } });
    await bootToRolling(emu, clock, { batchSize: 1, numRepeat: 1, maxEnvWorker: 8, method: ANY });
    await runEpisode(emu, "t", 1);
    const agreedAt = clock.nowMs();
    expect((await agree(emu, "client-a")).json).toEqual({ success: true, failure_reason: "" });
    expect((await agree(emu, "client-a")).json).toEqual({ success: true, failure_reason: "" }); // idempotent
    await clock.advance(1);
    expect(emu.engine.status).toBe(ENGINE.ROLLING);
    await advanceUntil(clock, () => closed(emu), 500, 20_000);
    const lag = (emu.engine.statusHistory.find((c) => c.to === ENGINE.ROLLING_POST)?.atMs ?? 0) - agreedAt;
    expect(lag).toBeGreaterThan(0);
    expect(lag).toBeLessThanOrEqual(12_000 + 4_000); // the next push, then the trainer's tick

    // next step: the list was reset; the engine learns a vote as soon as an episode finishes (its push after each)
    await advanceUntil(clock, () => emu.engine.status === ENGINE.ROLLING && emu.engine.globalStep === 2, 1_000, 200_000);
    expect(emu.engine.activeClients).toEqual([]);
    expect((await agree(emu, "client-a")).json.success).toBe(false); // must end an episode in this window first
    await runEpisode(emu, "u", 1);
    await agree(emu, "client-a");
    await runEpisode(emu, "v", 1, { clientUuid: "client-b" });
    expect(emu.engine.status).toBe(ENGINE.ROLLING_POST);
    emu.close();
  });

  it("all: closes only when every active client agreed; votes and the list are wiped at the sync", async () => {
    const { emu, clock } = makeEmulator({ timings: { weightSyncMs: 5_000 } });
    await bootToRolling(emu, clock, { batchSize: 1, numRepeat: 1, maxEnvWorker: 8, method: ALL });
    await runEpisode(emu, "t", 1, { clientUuid: "a" });
    await runEpisode(emu, "u", 1, { clientUuid: "b" });
    await runEpisode(emu, "w", 1, { clientUuid: "c" });
    await agree(emu, "a");
    await agree(emu, "b");
    await clock.advance(1_000);
    expect(emu.engine.status).toBe(ENGINE.ROLLING); // B = 1 is ignored; c has not agreed
    await agree(emu, "c");
    await advanceUntil(clock, () => closed(emu), 10, 1_000);
    await advanceUntil(clock, () => emu.engine.status === ENGINE.WEIGHT_SYNCING, 10, 1_000);
    expect(emu.engine.activeClients).toEqual([]);
    await advanceUntil(clock, () => emu.engine.status === ENGINE.ROLLING, 100, 20_000);
    await clock.advance(1_000);
    expect(emu.engine.status).toBe(ENGINE.ROLLING); // an empty list never closes the all mode
    emu.close();
  });

  it("all: a client that never agrees stalls the batch until it falls off the list 600 s after its last activity", async () => {
    const { emu, clock } = makeEmulator({ timings: { janitorIntervalMs: 10_000, weightSyncMs: 60_000, tickMs: 1_000 } });
    await bootToRolling(emu, clock, { batchSize: 1, numRepeat: 1, maxEnvWorker: 8, method: ALL });
    await runEpisode(emu, "t", 1, { clientUuid: "a" });
    await runEpisode(emu, "u", 1, { clientUuid: "silent" });
    const silentLastSeen = clock.nowMs();
    await agree(emu, "a");
    // "a" keeps itself active (claims and LLM calls refresh it); "silent" does nothing
    for (let t = 0; t < 540_000; t += 60_000) {
      await clock.advance(60_000);
      const c = await claim(emu, "a");
      await call(emu, "POST", "/v1/messages", { max_tokens: 8, messages: [{ role: "user", content: "hi" }] }, { "x-api-key": c.openai_api_key });
      await abort(emu, c.episode_uuid, "a");
    }
    expect(emu.engine.status).toBe(ENGINE.ROLLING);
    expect(emu.engine.activeClients.map((c) => c.client_uuid).sort()).toEqual(["a", "silent"]);
    await advanceUntil(clock, () => closed(emu), 1_000, 120_000);
    const at = emu.engine.statusHistory.find((c) => c.to === ENGINE.ROLLING_POST)!.atMs;
    expect(at - silentLastSeen).toBeGreaterThan(600_000);
    expect(at - silentLastSeen).toBeLessThanOrEqual(600_000 + 10_000 + 3 * 1_000 + 1_000); // janitor period, then the next push and tick
    emu.close();
  });

  it("a single LLM call longer than 600 s does not keep its client on the list (activity is refreshed at the pre-flight only)", async () => {
    const { emu, clock } = makeEmulator({ timings: { janitorIntervalMs: 10_000, tickMs: 1_000 } });
    await bootToRolling(emu, clock, { batchSize: 1, numRepeat: 1, maxEnvWorker: 8, method: ALL });
    await runEpisode(emu, "t", 1, { clientUuid: "long" });
    const held = await claim(emu, "long", { discard_episode_timeout: 3600 });
    emu.hooks.llmLatencyMs = 700_000;
    let done = false;
    void call(emu, "POST", "/v1/responses", { input: "think hard" }, { authorization: `Bearer ${held.openai_api_key}` }).then(() => (done = true));
    await clock.advance(620_000);
    expect(done).toBe(false);
    expect(emu.engine.records.get(held.episode_uuid)?.episode_status).toBe("claimed"); // the episode is alive
    expect(emu.engine.activeClients).toEqual([]); // its client is not
    expect((await agree(emu, "long")).json.success).toBe(false);
    await clock.advance(90_000);
    expect(done).toBe(true);
    emu.close();
  });
});
