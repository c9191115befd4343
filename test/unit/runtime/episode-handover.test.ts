/**
 * The handover through the runtime, against the in-process emulator (docs/design/long-episodes.md): the first holder
 * (`runEpisode`) claims, makes a call, and at its gate hands the attempt over with the journal — it records no
 * outcome and sends no end or abort; the next holder (`resumeEpisode`) never claims, answers the first call from the
 * journal (the server sees it once), makes the rest, and ends the one claim once. A replay that asks for something
 * else is aborted (`replay_diverged`), never ended. A run with secrets or gateway headers crosses too: the record
 * holds no value, the next holder asks the run's scheduler again (the claim report resent, `swarmHeaders`), and a
 * refusal stops the attempt there (its claim aborted, nothing ended).
 */
import { describe, expect, it } from "vitest";
import countdown from "../../../functions/countdown.ts";
import { defineRolloutFunction, type RolloutFunction } from "../../../src/sdk/contract.ts";
import type { ClaimAck, EpisodeMessage, SchedulerPort } from "../../../src/port/index.ts";
import type { FetchLike } from "../../../src/runtime/limits.ts";
import { runEpisode } from "../../../src/runtime/episode-runner.ts";
import { resumeEpisode, type HandoverRecord } from "../../../src/runtime/episode-resume.ts";
import { CallJournal, REPLAY_DIVERGED } from "../../../src/runtime/call-journal.ts";
import { countdownTask, episodeMessage, methodsOf, recordingPort, rollingEmulator, runnerDeps, SWARM_A, SwarmNet, type PortScript } from "./_harness.ts";

/** A clock the test moves; `sleep` wakes when the clock passes its time (or at once when aborted). */
function testTime(startMs = Date.UTC(2026, 0, 1)) {
  let nowMs = startMs;
  const waiters: Array<{ at: number; wake: () => void }> = [];
  return {
    now: () => nowMs,
    sleep: (ms: number, signal?: AbortSignal) =>
      new Promise<void>((wake) => {
        if (ms <= 0) return wake();
        waiters.push({ at: nowMs + ms, wake });
        signal?.addEventListener("abort", () => wake(), { once: true });
      }),
    async advanceTo(t: number) {
      nowMs = t;
      for (const w of waiters.splice(0)) if (w.at <= t) w.wake(); else waiters.push(w);
      for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 1));
    },
  };
}

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** One call about the task, a pause the test ends, then Countdown's call and reward. */
function twoTurns(pause: Promise<void>, firstPrompt = "think first"): RolloutFunction {
  return defineRolloutFunction({
    name: "countdown",
    async run(task, ctx) {
      await ctx.llm.chat.completions.create({ model: ctx.model, messages: [{ role: "user", content: `${firstPrompt}: ${task.task_id}` }] });
      await pause;
      return countdown.run(task, ctx);
    },
  });
}

/** How the first holder's run is set up: its message, its scheduler port's answers, its function, fetch and operator secrets. */
interface FirstHolderSetup {
  msg?: Partial<EpisodeMessage>;
  script?: PortScript;
  swarmHeaders?: SchedulerPort["swarmHeaders"];
  fn?: RolloutFunction;
  fetch?: (net: SwarmNet) => FetchLike;
  secrets?: Record<string, string>;
}

async function firstHolder(pause: Promise<void>, setup: FirstHolderSetup = {}) {
  const { emu } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
  emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
  const net = new SwarmNet().add(SWARM_A, "default", emu);
  const port = { ...recordingPort(setup.script), ...(setup.swarmHeaders ? { swarmHeaders: setup.swarmHeaders } : {}) };
  const time = testTime();
  const task = countdownTask(0);
  const msg = episodeMessage(task, { runHasSecrets: false, ...setup.msg }, time.now());
  const gateAtMs = time.now() + 10_000;
  let record: HandoverRecord | null = null;
  const deps = runnerDeps(net, port, { countdown: setup.fn ?? twoTurns(pause) }, {
    now: time.now,
    sleep: time.sleep,
    ...(setup.fetch ? { fetch: setup.fetch(net) } : {}),
    ...(setup.secrets ? { secrets: setup.secrets } : {}),
    invocationDeadlineAtMs: time.now() + 20_000,
    reportReserveMs: 5_000,
    handover: (a) => ({
      journal: new CallJournal(),
      gateAtMs,
      hand: async (entries) => {
        record = { msg: a.msg, task: a.task, claims: a.held.map((h) => ({ swarm: h.swarm, episodeUuid: h.episodeUuid, episode: h.episode })), claimedAtMs: a.claimedAtMs, handedAtMs: time.now(), leg: 1, entries };
        return (await a.claimApplied()) ? "handed" : "declined";
      },
    }),
  });
  const running = runEpisode(msg, deps);
  await until(() => net.chatCalls().length === 1);
  await time.advanceTo(gateAtMs);
  const result = await running;
  return { emu, net, port, time, msg, result, record: record as HandoverRecord | null };
}

describe("the handover through the runtime", () => {
  it("the first holder hands over at its gate (no outcome, no end); the next replays the first call, makes the rest and ends the one claim once", async () => {
    let go!: () => void;
    const pause = new Promise<void>((r) => (go = r));
    const first = await firstHolder(pause);
    expect(first.result).toEqual({ kind: "handedOver", answer: "handed" });
    expect(methodsOf(first.port.calls)).toEqual(["episodeClaimed"]);
    expect(first.record?.entries).toHaveLength(1);
    const uuid = first.record!.claims[0]!.episodeUuid;
    go(); // the first holder's function goes on: its keys are closed, nothing leaves
    await new Promise((r) => setTimeout(r, 20));
    expect(first.net.chatCalls()).toHaveLength(1);
    expect([first.net.to("/end_episode"), first.net.to("/abort_episode")]).toEqual([[], []]);

    const port = recordingPort();
    const deps = runnerDeps(first.net, port, { countdown: twoTurns(Promise.resolve()) });
    const done = await resumeEpisode(first.record!, { ...deps, gateAtMs: Infinity, hand: async () => "declined" });
    expect(done).toMatchObject({ kind: "reported", result: "ended" });
    expect(methodsOf(port.calls)).toEqual(["episodeOutcomeRecorded", "episodeReported"]);
    expect(first.net.to("/claim_episode")).toHaveLength(1);
    expect(first.net.chatCalls()).toHaveLength(2); // the replayed call was not sent again
    expect(first.net.to("/end_episode", uuid)).toHaveLength(1);
    expect(first.net.to("/abort_episode")).toHaveLength(0);
    const logged = first.emu.stepLog.flatMap((s) => s.episodes).filter((e) => e.episodeUuid === uuid);
    expect(logged).toMatchObject([{ llmCallCount: 2, dropped: false }]);
  });

  it("a replay that asks for another first request diverges: the claim is aborted once, nothing ended", async () => {
    let go!: () => void;
    const first = await firstHolder(new Promise<void>((r) => (go = r)));
    go();
    const port = recordingPort();
    const deps = runnerDeps(first.net, port, { countdown: twoTurns(Promise.resolve(), "something else") });
    const done = await resumeEpisode(first.record!, { ...deps, gateAtMs: Infinity, hand: async () => "declined" });
    expect(done).toMatchObject({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: REPLAY_DIVERGED } });
    expect(first.net.chatCalls()).toHaveLength(1);
    expect(first.net.to("/end_episode")).toHaveLength(0);
    expect(first.net.to("/abort_episode")).toHaveLength(1);
  });
});

/** Records the secrets each holder's function sees, then runs {@link twoTurns}. */
function secretsSeen(seen: Array<Record<string, string>>, pause: Promise<void>): RolloutFunction {
  const inner = twoTurns(pause);
  return defineRolloutFunction({
    name: "countdown",
    async run(task, ctx) {
      seen.push({ ...ctx.secrets });
      return inner.run(task, ctx);
    },
  });
}

/** A fetch over `net` that records each request's path and its `x-gateway-key` header. */
function gatewayRecorder(sent: Array<{ path: string; gw: string | null }>) {
  return (net: SwarmNet): FetchLike =>
    async (input, init) => {
      const req = new Request(input as Request, init);
      sent.push({ path: new URL(req.url).pathname, gw: req.headers.get("x-gateway-key") });
      return net.fetch(req);
    };
}

const RUN_SECRETS = { JUDGE_KEY: "sk-judge-run-0001", TOOL_KEY: "run-tool-0002" };
const OPERATOR_SECRETS = { TOOL_KEY: "op-tool-0003" };
const GATEWAY = { default: { "x-gateway-key": "gw-secret-0004" } };
const WITH_GATEWAY: Partial<EpisodeMessage> = { swarms: [{ name: "default", url: SWARM_A, headers: { "x-gateway-key": "{secret:GW}" } }] };

describe("the handover of a run with secrets or gateway headers", () => {
  it("a run with secrets: the record holds no secret value; the next holder resends the claim report and its function sees the same secrets (the operator's win)", async () => {
    const seen: Array<Record<string, string>> = [];
    let go!: () => void;
    const pause = new Promise<void>((r) => (go = r));
    const first = await firstHolder(pause, { msg: { runHasSecrets: true }, script: { episodeClaimed: () => ({ status: "applied", secrets: RUN_SECRETS }) }, fn: secretsSeen(seen, pause), secrets: OPERATOR_SECRETS });
    expect(first.result).toEqual({ kind: "handedOver", answer: "handed" });
    const json = JSON.stringify(first.record);
    for (const value of [...Object.values(RUN_SECRETS), ...Object.values(OPERATOR_SECRETS)]) expect(json).not.toContain(value);
    const uuid = first.record!.claims[0]!.episodeUuid;
    go();

    const port = recordingPort({ episodeClaimed: () => ({ status: "duplicate", secrets: RUN_SECRETS }) });
    const deps = runnerDeps(first.net, port, { countdown: secretsSeen(seen, Promise.resolve()) }, { secrets: OPERATOR_SECRETS });
    const done = await resumeEpisode(first.record!, { ...deps, gateAtMs: Infinity, hand: async () => "declined" });
    expect(done).toMatchObject({ kind: "reported", result: "ended" });
    const expected = { JUDGE_KEY: "sk-judge-run-0001", TOOL_KEY: "op-tool-0003" };
    expect(seen).toEqual([expected, expected]);
    expect(methodsOf(port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeReported"]);
    expect(port.calls[0]!.report).toMatchObject({ episodeKey: first.msg.episodeKey, attempt: 1, dispatchId: 1, claims: [{ swarm: "default", episodeUuid: uuid }] });
    expect(first.net.to("/claim_episode")).toHaveLength(1);
    expect(first.net.chatCalls()).toHaveLength(2);
    expect(first.net.to("/end_episode", uuid)).toHaveLength(1);
    expect(first.net.to("/abort_episode")).toHaveLength(0);
  });

  it("a swarm with gateway headers: the record holds no header value; the next holder asks swarmHeaders again and its LLM calls and end carry them", async () => {
    const sent: Array<{ path: string; gw: string | null }> = [];
    const asked: unknown[] = [];
    const swarmHeaders = (ref: unknown) => (asked.push(ref), GATEWAY);
    let go!: () => void;
    const first = await firstHolder(new Promise<void>((r) => (go = r)), { msg: WITH_GATEWAY, swarmHeaders, fetch: gatewayRecorder(sent) });
    expect(first.result).toEqual({ kind: "handedOver", answer: "handed" });
    expect(JSON.stringify(first.record)).not.toContain("gw-secret-0004");
    go();

    const port = { ...recordingPort(), swarmHeaders };
    const deps = runnerDeps(first.net, port, { countdown: twoTurns(Promise.resolve()) }, { fetch: gatewayRecorder(sent)(first.net) });
    const done = await resumeEpisode(first.record!, { ...deps, gateAtMs: Infinity, hand: async () => "declined" });
    expect(done).toMatchObject({ kind: "reported", result: "ended" });
    const ref = { episodeKey: first.msg.episodeKey, attempt: 1, dispatchId: 1 };
    expect(asked).toEqual([ref, ref]); // once per holder
    expect(methodsOf(port.calls)).toEqual(["episodeOutcomeRecorded", "episodeReported"]); // no secrets: no claim report again
    expect(sent.filter((r) => r.path.endsWith("/chat/completions")).map((r) => r.gw)).toEqual(["gw-secret-0004", "gw-secret-0004"]);
    expect(sent.filter((r) => r.path === "/end_episode").map((r) => r.gw)).toEqual(["gw-secret-0004"]);
  });

  const refusals: Array<{ refusal: string; msg: Partial<EpisodeMessage>; claimed?: ClaimAck; headers?: null }> = [
    { refusal: "the claim report resent is stale (the attempt was closed)", msg: { runHasSecrets: true }, claimed: { status: "stale", reason: "attempt 1 was closed; attempt 2 is current" } },
    { refusal: "the run is gone", msg: { runHasSecrets: true }, claimed: { status: "unknown", reason: "no such run" } },
    { refusal: "swarmHeaders refuses (null)", msg: WITH_GATEWAY, headers: null },
  ];
  it.each(refusals)("a refused re-ask stops the attempt at the next holder: $refusal — its claim aborted once, nothing ended, no outcome", async (c) => {
    const seen: Array<Record<string, string>> = [];
    let go!: () => void;
    const pause = new Promise<void>((r) => (go = r));
    const first = await firstHolder(pause, { msg: c.msg, script: { episodeClaimed: () => ({ status: "applied", secrets: RUN_SECRETS }) }, swarmHeaders: () => GATEWAY, fn: secretsSeen(seen, pause) });
    expect(first.result).toEqual({ kind: "handedOver", answer: "handed" });
    const uuid = first.record!.claims[0]!.episodeUuid;
    go();

    const port = { ...recordingPort({ episodeClaimed: () => c.claimed ?? { status: "duplicate", secrets: RUN_SECRETS } }), swarmHeaders: () => (c.headers === null ? null : GATEWAY) };
    const deps = runnerDeps(first.net, port, { countdown: secretsSeen(seen, Promise.resolve()) });
    const done = await resumeEpisode(first.record!, { ...deps, gateAtMs: Infinity, hand: async () => "declined" });
    expect(done).toMatchObject({ kind: "stale" });
    expect(deps.budget!.reserved).toBe(0); // the leg's reservation is given back
    expect(seen).toHaveLength(1); // the function did not run again
    expect(methodsOf(port.calls)).toEqual(c.claimed ? ["episodeClaimed"] : []);
    expect(first.net.chatCalls()).toHaveLength(1);
    expect(first.net.to("/abort_episode", uuid)).toHaveLength(1);
    expect(first.net.to("/end_episode")).toHaveLength(0);
  });
});
