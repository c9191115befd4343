import { describe, expect, it, vi } from "vitest";
import {
  SwarmAbortError,
  type SwarmAPIError,
  SwarmConfigError,
  SwarmConnectionError,
  SwarmDeadlineError,
  SwarmInputError,
  SwarmServerOfflineError,
  SwarmTimeoutError,
} from "../../../src/client/index.ts";
import { ServerText } from "../../../src/protocol/index.ts";
import { claimFail, claimOk, fakeClock, json, never, refused, scriptedClient, status } from "./_support.ts";

const E1 = "e1000000000000000000000000000001";
const ROLLING = status("ENGINE.ROLLING");
const SYNCING = status("ENGINE.WEIGHT_SYNCING");
const notReady = (s: string) => claimFail(ServerText.engineNotReady(s));
const empty = claimFail(ServerText.noAvailableEpisodes);
const S = "GET /get_engine_status";
const C = "POST /claim_episode";
const P = "GET /get_current_batch_rollout_pool_information";

describe("beginEpisode retry rules (spec §8.3)", () => {
  it("BC-25 claims during WEIGHT_SYNCING wait on the status edge back to ROLLING: no tight loop", async () => {
    const { client, server, clock } = scriptedClient({
      [S]: [ROLLING, SYNCING, SYNCING, ROLLING],
      [C]: [notReady("ENGINE.WEIGHT_SYNCING"), claimOk(E1)],
    });
    const ep = await client.beginEpisode();
    expect(ep.episodeUuid).toBe(E1);
    // one claim, then only status polls until ROLLING, then one claim
    expect(server.routes()).toEqual([S, C, S, S, S, C]);
    expect(clock.state.sleeps).toEqual([5_000, 5_000, 5_000]);
  });

  it("BC-25 waits spread with jitter and are never shorter than several seconds", async () => {
    const randoms = [0, 0.99, 0.5];
    let i = 0;
    const clock = fakeClock(0, () => randoms[i++ % randoms.length]!);
    const { client } = scriptedClient(
      { [S]: [ROLLING, SYNCING, SYNCING, ROLLING], [C]: [notReady("ENGINE.WEIGHT_SYNCING"), claimOk(E1)] },
      { now: clock.now, sleep: clock.sleep, random: clock.random },
    );
    await client.beginEpisode();
    expect(clock.state.sleeps).toHaveLength(3);
    for (const ms of clock.state.sleeps) expect(ms).toBeGreaterThanOrEqual(3_750);
    expect(new Set(clock.state.sleeps).size).toBe(3);
  });

  it("backs off on 'No available episodes' (2 s doubling, capped at 10 s) without extra status polls", async () => {
    const { client, server, clock } = scriptedClient({ [S]: ROLLING, [C]: [empty, empty, empty, empty, claimOk(E1)] });
    expect((await client.beginEpisode()).episodeUuid).toBe(E1);
    expect(clock.state.sleeps).toEqual([2_000, 4_000, 8_000, 10_000]);
    expect(server.callsTo(S)).toHaveLength(1);
    expect(server.callsTo(C)).toHaveLength(5);
  });

  it("waits for ROLLING first when the engine is booting", async () => {
    const { client, server } = scriptedClient({ [S]: [status("ENGINE.BOOTING"), status("ENGINE.BOOTING"), ROLLING], [C]: claimOk(E1) });
    await client.beginEpisode();
    expect(server.routes()).toEqual([S, S, S, C]);
  });

  it("keeps watching when the status poll cannot connect", async () => {
    const { client, server, clock } = scriptedClient({ [S]: [refused, ROLLING], [C]: claimOk(E1) });
    await client.beginEpisode();
    expect(server.routes()).toEqual([S, S, C]);
    expect(clock.state.sleeps).toEqual([5_000]);
  });

  it("raises SwarmServerOfflineError when OFFLINE follows a non-OFFLINE status (spec §4.5)", async () => {
    const { client, server } = scriptedClient({ [S]: [ROLLING, status("ENGINE.OFFLINE")], [C]: notReady("ENGINE.WEIGHT_SYNCING") });
    const err = await client.beginEpisode().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SwarmServerOfflineError);
    expect((err as Error).message).toBe(
      "Engine status is OFFLINE while waiting for [ENGINE.ROLLING]. This may indicate an error in the engine. Please check the swarm server logs for details.",
    );
    expect(server.callsTo(C)).toHaveLength(1);
  });

  it("ROLLING then OFFLINE (no other status in between) also raises SwarmServerOfflineError", async () => {
    const { client } = scriptedClient({ [S]: ROLLING, [C]: [empty, notReady("ENGINE.OFFLINE")] });
    await expect(client.beginEpisode()).rejects.toBeInstanceOf(SwarmServerOfflineError);
    const b = scriptedClient({ [S]: [ROLLING, status("ENGINE.OFFLINE")], [C]: [claimFail("brand new reason")] });
    await expect(b.client.beginEpisode()).rejects.toBeInstanceOf(SwarmServerOfflineError);
  });

  it("an engine OFFLINE from the start is waited on until the deadline, without claims", async () => {
    const { client, server, clock } = scriptedClient({ [S]: status("ENGINE.OFFLINE", null), [C]: claimOk(E1) });
    const err = (await client.beginEpisode({ deadlineMs: clock.now() + 60_000 }).catch((e: unknown) => e)) as SwarmDeadlineError;
    expect(err).toBeInstanceOf(SwarmDeadlineError);
    expect(err.lastStatus).toBe("ENGINE.OFFLINE");
    expect(server.callsTo(C)).toHaveLength(0);
    expect(clock.state.sleeps.reduce((a, b) => a + b, 0)).toBe(60_000);
  });

  it("stops at the deadline during 'No available episodes' back-off", async () => {
    const { client, server, clock } = scriptedClient({ [S]: ROLLING, [C]: empty });
    const err = (await client.beginEpisode({ deadlineMs: clock.now() + 5_000 }).catch((e: unknown) => e)) as SwarmDeadlineError;
    expect(err).toBeInstanceOf(SwarmDeadlineError);
    expect(err.lastStatus).toBe("ENGINE.ROLLING");
    expect(clock.state.sleeps).toEqual([2_000, 3_000]);
    expect(server.callsTo(C)).toHaveLength(2);
  });

  it("BC-36 a 422 from claim_episode is thrown at once, never retried", async () => {
    const { client, server, clock } = scriptedClient({
      [S]: ROLLING,
      [C]: json(422, { detail: [{ type: "missing", loc: ["body", "discard_episode_timeout"], msg: "Field required" }] }),
    });
    await expect(client.beginEpisode()).rejects.toBeInstanceOf(SwarmConfigError);
    expect(server.callsTo(C)).toHaveLength(1);
    expect(clock.state.sleeps).toEqual([]);
  });

  it("other 4xx answers are thrown, not retried", async () => {
    const { client, server } = scriptedClient({ [S]: ROLLING, [C]: json(400, { detail: "Unknown episode_type: x" }) });
    const err = (await client.beginEpisode().catch((e: unknown) => e)) as SwarmAPIError;
    expect(err.detail).toBe("Unknown episode_type: x");
    expect(server.callsTo(C)).toHaveLength(1);
  });

  it("retries a transport failure after 15 s and re-checks the status", async () => {
    const { client, server, clock } = scriptedClient({ [S]: ROLLING, [C]: [refused, claimOk(E1)] });
    expect((await client.beginEpisode()).episodeUuid).toBe(E1);
    expect(server.routes()).toEqual([S, C, S, C]);
    expect(clock.state.sleeps).toEqual([15_000]);
  });

  it("an unrecognised fail_cause is retried after 15 s with a warning", async () => {
    const { client, clock, log } = scriptedClient({ [S]: ROLLING, [C]: [claimFail("brand new reason"), claimOk(E1)] });
    await client.beginEpisode();
    expect(clock.state.sleeps).toEqual([15_000]);
    expect(log.lines).toContainEqual({ level: "warn", msg: "Failed to claim episode: brand new reason. Retrying ..." });
  });

  it("a fetch error marked retryable:false (e.g. subrequest budget) ends the loop at once", async () => {
    const budget = () => Promise.reject(Object.assign(new Error("subrequest budget exhausted"), { retryable: false }));
    const a = scriptedClient({ [S]: ROLLING, [C]: budget });
    const errA = (await a.client.beginEpisode().catch((e: unknown) => e)) as Error;
    expect(errA.cause).toMatchObject({ message: "subrequest budget exhausted" });
    expect(a.clock.state.sleeps).toEqual([]);
    const b = scriptedClient({ [S]: [ROLLING, budget], [C]: notReady("ENGINE.WEIGHT_SYNCING") });
    const errB = (await b.client.beginEpisode().catch((e: unknown) => e)) as Error;
    expect(errB.cause).toMatchObject({ message: "subrequest budget exhausted" });
    expect(b.clock.state.sleeps).toHaveLength(1);
  });

  it("a claim timeout at the deadline gives SwarmDeadlineError with the timeout as cause", async () => {
    const { client, clock } = scriptedClient({ [S]: ROLLING, [C]: never });
    // 5 ms left: the claim's timeout is capped to them, so the never-answering claim times out at the deadline.
    const err = (await client.beginEpisode({ deadlineMs: clock.now() + 5 }).catch((e: unknown) => e)) as SwarmDeadlineError;
    expect(err).toBeInstanceOf(SwarmDeadlineError);
    expect(err.cause).toBeInstanceOf(SwarmTimeoutError);
  });

  it("the caller's signal ends the wait with SwarmAbortError", async () => {
    const ac = new AbortController();
    const { client } = scriptedClient({
      [S]: [ROLLING, SYNCING],
      [C]: () => {
        ac.abort("run stopped");
        return notReady("ENGINE.WEIGHT_SYNCING")();
      },
    });
    const err = (await client.beginEpisode({ signal: ac.signal }).catch((e: unknown) => e)) as SwarmAbortError;
    expect(err).toBeInstanceOf(SwarmAbortError);
    expect(err.cause).toBe("run stopped");
  });

  it("refuses bad options before any request", async () => {
    const { client, server } = scriptedClient({ [S]: ROLLING, [C]: claimOk(E1) });
    await expect(client.beginEpisode({ discardEpisodeTimeoutSeconds: -1 })).rejects.toBeInstanceOf(SwarmInputError);
    expect(server.calls).toHaveLength(0);
  });
});

describe("beginEpisode with a throttle policy (spec §7.1, BC-31)", () => {
  const policy = { ratio: 0.5, expected_batch_size: 32, expected_num_repeat: 4, current_task_id: "gsm8k:train:99" };
  const running = (n: number) => {
    const details: Record<string, Record<string, string>> = {};
    for (let i = 0; i < n; i++) details[`ep${i}`] = { client_uuid: "client-1", optional_task_id: `t${i}` };
    return json(200, { running_episode_details: details });
  };

  it("BC-31 waits 2 s while throttled, then claims and sends the policy; the task is then remembered", async () => {
    const { client, server, clock } = scriptedClient({ [S]: ROLLING, [P]: [running(16), running(0), running(16)], [C]: claimOk(E1) });
    await client.beginEpisode({ throttlePolicy: policy });
    expect(server.routes()).toEqual([S, P, S, P, C]);
    expect(clock.state.sleeps).toEqual([2_000]);
    expect(server.callsTo(C)[0]!.body).toMatchObject({ throttle_policy: policy });
    // the same task again: over the cap, but recently seen → not throttled
    await client.beginEpisode({ throttlePolicy: policy });
    expect(server.routes().slice(5)).toEqual([S, P, C]);
  });

  it("eval claims skip the throttle check", async () => {
    const { client, server } = scriptedClient({ [S]: ROLLING, [C]: claimOk(E1) });
    await client.beginEpisode({ episodeType: "eval", throttlePolicy: policy });
    expect(server.routes()).toEqual([S, C]);
  });

  it("a job whose collection method does not support throttling is refused (spec §7.1 step 1)", async () => {
    const { client } = scriptedClient({
      [S]: [status("ENGINE.OFFLINE"), ROLLING],
      "POST /sync_train_config": json(200, { success: true }),
      [P]: running(0),
      [C]: claimOk(E1),
    });
    await client.syncTrainConfig({ toYaml: () => "ajet: {}\n", sampleCollectionMethod: "rollout_until_finish_enough_episodes" });
    await expect(client.beginEpisode({ throttlePolicy: policy })).rejects.toThrow(
      "throttlePolicy: Current sample collection method (rollout_until_finish_enough_episodes) does not support throttle policy.",
    );
  });

  it("a failed pool fetch means no throttling (Python: all-default pool)", async () => {
    const { client, server } = scriptedClient({ [S]: ROLLING, [P]: refused, [C]: claimOk(E1) });
    await client.beginEpisode({ throttlePolicy: policy });
    expect(server.routes()).toEqual([S, P, C]);
  });
});

describe("beginEpisode: back-off streaks, deadline causes and per-claim timeouts", () => {
  it("the 'No available episodes' back-off starts again at 2 s after a not-ready or a refused claim", async () => {
    const a = scriptedClient({ [S]: ROLLING, [C]: [empty, empty, notReady("ENGINE.WEIGHT_SYNCING"), empty, claimOk(E1)] });
    await a.client.beginEpisode();
    expect(a.clock.state.sleeps).toEqual([2_000, 4_000, 5_000, 2_000]);
    const b = scriptedClient({ [S]: ROLLING, [C]: [empty, empty, claimFail("brand new reason"), empty, claimOk(E1)] });
    await b.client.beginEpisode();
    expect(b.clock.state.sleeps).toEqual([2_000, 4_000, 15_000, 2_000]);
  });

  it("the deadline error carries the last attempt's error only when that attempt failed", async () => {
    const a = scriptedClient({ [S]: ROLLING, [C]: refused });
    const failed = (await a.client.beginEpisode({ deadlineMs: a.clock.now() + 10_000 }).catch((e: unknown) => e)) as SwarmDeadlineError;
    expect(failed).toBeInstanceOf(SwarmDeadlineError);
    expect(failed.cause).toBeInstanceOf(SwarmConnectionError);
    expect(failed.lastStatus).toBe("ENGINE.ROLLING");
    expect(failed.message).toBe("beginEpisode: deadline reached (last engine status: ENGINE.ROLLING)");
    const b = scriptedClient({ [S]: ROLLING, [C]: [refused, empty] });
    const answered = (await b.client.beginEpisode({ deadlineMs: b.clock.now() + 17_000 }).catch((e: unknown) => e)) as SwarmDeadlineError;
    expect(answered).toBeInstanceOf(SwarmDeadlineError);
    expect(b.server.callsTo(C)).toHaveLength(2);
    expect(answered.cause).toBeUndefined();
  });

  it("each claim and status poll takes the client's own timeouts; a timed-out claim is logged and retried", async () => {
    vi.useFakeTimers();
    try {
      const { client, log } = scriptedClient({ [S]: [ROLLING, status("ENGINE.BOOTING"), never, ROLLING], [C]: [never, claimOk(E1)] }, { timeoutsMs: { claimEpisode: 50, getEngineStatus: 70 } });
      const outcome = client.beginEpisode();
      await vi.advanceTimersByTimeAsync(50); // the claim times out
      await vi.advanceTimersByTimeAsync(70); // the watch's poll (BOOTING after the retry pause) times out: watched on
      expect((await outcome).episodeUuid).toBe(E1);
      expect(log.lines).toContainEqual({ level: "warn", msg: "Error claiming episode: POST /claim_episode timed out after 50 ms (the server may still complete it). Retrying ..." });
      expect(log.lines).toContainEqual({ level: "debug", msg: "status poll failed while waiting for engine status [ENGINE.ROLLING]: GET /get_engine_status timed out after 70 ms (the server may still complete it)" });
    } finally {
      vi.useRealTimers();
    }
  });

  it("the first status read takes the time left before the deadline as its timeout, and the caller's signal", async () => {
    vi.useFakeTimers();
    try {
      const { client, server, clock } = scriptedClient({ [S]: never, [C]: claimOk(E1) });
      let settled = false;
      const outcome = client.beginEpisode({ deadlineMs: clock.now() + 100 }).catch((e: unknown) => ((settled = true), e));
      await vi.advanceTimersByTimeAsync(99);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(await outcome).toBeInstanceOf(SwarmDeadlineError);
      const ac = new AbortController();
      const aborted = client.beginEpisode({ signal: ac.signal }).catch((e: unknown) => e);
      await vi.waitFor(() => expect(server.callsTo(S)).toHaveLength(2));
      ac.abort("run stopped");
      expect(await aborted).toBeInstanceOf(SwarmAbortError);
    } finally {
      vi.useRealTimers();
    }
  });

  it("the pool read of a throttled claim takes the claim's timeout: a pool that does not answer in it means no throttling", async () => {
    vi.useFakeTimers();
    try {
      const policy = { ratio: 0.5, expected_batch_size: 32, expected_num_repeat: 4, current_task_id: "gsm8k:train:99" };
      const { client, server } = scriptedClient({ [S]: ROLLING, [P]: never, [C]: claimOk(E1) }, { timeoutsMs: { claimEpisode: 50 } });
      const outcome = client.beginEpisode({ throttlePolicy: policy });
      await vi.advanceTimersByTimeAsync(50);
      expect((await outcome).episodeUuid).toBe(E1);
      expect(server.routes()).toEqual([S, P, C]);
      expect(server.callsTo(P)[0]!.signal!.aborted).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("a throttled attempt is logged with the policy's reason", async () => {
    const policy = { ratio: 0.5, expected_batch_size: 32, expected_num_repeat: 4, current_task_id: "gsm8k:train:99" };
    const details: Record<string, Record<string, string>> = {};
    for (let i = 0; i < 16; i++) details[`ep${i}`] = { client_uuid: "client-1", optional_task_id: `t${i}` };
    const { client, log } = scriptedClient({ [S]: ROLLING, [P]: [json(200, { running_episode_details: details }), json(200, {})], [C]: claimOk(E1) });
    await client.beginEpisode({ throttlePolicy: policy });
    const info = log.lines.filter((l) => l.level === "info").map((l) => l.msg);
    expect(info).toHaveLength(1);
    expect(info[0]).toMatch(/^Throttle policy is active, delaying episode \.\.\. \(.+\)$/);
  });
});
