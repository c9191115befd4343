/**
 * BC-51 inside workerd: a run's Durable Object rebuilt from SQLite (a fresh instance over the same storage, as a
 * deploy reset or an eviction leaves it) reloads the same episodes; claimed-but-unended episodes past their lease
 * get exactly one abort and their repeat is re-queued; a recorded end is resolved from the outbox ("not found" on
 * the resend = delivered) and never ended twice.
 */
import { abortAllDurableObjects } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { RunView } from "../../src/edge/run/run-views.ts";
import { ControlledRun, countdownSpec, stubOf, TestEmulator } from "./support.ts";

const OUTPUT = { reward: 1, is_success: true, metadata: {}, log_metrics: {} };

async function rollingRun() {
  const emu = await TestEmulator.start({ policy: { initialAccuracy: 1, malformedRate: 0 }, answerKey: [{ target: 24, nums: [2, 3, 4] }] });
  await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
  const run = await ControlledRun.create(countdownSpec(emu.url, { maxSteps: 1 }));
  return { emu, run };
}

/** One chat call on a claimed episode (so the engine keeps it). */
async function chatOnce(baseUrl: string, apiKey: string) {
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "What is 2 + 3?" }] }),
  });
  expect(res.status).toBe(200);
  await res.text();
}

describe("an episode RPC never waits behind swarm calls", () => {
  it("a lease abort decided during a consumer's RPC is queued for the alarm (BC-23: the consumer's claim must not sit idle), then sent once", async () => {
    const { emu, run } = await rollingRun();
    const [dead, other] = run.sent;
    if (!dead || !other) throw new Error("expected dispatched episodes");
    const client = emu.client({ clientUuid: dead.clientUuid });
    const c = await client.claimEpisode({ episodeType: "train", discardEpisodeTimeoutSeconds: 60 });
    if (c.kind !== "claimed") throw new Error(`claim: ${c.kind}`);
    await run.call((s) => s.episodeClaimed({ episodeKey: dead.episodeKey, attempt: 1, dispatchId: dead.dispatchId, claims: [{ swarm: "default", episodeUuid: c.episodeUuid, globalStep: 1 }] }));
    await run.expireLeases([dead.episodeKey]);

    // another consumer's RPC is the next event: it decides the abort but does not carry it out
    await run.call((s) => s.claimFailed({ episodeKey: other.episodeKey, attempt: 1, dispatchId: other.dispatchId, kind: "noEpisodes" }));
    expect((await emu.requests()).filter((r) => r.path === "/abort_episode")).toEqual([]);
    expect(await run.call((_s, state) => state.storage.sql.exec("SELECT count(*) AS n FROM pending_commands").one()["n"])).toBe(1);

    // the alarm carries it out, once
    await run.tick();
    await run.tick();
    expect((await emu.requests()).filter((r) => r.path === "/abort_episode").map((r) => r.body.episode_uuid)).toEqual([c.episodeUuid]);
    expect(await run.call((_s, state) => state.storage.sql.exec("SELECT count(*) AS n FROM pending_commands").one()["n"])).toBe(0);
  });
});

describe("BC-51 rebuild from storage", () => {
  it("BC-51 a fresh instance (and the object's own, after a reset) reloads the same run and episodes", async () => {
    const { run } = await rollingRun();
    expect(run.sent).toHaveLength(4); // one window: 2 tasks × 2 repeats, dispatched at creation
    const first = await run.call((s) => s.status());
    const rows = await run.rows();
    expect(Object.keys(rows).sort()).toEqual(run.sent.map((m) => m.episodeKey).sort());
    expect(Object.values(rows).every((r) => r.status === "dispatched" && r.attempt === 1)).toBe(true);

    const again = await run.call((s) => s.status());
    expect(again).toEqual(first);
    await abortAllDurableObjects();
    const viaStub = (await stubOf(run.runId).status()) as unknown as RunView; // a stub from before the reset is broken by design
    expect({ ...viaStub, log: [] }).toEqual({ ...first, log: [] });
    expect(await run.rows()).toEqual(rows);
  });

  it("BC-51 past their lease: a claimed-but-unended episode gets one abort and is re-queued; a recorded end resolves as delivered, never ended twice", async () => {
    const { emu, run } = await rollingRun();
    const [running, ended] = run.sent;
    if (!running || !ended) throw new Error("expected dispatched episodes");
    const client = emu.client({ clientUuid: running.clientUuid });
    const claim = async () => {
      const r = await client.claimEpisode({ episodeType: "train", discardEpisodeTimeoutSeconds: 60 });
      if (r.kind !== "claimed") throw new Error(`claim: ${r.kind}`);
      return r;
    };

    // consumer 1 claimed and died while running its function
    const c1 = await claim();
    expect(await run.call((s) => s.episodeClaimed({ episodeKey: running.episodeKey, attempt: 1, dispatchId: running.dispatchId, claims: [{ swarm: "default", episodeUuid: c1.episodeUuid, globalStep: 1 }] }))).toMatchObject({ status: "applied" });
    // consumer 2 recorded its end (outbox), the server accepted the end, then it died before reporting
    const c2 = await claim();
    await run.call((s) => s.episodeClaimed({ episodeKey: ended.episodeKey, attempt: 1, dispatchId: ended.dispatchId, claims: [{ swarm: "default", episodeUuid: c2.episodeUuid, globalStep: 1 }] }));
    await chatOnce(c2.baseUrl, c2.apiKey);
    expect(await run.call((s) => s.episodeOutcomeRecorded({ episodeKey: ended.episodeKey, attempt: 1, outcome: { kind: "end", reward: 1 }, outputs: { default: OUTPUT } }))).toMatchObject({ status: "applied" });
    expect(await client.endEpisode(ended.taskId, c2.episodeUuid, OUTPUT)).toEqual({ kind: "ended", deliveredEarlier: false });

    // a deploy resets the object; its next wake is past both leases
    await run.expireLeases([running.episodeKey, ended.episodeKey]);
    await run.tick();

    const requests = await emu.requests();
    const aborts = requests.filter((r) => r.path === "/abort_episode");
    expect(aborts.map((r) => r.body.episode_uuid)).toEqual([c1.episodeUuid]);
    const ends = requests.filter((r) => r.path === "/end_episode" && r.body.episode_uuid === c2.episodeUuid);
    expect(ends.map((r) => r.status)).toEqual([200, 400]); // the outbox resend met "not found": delivered
    const state = await emu.state();
    expect(state.stepLog.flatMap((s) => s.episodes).filter((e) => e.episodeUuid === c2.episodeUuid)).toHaveLength(1);
    expect(state.records.find((r) => r.episode_uuid === c1.episodeUuid)?.episode_status).toBe("registered");

    const rows = await run.rows();
    expect(rows[ended.episodeKey]).toMatchObject({ status: "ended", reward: 1, attempt: 1 });
    expect(rows[running.episodeKey]).toMatchObject({ attempt: 2, status: "dispatched", lastCause: "lease_expired" });
    const retry = run.sent.filter((m) => m.episodeKey === running.episodeKey);
    expect(retry.map((m) => m.attempt)).toEqual([1, 2]);
    expect(retry[1]!.taskId).toBe(running.taskId);

    // waking again (another reset) sends nothing more
    await run.tick();
    await run.tick();
    const after = await emu.requests();
    expect(after.filter((r) => r.path === "/abort_episode" || r.path === "/end_episode")).toHaveLength(aborts.length + 2);
    const view = (await run.call((s) => s.status()))!;
    expect(view.totals).toMatchObject({ episodesEnded: 1, reconciles: 2, attemptsFailed: 1 });
    // the attempt the object closed itself has its attempt row (the dashboard's failures and /metrics count it)
    const attempts = (await run.call((s) => s.attempts({ limit: 100 }))) ?? [];
    expect(attempts.filter((a) => a.kind === "failed").map((a) => [a.episodeKey, a.attempt, a.cause])).toEqual([[running.episodeKey, 1, "lease_expired"]]);
    const metrics = (await run.call((s) => s.metrics()))!;
    expect(metrics.groups.reduce((n, g) => n + (g.failuresByCause["lease_expired"] ?? 0), 0)).toBe(1);
  });

  it("issue 25: an end reported unknown (its send never reached the server) keeps its outbox row: the recheck sends it again and it is ended, never outbox_missing", async () => {
    const { emu, run } = await rollingRun();
    const [first] = run.sent;
    if (!first) throw new Error("expected a dispatched episode");
    const client = emu.client({ clientUuid: first.clientUuid });
    const c = await client.claimEpisode({ episodeType: "train", discardEpisodeTimeoutSeconds: 60 });
    if (c.kind !== "claimed") throw new Error(`claim: ${c.kind}`);
    await run.call((s) => s.episodeClaimed({ episodeKey: first.episodeKey, attempt: 1, dispatchId: first.dispatchId, claims: [{ swarm: "default", episodeUuid: c.episodeUuid, globalStep: 1 }] }));
    await chatOnce(c.baseUrl, c.apiKey);
    await run.call((s) => s.episodeOutcomeRecorded({ episodeKey: first.episodeKey, attempt: 1, outcome: { kind: "end", reward: 1 }, outputs: { default: OUTPUT } }));
    // a gateway answered the end and its resend with a 502 page: the consumer reports the outcome unknown
    expect(await run.call((s) => s.episodeReported({ episodeKey: first.episodeKey, attempt: 1, result: "unknown", reached: false }))).toMatchObject({ status: "applied" });
    await run.expireLeases([first.episodeKey]);
    await run.tick();
    const ends = (await emu.requests()).filter((r) => r.path === "/end_episode" && r.body.episode_uuid === c.episodeUuid);
    expect(ends.map((r) => r.status)).toEqual([200]);
    const rows = await run.rows();
    expect(rows[first.episodeKey]).toMatchObject({ status: "ended", attempt: 1, reward: 1 });
    const view = (await run.call((s) => s.status()))!;
    expect(view.totals).toMatchObject({ episodesEnded: 1, attemptsFailed: 0 });
  });

  it("BC-26 an outbox resend never ends a server episode that another consumer of the run holds now (reverted, then re-claimed)", async () => {
    const { emu, run } = await rollingRun();
    const [lost, other] = run.sent;
    if (!lost || !other) throw new Error("expected dispatched episodes");
    const client = emu.client({ clientUuid: lost.clientUuid });
    const stranger = emu.client({ clientUuid: "another-trainer" });
    const claimWith = async (c: typeof client) => {
      const r = await c.claimEpisode({ episodeType: "train", discardEpisodeTimeoutSeconds: 60 });
      if (r.kind !== "claimed") throw new Error(`claim: ${r.kind}`);
      return r;
    };
    // consumer A: claimed u, recorded its end, but the end never reached the server (unknown outcome, A died)
    const u = await claimWith(client);
    await run.call((s) => s.episodeClaimed({ episodeKey: lost.episodeKey, attempt: 1, dispatchId: lost.dispatchId, claims: [{ swarm: "default", episodeUuid: u.episodeUuid, globalStep: 1 }] }));
    await chatOnce(u.baseUrl, u.apiKey);
    await run.call((s) => s.episodeOutcomeRecorded({ episodeKey: lost.episodeKey, attempt: 1, outcome: { kind: "end", reward: 1 }, outputs: { default: OUTPUT } }));
    // the idle janitor reverts u; the pool hands it to consumer B of the same run (same client uuid)
    await stranger.abortEpisode(u.episodeUuid);
    while ((await emu.state()).queue[0] !== u.episodeUuid) await claimWith(stranger);
    const again = await claimWith(client);
    expect(again.episodeUuid).toBe(u.episodeUuid);
    expect(await run.call((s) => s.episodeClaimed({ episodeKey: other.episodeKey, attempt: 1, dispatchId: other.dispatchId, claims: [{ swarm: "default", episodeUuid: u.episodeUuid, globalStep: 1 }] }))).toMatchObject({ status: "applied" });
    await chatOnce(again.baseUrl, again.apiKey);

    // A's report lease passes: the outbox must not end B's episode with A's output
    await run.expireLeases([lost.episodeKey]);
    await run.tick();
    const ends = (await emu.requests()).filter((r) => r.path === "/end_episode");
    expect(ends).toHaveLength(0);
    const rows = await run.rows();
    expect(rows[lost.episodeKey]).toMatchObject({ attempt: 2 }); // its end never landed: the repeat runs again
    expect(rows[other.episodeKey]).toMatchObject({ status: "running", attempt: 1 });

    // B ends its own episode normally
    expect(await client.endEpisode(other.taskId, u.episodeUuid, { ...OUTPUT, reward: 0.1 })).toEqual({ kind: "ended", deliveredEarlier: false });
    const accepted = (await emu.state()).stepLog.flatMap((s) => s.episodes);
    expect(accepted).toEqual([expect.objectContaining({ episodeUuid: u.episodeUuid, taskId: other.taskId, reward: 0.1 })]);
  });
});
