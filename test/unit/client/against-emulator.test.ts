/**
 * Every SwarmClient method against the in-process emulator (src/emulator): requests go through
 * `emulator.app.fetch` (no socket), on the emulator's manual clock. The client's `sleep` advances that clock, and
 * the injected fetch advances it while a handler waits on it (start/stop engine), so nothing waits on real time.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SwarmClient, SwarmEngineStateError, SwarmServerOfflineError, type SwarmClientOptions } from "../../../src/client/index.ts";
import { createEmulator, createManualClock, type Emulator, type ManualClock } from "../../../src/emulator/index.ts";
import { ENGINE } from "../../../src/protocol/index.ts";
import { advancingFetch } from "../../support/emulator-fetch.ts";
import { recordingLogger } from "./_support.ts";

const SERVER = "http://127.0.0.1:10086";

/** A minimal job YAML with the fields the emulator reads (B tasks × R repeats per batch). */
function jobYaml(batchSize: number, numRepeat: number, maxEnvWorker = 8) {
  return [
    "ajet:",
    "  experiment_name: client_vs_emulator",
    "  model:",
    "    path: sim/fake-policy-model",
    "  data:",
    `    train_batch_size: ${batchSize}`,
    "  rollout:",
    `    num_repeat: ${numRepeat}`,
    `    max_env_worker: ${maxEnvWorker}`,
    "  swarm_mode_sample_collection_method: rollout_until_finish_enough_tasks",
    "",
  ].join("\n");
}

const job = (b = 2, r = 2, w = 4) => ({ toYaml: () => jobYaml(b, r, w), sampleCollectionMethod: "rollout_until_finish_enough_tasks" });

let emulators: Emulator[] = [];
afterEach(() => {
  for (const e of emulators) e.close();
  emulators = [];
});

/** An emulator (fast profile, manual clock) and clients wired to it. `onSleep` runs after each client sleep. */
function setup() {
  const clock: ManualClock = createManualClock();
  const emu = createEmulator({ profile: "fast", clock, seed: 3 });
  emulators.push(emu);
  const hooks = { onSleep: undefined as undefined | (() => Promise<void>) };
  let sleeps = 0;
  /** The emulator's app as the client's fetch; advances the manual clock until the handler answers. */
  const fetch = advancingFetch(emu, clock);
  const make = (options: Partial<SwarmClientOptions> = {}) =>
    new SwarmClient({
      baseURL: SERVER,
      fetch,
      now: () => clock.nowMs(),
      sleep: async (ms) => {
        if (++sleeps > 10_000) throw new Error("runaway wait: over 10,000 client sleeps");
        await clock.advance(ms);
        await hooks.onSleep?.();
      },
      random: () => 0.5,
      logger: recordingLogger().logger,
      ...options,
    });
  return { emu, clock, fetch, make, hooks };
}

/** One chat call on the episode's endpoint, so the engine keeps the episode (spec §11.13). */
async function chatOnce(fetch: (i: string, init: RequestInit) => Promise<Response>, baseUrl: string, apiKey: string) {
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model: "m", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "What is 2 + 3?" }] }),
  });
  const body = (await res.json()) as { choices?: unknown[] };
  expect(res.status).toBe(200);
  expect(body.choices).toHaveLength(1);
}

describe("SwarmClient against the emulator", () => {
  it("health, engine status and engine control: sync, start, stop, auto-start", async () => {
    const { make } = setup();
    const client = make();
    expect(await client.health()).toEqual({ status: "ok" });
    expect(await client.getEngineStatus()).toEqual({ status: ENGINE.OFFLINE, detail: null, globalStep: null });
    expect(await client.getServerExperimentDir()).toBeNull();

    await client.syncTrainConfig(job());
    expect(await client.startEngine()).toMatchObject({ status: ENGINE.ROLLING, globalStep: 1 });
    expect(typeof (await client.getServerExperimentDir())).toBe("string");
    await expect(client.syncTrainConfig(job())).rejects.toBeInstanceOf(SwarmEngineStateError);
    expect((await client.autoSyncTrainConfigAndStartEngine(job())).action).toBe("alreadyRolling");

    expect((await client.stopEngine()).status).toBe(ENGINE.OFFLINE);
    expect((await client.stopEngine()).status).toBe(ENGINE.OFFLINE); // no-op
    const again = await client.autoSyncTrainConfigAndStartEngine(job());
    expect(again).toMatchObject({ action: "started", engine: { status: ENGINE.ROLLING } });
    expect((await client.getEngineStatusOrCannotConnect()).status).toBe(ENGINE.ROLLING);
  });

  it("one episode: begin, chat, can-continue, buffer, pool, end; a second end is 'not found' (BC-26)", async () => {
    const { make, fetch, emu } = setup();
    const client = make();
    await client.autoSyncTrainConfigAndStartEngine(job());
    const ep = await client.beginEpisode({ discardEpisodeTimeoutSeconds: 60 });
    expect(ep.baseUrl).toBe(`${SERVER}/v1`);
    expect(ep.apiKey.startsWith("sk-ajet-")).toBe(true);
    await chatOnce(fetch, ep.baseUrl, ep.apiKey);
    expect(await client.canContinueEpisode(ep.episodeUuid)).toBe(true);
    const record = (await client.getEpisodeBuffer()).find((r) => r.episode_uuid === ep.episodeUuid);
    expect(record).toMatchObject({ episode_status: "claimed", client_uuid: client.clientUuid, llm_call_count: 1 });
    expect((await client.getRolloutStat()).running_episode_details?.[ep.episodeUuid]).toMatchObject({ client_uuid: client.clientUuid });

    expect(await client.endEpisode({ task_id: "gsm8k:test:0" }, ep.episodeUuid, { reward: 1, is_success: true })).toEqual({ kind: "ended", deliveredEarlier: false });
    expect(emu.engine.finishedRecords.has(ep.episodeUuid)).toBe(true);
    expect(await client.endEpisode("gsm8k:test:0", ep.episodeUuid, { reward: 1 })).toMatchObject({ kind: "lost", reason: "notFound" });
    expect(await client.endEpisode("gsm8k:test:0", ep.episodeUuid, { reward: 1 }, { isResend: true })).toEqual({ kind: "ended", deliveredEarlier: true });
  });

  it("BC-37 behind a gateway with a path prefix: base URL https://gw.example.com/ajet/v1 reaches the episode", async () => {
    const { make, fetch } = setup();
    /** The gateway: strips `/ajet` and forwards to the emulator. */
    const gateway = (input: string, init: RequestInit) => {
      const url = new URL(input);
      expect(url.pathname.startsWith("/ajet/")).toBe(true);
      return fetch(`${SERVER}${url.pathname.slice("/ajet".length)}${url.search}`, init);
    };
    const client = make({ baseURL: "https://gw.example.com/ajet/", fetch: gateway });
    await client.autoSyncTrainConfigAndStartEngine(job());
    const ep = await client.beginEpisode();
    expect(ep.baseUrl).toBe("https://gw.example.com/ajet/v1");
    await chatOnce(gateway, ep.baseUrl, ep.apiKey);
    expect((await client.endEpisode("t", ep.episodeUuid, { reward: 1 })).kind).toBe("ended");
  });

  it("abort gives the episode back; a late end is 'expired'; an empty pool is an 'empty' claim", async () => {
    const { make } = setup();
    const client = make();
    await client.autoSyncTrainConfigAndStartEngine(job(2, 2, 4)); // capacity: min(2, ceil(4/2)) × 2 = 4 episodes
    const held = [];
    for (let i = 0; i < 4; i++) {
      const r = await client.claimEpisode();
      expect(r.kind).toBe("claimed");
      if (r.kind === "claimed") held.push(r.episodeUuid);
    }
    expect(await client.claimEpisode()).toMatchObject({ kind: "empty" });
    expect(await client.abortEpisode(held[0]!)).toBe(true);
    expect(await client.canContinueEpisode(held[0]!)).toBe(false);
    expect(await client.endEpisode("t", held[0]!, { reward: 0 })).toMatchObject({ kind: "expired", reason: "notClaimed" });
    const other = make({ clientUuid: "someone-else" });
    const reclaimed = await other.claimEpisode();
    expect(reclaimed).toMatchObject({ kind: "claimed", episodeUuid: held[0] });
    expect(await client.endEpisode("t", held[0]!, { reward: 0 })).toMatchObject({ kind: "expired", reason: "claimedByOtherClient" });
  });

  it("BC-25 a claim during the weight sync waits for ROLLING and gets an episode of the next step", async () => {
    const { make, fetch, emu } = setup();
    const client = make();
    await client.autoSyncTrainConfigAndStartEngine(job(2, 2, 4));
    for (const task of ["a", "b"]) {
      for (let r = 0; r < 2; r++) {
        const ep = await client.beginEpisode();
        await chatOnce(fetch, ep.baseUrl, ep.apiKey);
        expect((await client.endEpisode(task, ep.episodeUuid, { reward: r })).kind).toBe("ended");
      }
    }
    expect(emu.engine.status).toBe(ENGINE.ROLLING_POST);
    expect(await client.claimEpisode()).toMatchObject({ kind: "notReady", status: ENGINE.ROLLING_POST });
    const next = await client.beginEpisode();
    expect(emu.engine.globalStep).toBe(2);
    expect(emu.engine.records.get(next.episodeUuid)?.client_uuid).toBe(client.clientUuid);
    expect(emu.stepLog[0]).toMatchObject({ globalStep: 1, completedTaskIds: ["a", "b"] });
  });

  it("a throttle policy is sent and recorded as the episode's optional_task_id (spec §3.8)", async () => {
    const { make } = setup();
    const client = make();
    await client.autoSyncTrainConfigAndStartEngine(job());
    const policy = { ratio: 1.5, expected_batch_size: 2, expected_num_repeat: 2, current_task_id: "countdown:train:7" };
    const ep = await client.beginEpisode({ throttlePolicy: policy });
    const record = (await client.getEpisodeBuffer()).find((r) => r.episode_uuid === ep.episodeUuid);
    expect(record?.optional_task_id).toBe("countdown:train:7");
  });

  it("beginEpisode raises SwarmServerOfflineError when the engine is stopped while it waits (spec §4.5)", async () => {
    const { make, hooks } = setup();
    const client = make();
    const admin = make({ clientUuid: "admin" });
    await client.autoSyncTrainConfigAndStartEngine(job(2, 2, 4));
    for (let i = 0; i < 4; i++) await client.claimEpisode(); // pool empty → beginEpisode backs off
    let stopped = false;
    hooks.onSleep = async () => {
      if (stopped) return;
      stopped = true;
      await admin.stopEngine();
    };
    await expect(client.beginEpisode()).rejects.toBeInstanceOf(SwarmServerOfflineError);
  });
});
