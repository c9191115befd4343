/**
 * The emulator's manners as on the upstream server (issue 10 item 10): episodes are registered about 1 s after
 * each edge to ROLLING (claims answer "No available episodes" until then); the trainer posts ROLLING_POST and
 * WEIGHT_SYNCING twice; `/start_engine` in the `dev` profile holds its answer ≥ 1 s; and, on a real socket, a
 * connection that answered a 500 resets the next request sent on it — which the client retries once on a fresh
 * connection only where a second send cannot do harm. Each manner can be switched off.
 */
import { Agent, fetch as undiciFetch } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { SwarmClient, SwarmConnectionError } from "../../../src/client/index.ts";
import { classifyFetchFailure, mayResend } from "../../../src/client/transport.ts";
import { startEmulator, type RunningEmulator } from "../../../src/emulator/index.ts";
import { ENGINE, ServerText } from "../../../src/protocol/index.ts";
import { advanceUntil, bootToRolling, call, callAdvancing, makeEmulator, runEpisode, yamlConfig } from "./helpers.ts";

const claimBody = { client_uuid: "client-a", episode_type: "train", discard_episode_timeout: 60, throttle_policy: null };

describe("registration after each ROLLING edge", () => {
  it("claims see 'No available episodes' for registrationDelayMs after ROLLING, then the full capacity is registered", async () => {
    const { emu, clock } = makeEmulator({ timings: { registrationDelayMs: 1_000 } });
    await bootToRolling(emu, clock, { batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
    const rollingAt = clock.nowMs();
    expect(emu.engine.queue).toEqual([]);
    const early = await call(emu, "POST", "/claim_episode", claimBody);
    expect(early.json).toMatchObject({ success: false, fail_cause: ServerText.noAvailableEpisodes });
    await advanceUntil(clock, () => emu.engine.queue.length > 0, 10);
    expect(clock.nowMs() - rollingAt).toBeGreaterThanOrEqual(990);
    expect(emu.engine.queue).toHaveLength(4);
    expect((await call(emu, "POST", "/claim_episode", claimBody)).json).toMatchObject({ success: true });
    emu.close();
  });

  it("the next step's episodes also wait registrationDelayMs after its ROLLING edge", async () => {
    const { emu, clock } = makeEmulator({ timings: { registrationDelayMs: 500 } });
    await bootToRolling(emu, clock, { batchSize: 1, numRepeat: 2, maxEnvWorker: 2 });
    await advanceUntil(clock, () => emu.engine.queue.length === 2, 10);
    for (let r = 0; r < 2; r++) await runEpisode(emu, "t", 1);
    await advanceUntil(clock, () => emu.engine.status === ENGINE.ROLLING && emu.engine.globalStep === 2, 5);
    const edgeAt = clock.nowMs();
    expect(emu.engine.queue).toEqual([]);
    await advanceUntil(clock, () => emu.engine.queue.length === 2, 5);
    expect(clock.nowMs() - edgeAt).toBeGreaterThanOrEqual(495);
    emu.close();
  });
});

describe("repeated status posts", () => {
  it("ROLLING_POST is posted twice (stop callback, then the trainer's tick) and WEIGHT_SYNCING twice; off with repeatStatusPosts false", async () => {
    for (const repeat of [true, false]) {
      const { emu, clock } = makeEmulator({ manners: { repeatStatusPosts: repeat } });
      await bootToRolling(emu, clock, { batchSize: 1, numRepeat: 2, maxEnvWorker: 2 });
      for (let r = 0; r < 2; r++) await runEpisode(emu, "t", 1);
      await advanceUntil(clock, () => emu.engine.status === ENGINE.ROLLING && emu.engine.globalStep === 2, 5);
      const seen = emu.engine.statusHistory.map((c) => c.to).filter((to) => to === ENGINE.ROLLING_POST || to === ENGINE.WEIGHT_SYNCING);
      expect(seen).toEqual(
        repeat
          ? [ENGINE.ROLLING_POST, ENGINE.ROLLING_POST, ENGINE.WEIGHT_SYNCING, ENGINE.WEIGHT_SYNCING]
          : [ENGINE.ROLLING_POST, ENGINE.WEIGHT_SYNCING],
      );
      emu.close();
    }
  });
});

describe("/start_engine in the dev profile", () => {
  it("holds its answer at least 1 s while BOOTING is observable", async () => {
    const { emu, clock } = makeEmulator({ profile: "dev" });
    expect(emu.config.timings.startEngineMs).toBeGreaterThanOrEqual(1_000);
    expect((await call(emu, "POST", "/sync_train_config", { yaml_as_string: yamlConfig() })).status).toBe(200);
    const startedAt = clock.nowMs();
    const start = await callAdvancing(emu, clock, "POST", "/start_engine", {}, 50);
    expect(start.json).toMatchObject({ success: true });
    expect(clock.nowMs() - startedAt).toBeGreaterThanOrEqual(1_000);
    expect(emu.engine.statusHistory[0]?.to).toBe(ENGINE.BOOTING);
    emu.close();
  });
});

describe("connection reset after a 500 (real socket)", () => {
  let running: RunningEmulator | undefined;
  let agent: Agent | undefined;
  afterEach(async () => {
    await running?.close();
    await agent?.close();
    running = undefined;
    agent = undefined;
  });

  /** One keep-alive connection for every request, so the second request reuses the socket that answered 500. */
  const oneConnection = () => {
    agent = new Agent({ connections: 1, pipelining: 1 });
    const a = agent;
    return (input: string, init: RequestInit) => undiciFetch(input, { ...(init as object), dispatcher: a }) as unknown as Promise<Response>;
  };

  it("the request after a 500 on the same connection is reset; a fresh connection is answered; off with resetAfter500 false", async () => {
    for (const reset of [true, false]) {
      running = await startEmulator({ port: 0, profile: "fast", manners: { resetAfter500: reset } });
      running.emulator.hooks.claimEpisode = () => ({ status: 500 });
      const fetch = oneConnection();
      const first = await fetch(`${running.url}/claim_episode`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(claimBody) });
      expect(first.status).toBe(500);
      await first.text();
      const second = await fetch(`${running.url}/get_engine_status`, { method: "GET" }).then((r) => r.status, (err: unknown) => classifyFetchFailure(err));
      expect(second).toBe(reset ? "reset" : 200);
      expect((await undiciFetch(`${running.url}/get_engine_status`)).status).toBe(200);
      await running.close();
      await agent?.close();
      running = undefined;
      agent = undefined;
    }
  });

  it("SwarmClient: a status read after the 500 is resent once and answered; an /end_episode on the reset connection is not resent", async () => {
    running = await startEmulator({ port: 0, profile: "fast" });
    const fetch = oneConnection();
    const client = new SwarmClient({ baseURL: running.url, clientUuid: "client-a", fetch });
    const emu = running.emulator;
    let claims = 0;
    emu.hooks.claimEpisode = () => (++claims === 1 ? { status: 500 } : undefined);
    await expect(client.claimEpisode({ episodeType: "train", discardEpisodeTimeoutSeconds: 60, throttlePolicy: null })).rejects.toThrow();
    const status = await client.getEngineStatus();
    expect(status.status).toBe(ENGINE.OFFLINE);

    let ends = 0;
    emu.hooks.endEpisode = () => {
      ends++;
    };
    emu.hooks.claimEpisode = () => ({ status: 500 });
    await expect(client.claimEpisode({ episodeType: "train", discardEpisodeTimeoutSeconds: 60, throttlePolicy: null })).rejects.toThrow();
    const ended = client.endEpisode("t", "e".repeat(32), { reward: 1 });
    await expect(ended).rejects.toBeInstanceOf(SwarmConnectionError);
    expect(ends).toBe(0); // reset before the server read it, and not sent a second time
  });

  it("resends: any endpoint when no connection was made; only reads after a reset", () => {
    const refused = Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });
    const reset = Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" }) });
    const workerdReset = new Error("Network connection lost.");
    expect([classifyFetchFailure(refused), classifyFetchFailure(reset), classifyFetchFailure(workerdReset), classifyFetchFailure(new Error("boom"))]).toEqual(["notSent", "reset", "reset", "other"]);
    expect(mayResend("endEpisode", refused)).toBe(true);
    expect(mayResend("endEpisode", reset)).toBe(false);
    expect(mayResend("claimEpisode", workerdReset)).toBe(false);
    expect(mayResend("getEngineStatus", reset)).toBe(true);
  });
});
