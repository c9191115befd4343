/**
 * The queue consumer and the scheduler's episode port inside workerd, driven directly: messages the Durable
 * Object dispatched are captured (ControlledRun) and fed to this Worker's `queue` handler with createMessageBatch.
 * At-least-once everywhere: a repeated RPC is `duplicate` and changes nothing; a redelivered message never runs or
 * ends a second episode; a malformed message is acked, never retried forever.
 */
import { abortAllDurableObjects, env, runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { RunView } from "../../src/edge/run/run-views.ts";
import { CONSUMER_WALL_LIMIT_MS, consumerWallMs, invocationShare } from "../../src/edge/consumer/episode-consumer.ts";
import type { Env } from "../../src/edge/ground/env.ts";
import { apiFetch, ControlledRun, countdownSpec, deliver, TestEmulator } from "./support.ts";

// Date is faked in this isolate (the Durable Object shares it): the object's own alarms land an hour ahead in real
// time and never fire during a test, so only what the test delivers runs.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(Date.now() + 3_600_000);
});
afterEach(() => void vi.useRealTimers());

async function setup() {
  const emu = await TestEmulator.start({ policy: { initialAccuracy: 1, malformedRate: 0 }, answerKey: [{ target: 24, nums: [2, 3, 4] }] });
  await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
  const run = await ControlledRun.create(countdownSpec(emu.url, { maxSteps: 1 }));
  await abortAllDurableObjects(); // the object's own instance loads the run: the consumer's RPCs reach it
  return { emu, run };
}

const status = async (run: ControlledRun) => (await run.stub.status()) as unknown as RunView;

describe("a run's secrets at rest", () => {
  it("are stored sealed, decrypted again by a restarted object, and handed to a claiming consumer", async () => {
    const emu = await TestEmulator.start({ policy: { initialAccuracy: 1, malformedRate: 0 }, answerKey: [{ target: 24, nums: [2, 3, 4] }] });
    await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
    const secrets = { MY_API_KEY: "sk-consumer-secret-0001", OTHER: "v2" };
    const run = await ControlledRun.create(countdownSpec(emu.url, { maxSteps: 1, secrets }));
    await abortAllDurableObjects(); // a fresh instance: it has only what storage holds
    const [a] = run.sent;
    if (!a) throw new Error("expected a dispatched episode");
    const claimed = { episodeKey: a.episodeKey, attempt: 1, dispatchId: a.dispatchId, claims: [{ swarm: "default", episodeUuid: "f".repeat(32), globalStep: 1 }] };
    expect(await run.stub.episodeClaimed(claimed)).toEqual({ status: "applied", secrets });
  });
});

describe("a later holder of a handed-over attempt asks the run object again (docs/design/long-episodes.md)", () => {
  it("while the attempt runs, the claim report resent answers duplicate with the run's secrets and swarmHeaders the gateway headers; another dispatch or a closed attempt gets neither", async () => {
    const emu = await TestEmulator.start({ policy: { initialAccuracy: 1, malformedRate: 0 }, answerKey: [{ target: 24, nums: [2, 3, 4] }] });
    await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
    const secrets = { GW: "gw-run-secret-0005", JUDGE_KEY: "sk-judge-0006" };
    const run = await ControlledRun.create(countdownSpec(emu.url, { maxSteps: 1, secrets, swarms: [{ url: emu.url, headers: { "x-gateway-key": "Bearer {secret:GW}" } }] }));
    await abortAllDurableObjects();
    const [a] = run.sent;
    if (!a) throw new Error("expected a dispatched episode");
    const ref = { episodeKey: a.episodeKey, attempt: 1, dispatchId: a.dispatchId };
    const claimed = { ...ref, claims: [{ swarm: "default", episodeUuid: "d".repeat(32), globalStep: 1 }] };
    const headers = { default: { "x-gateway-key": "Bearer gw-run-secret-0005" } };
    expect(await run.stub.swarmHeaders(ref)).toEqual(headers); // the consumer, before its claim
    expect(await run.stub.episodeClaimed(claimed)).toEqual({ status: "applied", secrets });
    // the attempt runs: a host leg asks again
    expect(await run.stub.episodeClaimed(claimed)).toEqual({ status: "duplicate", secrets });
    expect(await run.stub.swarmHeaders(ref)).toEqual(headers);
    // another dispatch of the same attempt
    const other = { ...ref, dispatchId: a.dispatchId + 1 };
    const otherAck = await run.stub.episodeClaimed({ ...claimed, ...other });
    expect(otherAck).toEqual({ status: "stale", reason: `message of dispatch ${other.dispatchId}; dispatch ${a.dispatchId} is current` });
    expect(await run.stub.swarmHeaders(other)).toBeNull();
    // the attempt's outcome is recorded: it no longer runs
    await run.stub.episodeOutcomeRecorded({ ...ref, outcome: { kind: "end", reward: 1 }, outputs: { default: { reward: 1, is_success: true, metadata: {}, log_metrics: {} } } });
    const closed = await run.stub.episodeClaimed(claimed);
    expect(closed).toEqual({ status: "stale", reason: `attempt 1 of ${a.episodeKey} is no longer running` });
    expect(await run.stub.swarmHeaders(ref)).toBeNull();
  });
});

describe("the episode port is idempotent", () => {
  it("the same episodeClaimed, claimFailed and episodeReported twice: the second is duplicate and nothing changes", async () => {
    const { emu, run } = await setup();
    const [a, b] = run.sent;
    if (!a || !b) throw new Error("expected dispatched episodes");
    const claimed = { episodeKey: a.episodeKey, attempt: 1, dispatchId: a.dispatchId, claims: [{ swarm: "default", episodeUuid: "e".repeat(32), globalStep: 1 }] };
    expect(await run.stub.episodeClaimed(claimed)).toMatchObject({ status: "applied" });
    const once = await status(run);
    // a resent report whose first answer was lost: the consumer carries on, so the run's secrets come with it
    expect(await run.stub.episodeClaimed(claimed)).toEqual({ status: "duplicate", secrets: {} });
    expect((await status(run)).episodes).toEqual(once.episodes);

    const failed = { episodeKey: b.episodeKey, attempt: 1, dispatchId: b.dispatchId, kind: "noEpisodes" as const, swarm: "default" };
    expect(await run.stub.claimFailed(failed)).toMatchObject({ status: "applied" });
    const afterFail = await status(run);
    expect(await run.stub.claimFailed(failed)).toEqual({ status: "duplicate" });
    expect((await status(run)).totals).toEqual(afterFail.totals);

    await run.stub.episodeOutcomeRecorded({ episodeKey: a.episodeKey, attempt: 1, outcome: { kind: "end", reward: 1 }, outputs: { default: { reward: 1, is_success: true, metadata: {}, log_metrics: {} } } });
    const reported = { episodeKey: a.episodeKey, attempt: 1, result: "ended" as const };
    expect(await run.stub.episodeReported(reported)).toMatchObject({ status: "applied" });
    const ended = await status(run);
    expect(ended.totals.episodesEnded).toBe(1);
    expect(await run.stub.episodeReported(reported)).toEqual({ status: "duplicate" });
    expect((await status(run)).totals).toEqual(ended.totals);
    expect((await emu.requests()).filter((r) => r.path === "/end_episode")).toHaveLength(0); // RPCs never touch the swarm
  });
});

describe("the queue consumer", () => {
  it("a redelivered message (same dispatchId) runs no second episode: told stale at its start, it claims nothing, nothing is ended twice", async () => {
    const { emu, run } = await setup();
    const msg = run.sent[0]!;
    expect(await deliver([msg])).toEqual({ acked: ["m0-1"], retried: [] });
    const first = await emu.requests();
    expect(first.filter((r) => r.path === "/end_episode").map((r) => r.status)).toEqual([200]);
    const chats = first.filter((r) => r.path === "/v1/chat/completions").length;

    expect(await deliver([msg], 2)).toEqual({ acked: ["m0-2"], retried: [] });
    const all = await emu.requests();
    const claims = all.filter((r) => r.path === "/claim_episode");
    expect(claims).toHaveLength(1); // the redelivery's start report was answered stale: no claim to give back
    expect(all.filter((r) => r.path === "/abort_episode")).toHaveLength(0);
    expect(all.filter((r) => r.path === "/v1/chat/completions")).toHaveLength(chats); // the function did not run again
    expect(all.filter((r) => r.path === "/end_episode")).toHaveLength(1);
    const state = await emu.state();
    expect(state.stepLog.flatMap((s) => s.episodes)).toHaveLength(1);
    expect(state.records.filter((r) => r.episode_status === "claimed")).toHaveLength(0);
    expect((await status(run)).totals.episodesEnded).toBe(1);
  });

  it("two deliveries of one message at once: one episode runs and ends, the other's claim is aborted", async () => {
    const { emu, run } = await setup();
    const msg = run.sent[0]!;
    const results = await Promise.all([deliver([msg], 1), deliver([msg], 2)]);
    expect(results.flatMap((r) => r.acked)).toHaveLength(2);
    const all = await emu.requests();
    expect(all.filter((r) => r.path === "/end_episode" && r.status === 200)).toHaveLength(1);
    expect(all.filter((r) => r.path === "/abort_episode")).toHaveLength(1);
    expect((await emu.state()).stepLog.flatMap((s) => s.episodes)).toHaveLength(1);
  });

  it("a claim refused because the engine is not ROLLING is acked and reported: the episode waits in the queue, not an attempt", async () => {
    const { emu, run } = await setup();
    await emu.client({ backoff: { statusPollIntervalMs: 20 } }).stopEngine({ timeoutMs: 10_000 });
    const msg = run.sent[0]!;
    expect(await deliver([msg])).toEqual({ acked: ["m0-1"], retried: [] });
    const view = await status(run);
    expect(view.claimFailuresByKind).toEqual({ notReady: 1 });
    expect(view.totals.attemptsFailed).toBe(0);
    expect(view.gateOpen).toBe(false); // the claim told the object the engine is OFFLINE
    const rows = await run.rows();
    expect(rows[msg.episodeKey]).toMatchObject({ status: "queued", attempt: 1, claimFailures: 1 });
  });

  it("a malformed message is acked and dropped (never retried), its valid batch-mate still runs", async () => {
    const { emu, run } = await setup();
    const good = run.sent[0]!;
    const batch = await deliver([{ ...good, v: 2 } as never, good]);
    expect(batch.acked.sort()).toEqual(["m0-1", "m1-1"]);
    expect(batch.retried).toEqual([]);
    expect((await emu.requests()).filter((r) => r.path === "/claim_episode")).toHaveLength(1);
  });

  it("a read-only Worker (AJET_READ_ONLY) runs nothing: the message is acked before any claim, the run's episode stays queued and runs when delivered to a live Worker", async () => {
    const { emu, run } = await setup();
    const msg = run.sent[0]!;
    const before = (await run.rows())[msg.episodeKey];
    const seen = (await emu.requests()).length; // the boot's and the run's own requests
    expect(await deliver([msg], 1, { AJET_READ_ONLY: "1" })).toEqual({ acked: ["m0-1"], retried: [] });
    expect((await emu.requests()).slice(seen)).toEqual([]); // not a claim, not an LLM call: nothing reached the server
    expect((await run.rows())[msg.episodeKey]).toEqual(before);
    expect((await status(run)).episodes.running).toBe(0);
    // the same message on a live Worker is a first delivery: it claims and ends once
    expect(await deliver([msg], 2)).toEqual({ acked: ["m0-2"], retried: [] });
    const all = await emu.requests();
    expect(all.filter((r) => r.path === "/claim_episode")).toHaveLength(1);
    expect(all.filter((r) => r.path === "/end_episode" && r.status === 200)).toHaveLength(1);
  });

  it("a message of a run that does not exist claims nothing and ends nothing (its start report is answered unknown)", async () => {
    const { emu, run } = await setup();
    const orphan = { ...run.sent[0]!, runId: "run-that-was-never-created" };
    const result = await deliver([orphan]);
    expect(result.acked.length + result.retried.length).toBe(1);
    const all = await emu.requests();
    expect(all.filter((r) => r.path === "/claim_episode")).toHaveLength(0);
    expect(all.filter((r) => r.path === "/abort_episode")).toHaveLength(0);
    expect(all.filter((r) => r.path === "/end_episode")).toHaveLength(0);
  });

  it("POST /runs/:id/stop while episodes are in flight: a late message claims nothing, a running episode still ends, the run finishes with nothing held", async () => {
    const { emu, run } = await setup();
    const [running, late, ...undelivered] = run.sent;
    if (!running || !late) throw new Error("expected dispatched episodes");
    const client = emu.client({ clientUuid: running.clientUuid });
    const c = await client.claimEpisode({ episodeType: "train", discardEpisodeTimeoutSeconds: 60 });
    if (c.kind !== "claimed") throw new Error(c.kind);
    await run.stub.episodeClaimed({ episodeKey: running.episodeKey, attempt: 1, dispatchId: running.dispatchId, claims: [{ swarm: "default", episodeUuid: c.episodeUuid, globalStep: 1 }] });

    const stopped = await apiFetch(`/runs/${run.runId}/stop`, { method: "POST" });
    expect(((await stopped.json()) as unknown as RunView).phase).toBe("draining");

    // a message delivered after the stop is told stale at its start: it claims nothing, so nothing is given back
    expect(await deliver([late])).toEqual({ acked: ["m0-1"], retried: [] });
    const afterLate = await emu.requests();
    expect(afterLate.filter((r) => r.path === "/claim_episode")).toHaveLength(1); // the test's own claim of `running`
    expect(afterLate.filter((r) => r.path === "/abort_episode")).toHaveLength(0);
    expect(afterLate.filter((r) => r.path === "/v1/chat/completions")).toHaveLength(0);
    expect(afterLate.filter((r) => r.path === "/end_episode")).toHaveLength(0);

    // the episode that was running finishes normally
    const output = { reward: 1, is_success: true, metadata: {}, log_metrics: {} };
    expect(await run.stub.episodeOutcomeRecorded({ episodeKey: running.episodeKey, attempt: 1, outcome: { kind: "end", reward: 1 }, outputs: { default: output } })).toMatchObject({ status: "applied" });
    expect(await client.endEpisode(running.taskId, c.episodeUuid, output)).toMatchObject({ kind: "ended" });
    expect(await run.stub.episodeReported({ episodeKey: running.episodeKey, attempt: 1, result: "ended" })).toMatchObject({ status: "applied" });

    // the messages never delivered are closed by their dispatch lease; then nothing is in flight and the run finishes
    expect((await status(run)).phase).toBe("draining");
    vi.setSystemTime(Date.now() + 301_000);
    await runDurableObjectAlarm(run.stub);
    const view = await status(run);
    expect(view.phase).toBe("finished");
    expect(view.stopReason).toBe("stopRequested");
    expect(view.totals.episodesEnded).toBe(1);
    expect(view.episodes.inFlight).toBe(0);
    expect(undelivered.length).toBeGreaterThan(0);
    expect((await emu.state()).records.filter((r) => r.episode_status === "claimed")).toHaveLength(0);
  });
});

describe("the consumer's wall (a tuning value: local workerd enforces none)", () => {
  it("AJET_CONSUMER_WALL_SECONDS sets the invocation's deadline; unset, not a number or past 900 s it is the queue consumer's 15 minutes", () => {
    const wallAt = (raw: string | undefined) => invocationShare({ ...env, AJET_CONSUMER_WALL_SECONDS: raw } as Env, 1_000).wallAtMs;
    expect(wallAt("20")).toBe(21_000);
    expect(wallAt("0.5")).toBe(1_500);
    expect(consumerWallMs(undefined)).toBe(CONSUMER_WALL_LIMIT_MS);
    for (const bad of ["", "abc", "0", "-5", "901", "Infinity"]) expect(wallAt(bad)).toBe(1_000 + CONSUMER_WALL_LIMIT_MS);
  });
});
