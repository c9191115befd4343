/**
 * Claiming through `runEpisode` against the in-process emulator: engine not ROLLING (no waiting, the scheduler
 * re-dispatches on the edge, BC-25), "No available episodes" until the claim deadline (jittered back-off on the
 * injected clock), all-or-nothing across two swarms (BC-33), and claims the subrequest budget cannot pay (BC-49).
 */
import { describe, expect, it } from "vitest";
import countdown from "../../../functions/countdown.ts";
import { defineRolloutFunction } from "../../../src/sdk/contract.ts";
import { runEpisode } from "../../../src/runtime/episode-runner.ts";
import { SubrequestBudget } from "../../../src/runtime/limits.ts";
import {
  SWARM_A,
  SWARM_B,
  SwarmNet,
  countdownTask,
  episodeMessage,
  makeEmulator,
  methodsOf,
  recordingPort,
  rollingEmulator,
  runnerDeps,
} from "./_harness.ts";

/** A two-model function (the seed's Demo 2): countdown on swarm "small", then on swarm "large". */
const twoModels = defineRolloutFunction({
  name: "two-models",
  swarms: ["small", "large"],
  async run(task, ctx) {
    const small = await countdown.run(task, { ...ctx, llm: ctx.openai.small! });
    const large = await countdown.run(task, { ...ctx, llm: ctx.openai.large! });
    return { small, large };
  },
});

/** The claimed records of the emulator (what would be left held). */
const claimedRecords = (emu: ReturnType<typeof makeEmulator>["emu"]) => [...emu.engine.records.values()].filter((r) => r.episode_status === "claimed");

describe("claim: the engine is not ROLLING", () => {
  it("OFFLINE → claimFailed notReady with the status, no sleep, nothing held, nothing ended or aborted", async () => {
    const { emu } = makeEmulator();
    const net = new SwarmNet().add(SWARM_A, "default", emu);
    const port = recordingPort();
    const deps = runnerDeps(net, port, { countdown });
    const msg = episodeMessage(countdownTask(0), {}, deps.now());

    const result = await runEpisode(msg, deps);

    expect(result).toEqual({ kind: "claimFailed", cause: "notReady" });
    expect(methodsOf(port.calls)).toEqual(["claimFailed"]);
    expect(port.calls[0]?.report).toMatchObject({ episodeKey: msg.episodeKey, attempt: 1, dispatchId: 1, kind: "notReady", swarm: "default", engineStatus: "ENGINE.OFFLINE" });
    expect(deps.time.sleeps).toEqual([]);
    expect(net.to("/claim_episode")).toHaveLength(1);
    expect(net.to("/abort_episode")).toHaveLength(0);
    expect(net.to("/end_episode")).toHaveLength(0);
    expect(deps.budget!.reserved).toBe(0);
  });

  it("ROLLING_POST → claimFailed postRolling (the scheduler backs off until the edge back to ROLLING)", async () => {
    const { emu, clock } = await rollingEmulator({ batchSize: 1, numRepeat: 1, maxEnvWorker: 1 });
    // the batch of one closes after one accepted episode: the engine goes ROLLING_POST
    const net = new SwarmNet().add(SWARM_A, "default", emu);
    const first = runnerDeps(net, recordingPort(), { countdown });
    expect(await runEpisode(episodeMessage(countdownTask(0), {}, first.now()), first)).toMatchObject({ kind: "reported", result: "ended" });
    await clock.flush();
    expect(emu.engine.status).toBe("ENGINE.ROLLING_POST");

    const port = recordingPort();
    const deps = runnerDeps(net, port, { countdown });
    expect(await runEpisode(episodeMessage(countdownTask(1), {}, deps.now()), deps)).toEqual({ kind: "claimFailed", cause: "postRolling" });
    expect(port.calls[0]?.report).toMatchObject({ kind: "postRolling", engineStatus: "ENGINE.ROLLING_POST" });
    expect(claimedRecords(emu)).toHaveLength(0);
  });
});

describe("claim: No available episodes", () => {
  it("polls every ~100 ms (jittered) for the first 2 s, then backs off doubling from 500 ms, until the deadline, then claimFailed noEpisodes", async () => {
    const { emu } = await rollingEmulator({ batchSize: 1, numRepeat: 1, maxEnvWorker: 1 });
    const net = new SwarmNet().add(SWARM_A, "default", emu);
    // another client holds the only episode
    const other = runnerDeps(net, recordingPort(), { countdown });
    const hold = defineRolloutFunction({ name: "countdown", run: () => new Promise(() => undefined) });
    void runEpisode(episodeMessage(countdownTask(9), { clientUuid: "other-client" }, other.now()), { ...other, functions: { countdown: hold } });
    await new Promise((r) => setImmediate(r));
    expect(emu.engine.queue).toHaveLength(0);

    const port = recordingPort();
    const randoms = [0, 1, 0.25, 0.75, 0.5, 0.9, 0.1, 0.6, 0.3, 0.8];
    let r = 0;
    const deps = runnerDeps(net, port, { countdown }, { random: () => randoms[r++ % randoms.length]!, claimBudgetMs: 10_000 });
    const startMs = deps.now();
    const msg = episodeMessage(countdownTask(0), { discardEpisodeTimeoutSeconds: 60 }, startMs);

    const result = await runEpisode(msg, deps);

    expect(result).toEqual({ kind: "claimFailed", cause: "noEpisodes" });
    expect(methodsOf(port.calls)).toEqual(["claimFailed"]);
    expect(port.calls[0]?.report).toMatchObject({ kind: "noEpisodes", swarm: "default" });
    const sleeps = deps.time.sleeps;
    expect(sleeps.length).toBeGreaterThan(2);
    // each wait is a base times a jitter factor in [0.5, 1.5] from `random`: 100 ms while under 2 s of claiming
    // (the engine registers ~1 s after the ROLLING edge), then 500 ms doubling, capped at 4 s
    let elapsed = 0;
    let slow = 0;
    const bases: number[] = [];
    sleeps.forEach((ms, i) => {
      const base = elapsed < 2_000 ? 100 : Math.min(500 * 2 ** slow++, 4_000);
      bases.push(base);
      expect(ms).toBeCloseTo(base * (0.5 + randoms[i % randoms.length]!), 6);
      elapsed += ms;
    });
    expect(bases.filter((b) => b === 100).length).toBeGreaterThan(10);
    const slowBases = bases.filter((b) => b !== 100);
    expect(slowBases.length).toBeGreaterThanOrEqual(2);
    expect(slowBases).toEqual([500, 1_000, 2_000, 4_000, 4_000, 4_000].slice(0, slowBases.length));
    expect(new Set(sleeps.map((ms, i) => ms / bases[i]!)).size).toBeGreaterThan(1); // jittered
    // one claim per wait plus the first; no claim started after the deadline
    expect(net.to("/claim_episode").filter((q) => q.body.client_uuid === msg.clientUuid)).toHaveLength(sleeps.length + 1);
    expect(deps.now()).toBeLessThanOrEqual(startMs + 10_000);
    expect(claimedRecords(emu).filter((x) => x.client_uuid === msg.clientUuid)).toHaveLength(0);
  });

  it("the claim deadline is at most half the discard timeout (BC-33) and never past the dispatch lease", async () => {
    const { emu } = await rollingEmulator({ batchSize: 1, numRepeat: 1, maxEnvWorker: 1 });
    const net = new SwarmNet().add(SWARM_A, "default", emu);
    const hold = defineRolloutFunction({ name: "countdown", run: () => new Promise(() => undefined) });
    const other = runnerDeps(net, recordingPort(), { countdown: hold });
    void runEpisode(episodeMessage(countdownTask(9), { clientUuid: "other-client" }, other.now()), other);
    await new Promise((r) => setImmediate(r));

    const short = runnerDeps(net, recordingPort(), { countdown }, { random: () => 1 });
    const t0 = short.now();
    await runEpisode(episodeMessage(countdownTask(0), { discardEpisodeTimeoutSeconds: 4 }, t0), short);
    expect(short.now() - t0).toBeLessThanOrEqual(2_000);

    const leased = runnerDeps(net, recordingPort(), { countdown }, { random: () => 1 });
    const t1 = leased.now();
    await runEpisode(episodeMessage(countdownTask(1), { leaseDeadlineAtMs: t1 + 3_000 }, t1), leased);
    expect(leased.now() - t1).toBeLessThanOrEqual(3_000);
  });
});

describe("BC-33 all-or-nothing claims across two swarms", () => {
  const swarms = [
    { name: "small", url: SWARM_A },
    { name: "large", url: SWARM_B },
  ];

  it("BC-33 the second swarm is not ROLLING: the first claim is aborted, claimFailed, nothing held anywhere", async () => {
    const a = await rollingEmulator({ batchSize: 4, numRepeat: 1, maxEnvWorker: 4 });
    const b = makeEmulator({ seed: 8 });
    const net = new SwarmNet().add(SWARM_A, "small", a.emu).add(SWARM_B, "large", b.emu);
    const port = recordingPort();
    const deps = runnerDeps(net, port, { "two-models": twoModels });
    const msg = episodeMessage(countdownTask(0), { functionName: "two-models", swarms }, deps.now());

    const result = await runEpisode(msg, deps);

    expect(result).toEqual({ kind: "claimFailed", cause: "notReady" });
    expect(methodsOf(port.calls)).toEqual(["claimFailed"]);
    expect(port.calls[0]?.report).toMatchObject({ swarm: "large", kind: "notReady", engineStatus: "ENGINE.OFFLINE" });
    const held = net.to("/claim_episode").filter((q) => q.swarm === "small");
    expect(held).toHaveLength(1);
    const aborts = net.to("/abort_episode");
    expect(aborts).toHaveLength(1);
    expect(aborts[0]).toMatchObject({ swarm: "small", body: { client_uuid: msg.clientUuid } });
    expect(claimedRecords(a.emu)).toHaveLength(0);
    expect(net.to("/end_episode")).toHaveLength(0);
  });

  /**
   * Runs the two-swarm function while a third client holds the only episode of the `full` swarm (its function never
   * settles), so no claim there can succeed before the claim deadline.
   */
  async function claimWithOneSwarmFull(full: "small" | "large") {
    const size = (name: string) => (name === full ? { batchSize: 1, numRepeat: 1, maxEnvWorker: 1 } : { batchSize: 4, numRepeat: 1, maxEnvWorker: 4 });
    const a = await rollingEmulator(size("small"));
    const b = await rollingEmulator(size("large"), { seed: 8 });
    const net = new SwarmNet().add(SWARM_A, "small", a.emu).add(SWARM_B, "large", b.emu);
    const [fullEmu, fullUrl] = full === "small" ? [a.emu, SWARM_A] : [b.emu, SWARM_B];
    const other = runnerDeps(net, recordingPort(), { countdown });
    const hold = defineRolloutFunction({ name: "countdown", run: () => new Promise(() => undefined) });
    void runEpisode(episodeMessage(countdownTask(9), { clientUuid: "other-client", swarms: [{ name: "held", url: fullUrl }] }, other.now()), { ...other, functions: { countdown: hold } });
    await new Promise((r) => setImmediate(r));
    expect(fullEmu.engine.queue).toHaveLength(0);

    const port = recordingPort();
    const deps = runnerDeps(net, port, { "two-models": twoModels }, { claimBudgetMs: 5_000 });
    const msg = episodeMessage(countdownTask(0), { functionName: "two-models", swarms }, deps.now());
    return { a, net, port, msg, result: await runEpisode(msg, deps) };
  }

  it("BC-33 the second swarm has no free episode before the deadline: claimFailed as 'deadline' (not noEpisodes), the first claim aborted", async () => {
    const { a, net, port, result } = await claimWithOneSwarmFull("large");
    expect(result).toEqual({ kind: "claimFailed", cause: "deadline" });
    expect(methodsOf(port.calls)).toEqual(["claimFailed"]);
    expect(port.calls[0]?.report).toMatchObject({ swarm: "large", kind: "deadline" });
    expect(net.to("/abort_episode").filter((q) => q.swarm === "small")).toHaveLength(1);
    expect(claimedRecords(a.emu)).toHaveLength(0);
    expect(net.to("/end_episode")).toHaveLength(0);
  });

  it("BC-33 the first swarm has no free episode: claimFailed stays noEpisodes (nothing was held, so it is no deadline)", async () => {
    const { net, port, msg, result } = await claimWithOneSwarmFull("small");
    expect(result).toEqual({ kind: "claimFailed", cause: "noEpisodes" });
    expect(port.calls[0]?.report).toMatchObject({ swarm: "small", kind: "noEpisodes" });
    expect(net.to("/claim_episode").filter((q) => q.swarm === "large")).toHaveLength(0);
    expect(net.to("/abort_episode").filter((q) => q.body.client_uuid === msg.clientUuid)).toHaveLength(0);
  });

  it("BC-33 both ROLLING: both claims are reported, and both are ended together with one output each", async () => {
    const a = await rollingEmulator({ batchSize: 4, numRepeat: 1, maxEnvWorker: 4 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
    const b = await rollingEmulator({ batchSize: 4, numRepeat: 1, maxEnvWorker: 4 }, { seed: 8, policy: { initialAccuracy: 0, malformedRate: 0 } });
    for (const e of [a.emu, b.emu]) e.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
    const net = new SwarmNet().add(SWARM_A, "small", a.emu).add(SWARM_B, "large", b.emu);
    const port = recordingPort();
    const deps = runnerDeps(net, port, { "two-models": twoModels });
    const msg = episodeMessage(countdownTask(0), { functionName: "two-models", swarms }, deps.now());

    const result = await runEpisode(msg, deps);

    const claimed = port.calls.find((c) => c.method === "episodeClaimed");
    expect(claimed?.method === "episodeClaimed" && claimed.report.claims.map((c) => c.swarm)).toEqual(["small", "large"]);
    const small = a.emu.stepLog.flatMap((s) => s.episodes);
    const large = b.emu.stepLog.flatMap((s) => s.episodes);
    expect(small).toHaveLength(1);
    expect(large).toHaveLength(1);
    // the first swarm's reward is the episode's reward
    expect(result).toEqual({ kind: "reported", result: "ended", outcome: { kind: "end", reward: small[0]!.reward } });
    expect(small[0]!.reward).not.toBe(large[0]!.reward);
  });
});

describe("BC-49 a claim the budget cannot pay", () => {
  it("BC-49 fails at once as claimFailed: no back-off sleeps, no request, nothing held", async () => {
    const { emu } = await rollingEmulator();
    const net = new SwarmNet().add(SWARM_A, "default", emu);
    const port = recordingPort();
    const budget = new SubrequestBudget(7); // exactly the episode's reservation: nothing for the claim itself
    const deps = runnerDeps(net, port, { countdown }, { budget });

    const result = await runEpisode(episodeMessage(countdownTask(0), {}, deps.now()), deps);

    expect(result).toMatchObject({ kind: "claimFailed" });
    expect(deps.time.sleeps).toEqual([]);
    expect(net.requests).toHaveLength(0);
    expect(methodsOf(port.calls)).toEqual(["claimFailed"]);
    expect(port.calls[0]?.report).toMatchObject({ detail: expect.stringContaining("subrequest budget") });
    expect(budget.used).toBeLessThanOrEqual(7);
  });
});

describe("BC-33 ends across two swarms", () => {

  it("BC-33 the first swarm's end has an unknown outcome: the second swarm's claim is still ended, not left held; reported unknown at once (the run resolves it from the server's record)", async () => {
    const a = await rollingEmulator({ batchSize: 4, numRepeat: 1, maxEnvWorker: 4 });
    const b = await rollingEmulator({ batchSize: 4, numRepeat: 1, maxEnvWorker: 4 }, { seed: 8 });
    const net = new SwarmNet().add(SWARM_A, "small", a.emu).add(SWARM_B, "large", b.emu);
    const port = recordingPort();
    const deps = runnerDeps(net, port, { "two-models": twoModels });
    const inner = deps.fetch;
    deps.fetch = async (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      if (url === `${SWARM_A}/end_episode`) throw new TypeError("fetch failed: connection reset");
      return inner(input, init);
    };
    const msg = episodeMessage(countdownTask(0), { functionName: "two-models", swarms: [{ name: "small", url: SWARM_A }, { name: "large", url: SWARM_B }] }, deps.now());

    const result = await runEpisode(msg, deps);

    expect(result).toMatchObject({ kind: "unresolved" });
    expect(methodsOf(port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeReported"]);
    // the first send may never have reached the server (a connection reset before any answer)
    expect(port.calls[2]?.report).toMatchObject({ episodeKey: msg.episodeKey, attempt: 1, result: "unknown", reached: false });
    expect(b.emu.stepLog.flatMap((s) => s.episodes)).toHaveLength(1);
    expect(claimedRecords(b.emu)).toHaveLength(0);
    expect(net.to("/abort_episode")).toHaveLength(0);
  });
});
