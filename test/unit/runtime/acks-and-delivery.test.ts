/**
 * What `runEpisode` does with the scheduler's answers (stale, duplicate, unknown, unreachable) and with an end
 * whose outcome is unknown (BC-26) or refused (BC-23), against the in-process emulator. Invariant checked every
 * time: no claim is left held, and the server accepts at most one end per episode.
 */
import { describe, expect, it } from "vitest";
import countdown from "../../../functions/countdown.ts";
import { defineRolloutFunction } from "../../../src/sdk/contract.ts";
import { runEpisode } from "../../../src/runtime/episode-runner.ts";
import type { Task } from "../../../src/protocol/index.ts";
import { countdownTask, episodeMessage, methodsOf, recordingPort, rollingEmulator, runnerDeps, SWARM_A, SwarmNet, type PortScript } from "./_harness.ts";

async function setup(script: PortScript = {}) {
  const { emu } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
  emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
  const net = new SwarmNet().add(SWARM_A, "default", emu);
  const port = recordingPort(script);
  const deps = runnerDeps(net, port, { countdown });
  const msg = episodeMessage(countdownTask(0), {}, deps.now());
  return { emu, net, port, deps, msg };
}

const accepted = (emu: Awaited<ReturnType<typeof setup>>["emu"]) => emu.stepLog.flatMap((s) => s.episodes);
const held = (emu: Awaited<ReturnType<typeof setup>>["emu"]) => [...emu.engine.records.values()].filter((r) => r.episode_status === "claimed");

describe("scheduler acks", () => {
  for (const ack of [{ status: "stale", reason: "attempt 1 was closed; attempt 2 is current" }, { status: "duplicate" }, { status: "unknown", reason: "no live episode" }] as const) {
    it(`a ${ack.status} ack on episodeClaimed aborts the claim; the function never runs; nothing is ended`, async () => {
      const { emu, net, port, deps, msg } = await setup({ episodeClaimed: () => ack });
      const result = await runEpisode(msg, deps);
      expect(result.kind).toBe("stale");
      expect(methodsOf(port.calls)).toEqual(["episodeClaimed"]);
      expect(net.to("/abort_episode")).toHaveLength(1);
      expect(net.chatCalls()).toHaveLength(0);
      expect(net.to("/end_episode")).toHaveLength(0);
      expect(held(emu)).toHaveLength(0);
    });
  }

  it("episodeClaimed unreachable (twice): the claim is aborted and the message retried", async () => {
    const { emu, net, port, deps, msg } = await setup({ episodeClaimed: () => Promise.reject(new Error("DO overloaded")) });
    expect(await runEpisode(msg, deps)).toMatchObject({ kind: "retry" });
    expect(methodsOf(port.calls)).toEqual(["episodeClaimed", "episodeClaimed"]);
    expect(net.to("/abort_episode")).toHaveLength(1);
    expect(held(emu)).toHaveLength(0);
  });

  for (const ack of [{ status: "stale", reason: "the run is stopping" }, { status: "unknown", reason: "pruned" }] as const) {
    it(`a ${ack.status} ack on episodeOutcomeRecorded aborts the claim and never ends it`, async () => {
      const { emu, net, port, deps, msg } = await setup({ episodeOutcomeRecorded: () => ack });
      expect(await runEpisode(msg, deps)).toEqual({ kind: "stale", reason: ack.reason });
      expect(methodsOf(port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded"]);
      expect(net.chatCalls()).toHaveLength(1);
      expect(net.to("/abort_episode")).toHaveLength(1);
      expect(net.to("/end_episode")).toHaveLength(0);
      expect(accepted(emu)).toHaveLength(0);
      expect(held(emu)).toHaveLength(0);
    });
  }

  it("episodeOutcomeRecorded unreachable (twice): nothing is ended, the claim is aborted and the abort reported, so the scheduler never resends an end that was never sent", async () => {
    const { emu, net, port, deps, msg } = await setup({ episodeOutcomeRecorded: () => Promise.reject(new Error("network")) });
    expect(await runEpisode(msg, deps)).toEqual({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: "outcome_unrecorded" } });
    expect(methodsOf(port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeOutcomeRecorded", "episodeReported"]);
    expect(port.calls.at(-1)?.report).toEqual({ episodeKey: msg.episodeKey, attempt: 1, result: "aborted", cause: "outcome_unrecorded" });
    expect(net.to("/end_episode")).toHaveLength(0);
    expect(net.to("/abort_episode")).toHaveLength(1);
    expect(held(emu)).toHaveLength(0);
  });

  it("episodeOutcomeRecorded unreachable when no end or abort was due (idle past the discard timeout, BC-23): nothing is sent to the server and 'expired' is reported with cause outcome_unrecorded", async () => {
    const { emu } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 });
    const net = new SwarmNet().add(SWARM_A, "default", emu);
    const port = recordingPort({ episodeOutcomeRecorded: () => Promise.reject(new Error("network")) });
    let advance = (_ms: number) => undefined as void;
    const idle = defineRolloutFunction({
      name: "countdown",
      async run(_task, ctx) {
        await ctx.llm.chat.completions.create({ model: ctx.model, messages: [{ role: "user", content: "What is 2 + 3?" }] });
        advance(60_000 + 1); // idle past the 60 s discard timeout: the server's janitor reverts it, so no abort is due
        return { reward: 1 };
      },
    });
    const deps = runnerDeps(net, port, { countdown: idle });
    advance = deps.time.advance;
    const msg = episodeMessage(countdownTask(0), {}, deps.now());

    expect(await runEpisode(msg, deps)).toEqual({ kind: "reported", result: "expired", outcome: { kind: "abort", cause: "outcome_unrecorded" } });
    expect(methodsOf(port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeOutcomeRecorded", "episodeReported"]);
    expect(port.calls.at(-1)?.report).toEqual({ episodeKey: msg.episodeKey, attempt: 1, result: "expired", cause: "outcome_unrecorded" });
    expect(net.to("/end_episode")).toHaveLength(0);
    expect(net.to("/abort_episode")).toHaveLength(0);
    expect(accepted(emu)).toHaveLength(0);
  });

  it("episodeOutcomeRecorded and the abort report both unreachable: the claim is aborted and the message retried", async () => {
    const fail = () => Promise.reject(new Error("network"));
    const { emu, net, deps, msg } = await setup({ episodeOutcomeRecorded: fail, episodeReported: fail });
    expect(await runEpisode(msg, deps)).toMatchObject({ kind: "retry" });
    expect(net.to("/end_episode")).toHaveLength(0);
    expect(net.to("/abort_episode")).toHaveLength(1);
    expect(held(emu)).toHaveLength(0);
  });

  it("BC-51 episodeOutcomeRecorded applied but its answer lost (a DO reset): the retried RPC is 'duplicate' and the episode ends — no abort, no recorded end left for the outbox to resend", async () => {
    let calls = 0;
    const { emu, net, port, deps, msg } = await setup({
      episodeOutcomeRecorded: (r) => (calls++ === 0 ? Promise.reject(new Error("Durable Object reset because its code was updated")) : { status: "duplicate", outcome: r.outcome }),
    });
    expect(await runEpisode(msg, deps)).toEqual({ kind: "reported", result: "ended", outcome: { kind: "end", reward: 1 } });
    expect(methodsOf(port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeOutcomeRecorded", "episodeReported"]);
    expect(net.to("/abort_episode")).toHaveLength(0);
    expect(net.to("/end_episode")).toHaveLength(1);
    expect(accepted(emu)).toHaveLength(1);
    expect(held(emu)).toHaveLength(0);
  });

  it("BC-51 episodeClaimed applied but its answer lost: the retried RPC is 'duplicate' (same claims), so the episode runs and ends instead of leaving a claimed row to stall until its run lease", async () => {
    let calls = 0;
    const { emu, net, port, deps, msg } = await setup({
      episodeClaimed: () => (calls++ === 0 ? Promise.reject(new Error("Durable Object reset because its code was updated")) : { status: "duplicate", secrets: { JUDGE_KEY: "k" } }),
    });
    expect(await runEpisode(msg, deps)).toEqual({ kind: "reported", result: "ended", outcome: { kind: "end", reward: 1 } });
    const claimedCalls = port.calls.filter((c) => c.method === "episodeClaimed");
    expect(claimedCalls).toHaveLength(2);
    expect(claimedCalls[1]?.report).toEqual(claimedCalls[0]?.report); // the same claims: idempotent by (episodeKey, attempt)
    expect(net.to("/abort_episode")).toHaveLength(0);
    expect(accepted(emu)).toHaveLength(1);
    expect(held(emu)).toHaveLength(0);
  });

  it("episodeReported unreachable after the end was accepted: unresolved (the outbox resolves it), nothing resent", async () => {
    const { emu, net, deps, msg } = await setup({ episodeReported: () => Promise.reject(new Error("network")) });
    expect(await runEpisode(msg, deps)).toMatchObject({ kind: "unresolved" });
    expect(net.to("/end_episode")).toHaveLength(1);
    expect(accepted(emu)).toHaveLength(1);
  });

  it("BC-51 episodeReported fails once (a DO reset): sent once more, so the attempt closes now instead of waiting for the report lease and the outbox", async () => {
    let calls = 0;
    const { emu, net, port, deps, msg } = await setup({ episodeReported: () => (calls++ === 0 ? Promise.reject(new Error("Durable Object reset")) : { status: "applied" }) });
    expect(await runEpisode(msg, deps)).toEqual({ kind: "reported", result: "ended", outcome: { kind: "end", reward: 1 } });
    expect(methodsOf(port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeReported", "episodeReported"]);
    expect(net.to("/end_episode")).toHaveLength(1);
    expect(accepted(emu)).toHaveLength(1);
  });

  it("the run's secrets from the claim ack reach ctx.secrets; a task not inlined is fetched from the port (BC-53)", async () => {
    const big: Task = { ...countdownTask(3), metadata: { target: 24, nums: [2, 3, 4], blob: "x".repeat(200_000) } };
    let secretSeen: string | undefined;
    let blobSeen = 0;
    const spy = defineRolloutFunction({
      name: "countdown",
      async run(task, ctx) {
        secretSeen = ctx.secrets.JUDGE_KEY;
        blobSeen = String(task.metadata.blob).length;
        return countdown.run(task, ctx);
      },
    });
    const { port, deps } = await setup({ episodeClaimed: () => ({ status: "applied", secrets: { JUDGE_KEY: "sk-judge" } }), tasks: { "countdown#3": big } });
    const msg = episodeMessage(big, { task: undefined, taskRef: { source: "countdown", taskIndex: 3 } }, deps.now());
    expect(await runEpisode(msg, { ...deps, functions: { countdown: spy } })).toMatchObject({ kind: "reported", result: "ended" });
    expect(methodsOf(port.calls)[0]).toBe("getTask");
    expect(secretSeen).toBe("sk-judge");
    expect(blobSeen).toBe(200_000);
  });
});

describe("BC-26 end_episode with an unknown outcome", () => {
  it("BC-26 the connection drops after the server accepted the end: resent with isResend, 'not found' counts as delivered", async () => {
    const { emu, net, port, deps, msg } = await setup();
    let dropped = 0;
    net.beforeAnswer = (req) => {
      if (req.path === "/end_episode" && dropped++ === 0) throw new TypeError("fetch failed: socket hang up");
    };
    const result = await runEpisode(msg, deps);
    expect(result).toEqual({ kind: "reported", result: "ended", outcome: { kind: "end", reward: 1 } });
    const ends = net.to("/end_episode");
    expect(ends).toHaveLength(2);
    expect(ends[0]!.status).toBe(200); // the server accepted the first one
    expect(ends[1]!.status).toBe(400); // "Episode … not found." → delivered earlier
    expect(accepted(emu)).toHaveLength(1);
    expect(port.calls.at(-1)?.report).toMatchObject({ result: "ended" });
  });

  it("BC-26 a 500 after the server acted (emulator hook) is resent once and counted as delivered", async () => {
    const { emu, net, deps, msg } = await setup();
    let n = 0;
    emu.hooks.endEpisode = () => (n++ === 0 ? { status: 500, afterHandling: true } : undefined);
    expect(await runEpisode(msg, deps)).toMatchObject({ kind: "reported", result: "ended" });
    expect(net.to("/end_episode")).toHaveLength(2);
    expect(accepted(emu)).toHaveLength(1);
  });

  it("BC-26 the first end never reached the server: the resend is the one accepted", async () => {
    const { emu, net, deps, msg } = await setup();
    let n = 0;
    const inner = deps.fetch;
    deps.fetch = async (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      if (url.endsWith("/end_episode") && n++ === 0) throw new TypeError("fetch failed: connection refused");
      return inner(input, init);
    };
    expect(await runEpisode(msg, deps)).toMatchObject({ kind: "reported", result: "ended" });
    expect(net.to("/end_episode")).toHaveLength(1);
    expect(accepted(emu)).toHaveLength(1);
  });

  it("BC-26 both answers lost after the server took the first: its completed tasks confirm it, reported ended at once, no abort", async () => {
    const { emu, net, port, deps, msg } = await setup();
    net.beforeAnswer = (req) => {
      if (req.path === "/end_episode") throw new TypeError("fetch failed");
    };
    expect(await runEpisode(msg, deps)).toMatchObject({ kind: "reported", result: "ended" });
    expect(methodsOf(port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeReported"]);
    expect(port.calls[1]?.report).toMatchObject({ outcome: { kind: "end", reward: 1 }, outputs: { default: { reward: 1 } } });
    expect(net.to("/abort_episode")).toHaveLength(0);
    expect(accepted(emu)).toHaveLength(1); // the server did take the first one
  });
});

describe("BC-23 the server reverted the episode before the end", () => {
  it("BC-23 end refused as not claimed → reported expired, never resent, nothing accepted", async () => {
    const { emu, net, port, deps, msg } = await setup();
    const revertedLate = defineRolloutFunction({
      name: "countdown",
      async run(task, ctx) {
        const out = await countdown.run(task, ctx);
        // the idle janitor's revert, as the server does it (spec §5.4): the record goes back to the pool
        const body = { client_uuid: "janitor", episode_uuid: ctx.episodes.default!.episodeUuid, task_id: "", workflow_output: { reward: 0 } };
        await emu.app.fetch(new Request(`${SWARM_A}/abort_episode`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
        return out;
      },
    });
    expect(await runEpisode(msg, { ...deps, functions: { countdown: revertedLate } })).toMatchObject({ kind: "reported", result: "expired" });
    expect(net.to("/end_episode")).toHaveLength(1);
    expect(net.to("/abort_episode")).toHaveLength(0);
    expect(port.calls.at(-1)?.report).toMatchObject({ result: "expired", cause: "expired:notClaimed" });
    expect(accepted(emu)).toHaveLength(0);
  });
});

describe("messages that are not run", () => {
  it("a lease that expired before delivery, an unknown function, a swarm the function needs but the run lacks: skipped, nothing sent", async () => {
    const { net, port, deps, msg } = await setup();
    expect(await runEpisode({ ...msg, leaseDeadlineAtMs: deps.now() - 1 }, deps)).toMatchObject({ kind: "skipped" });
    expect(await runEpisode({ ...msg, functionName: "nope" }, deps)).toMatchObject({ kind: "skipped", reason: expect.stringContaining("nope") });
    const two = defineRolloutFunction({ name: "two", swarms: ["a", "b"], run: async () => ({ a: { reward: 0 }, b: { reward: 0 } }) });
    expect(await runEpisode({ ...msg, functionName: "two" }, { ...deps, functions: { two } })).toMatchObject({ kind: "skipped", reason: expect.stringContaining("a, b") });
    expect(net.requests).toHaveLength(0);
    expect(port.calls).toHaveLength(0);
  });
});
