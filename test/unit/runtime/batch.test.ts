/**
 * One consumer invocation's worth of episodes side by side, sharing one connection limiter and one subrequest
 * budget, against the in-process emulator: BC-34 (one failing episode never takes its siblings down; exactly one
 * end or abort per claim), BC-48 (never more than 6 open connections, counted on the wire) and BC-49 (a budget too
 * small for the function still ends or aborts and reports every claim).
 */
import { describe, expect, it } from "vitest";
import countdown from "../../../functions/countdown.ts";
import { defineRolloutFunction, type RolloutFunction } from "../../../src/sdk/contract.ts";
import { runEpisode, type EpisodeRunResult } from "../../../src/runtime/episode-runner.ts";
import { ConnectionLimiter, SubrequestBudget, SubrequestBudgetExceededError } from "../../../src/runtime/limits.ts";
import { countdownTask, episodeMessage, recordingLogger, recordingPort, rollingEmulator, runnerDeps, SWARM_A, SwarmNet } from "./_harness.ts";

const BATCH = 16;

async function batchSetup() {
  const { emu } = await rollingEmulator({ batchSize: 16, numRepeat: 4, maxEnvWorker: 128 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
  emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
  const net = new SwarmNet().add(SWARM_A, "default", emu);
  net.yieldTurns = 2; // answers take a couple of event-loop turns, so the 16 episodes really overlap
  return { emu, net };
}

/** Every claimed uuid got exactly one of end or abort on the wire. */
function expectOneActionPerClaim(net: SwarmNet, uuids: readonly string[]) {
  for (const uuid of uuids) {
    const actions = net.to("/end_episode", uuid).length + net.to("/abort_episode", uuid).length;
    expect(actions, `end+abort requests for ${uuid}`).toBe(1);
  }
}

describe("BC-34 a batch of 16 episodes with one failing function", () => {
  it("BC-34 episode #5 throws: exactly 15 end and 1 aborts (cause logged); every claim ended or aborted exactly once", async () => {
    const { emu, net } = await batchSetup();
    const judge = defineRolloutFunction({
      name: "countdown",
      async run(task, ctx) {
        const out = await countdown.run(task, ctx);
        if (task.task_id === "countdown:test:5") throw new Error("judge answered HTTP 500");
        return out;
      },
    });
    const port = recordingPort();
    const logs = Array.from({ length: BATCH }, () => recordingLogger());
    const shared = runnerDeps(net, port, { countdown: judge });
    const results = await Promise.allSettled(
      Array.from({ length: BATCH }, (_, i) =>
        runEpisode(episodeMessage(countdownTask(i), {}, shared.now()), { ...shared, log: logs[i]! }),
      ),
    );

    expect(results.every((r) => r.status === "fulfilled")).toBe(true);
    const values = results.map((r) => (r as PromiseFulfilledResult<EpisodeRunResult>).value);
    const ended = values.filter((v) => v.kind === "reported" && v.result === "ended");
    const aborted = values.filter((v) => v.kind === "reported" && v.result === "aborted");
    expect(ended).toHaveLength(15);
    expect(aborted).toHaveLength(1);
    expect(values[5]).toMatchObject({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: "function_error" } });
    expect(logs[5]!.lines.some((l) => l.level === "warn" && JSON.stringify(l.fields).includes("judge answered HTTP 500"))).toBe(true);

    const claims = port.calls.flatMap((c) => (c.method === "episodeClaimed" ? c.report.claims.map((x) => x.episodeUuid) : []));
    expect(new Set(claims).size).toBe(BATCH);
    expectOneActionPerClaim(net, claims);
    const reported = port.calls.filter((c) => c.method === "episodeReported");
    expect(reported).toHaveLength(BATCH);
    expect(new Set(reported.map((c) => c.report.episodeKey)).size).toBe(BATCH);

    const accepted = emu.stepLog.flatMap((s) => s.episodes);
    expect(accepted).toHaveLength(15);
    expect(accepted.map((e) => e.taskId)).not.toContain("countdown:test:5");
    expect(shared.limiter.active).toBe(0);
    expect(shared.budget!.reserved).toBe(0);
  });
});

describe("BC-48 connections per invocation", () => {
  it("BC-48 peak open connections on the wire stay ≤ 6 across a batch of 16 episodes (LLM calls included)", async () => {
    const { net } = await batchSetup();
    const limiter = new ConnectionLimiter();
    const port = recordingPort();
    const shared = runnerDeps(net, port, { countdown }, { limiter });
    const results = await Promise.all(
      Array.from({ length: BATCH }, (_, i) => runEpisode(episodeMessage(countdownTask(i), {}, shared.now()), shared)),
    );
    expect(results.filter((r) => r.kind === "reported" && r.result === "ended")).toHaveLength(BATCH);
    expect(net.chatCalls()).toHaveLength(BATCH);
    expect(net.peak).toBeGreaterThan(1); // the episodes did overlap
    expect(net.peak).toBeLessThanOrEqual(6);
    expect(limiter.peak).toBeLessThanOrEqual(6);
    expect(net.active).toBe(0);
  });
});

describe("BC-49 subrequest budget", () => {
  /** Counts every fetch the runner makes, to compare with the budget. */
  function seesBudget(): { fn: RolloutFunction; seen: unknown[] } {
    const seen: unknown[] = [];
    const fn = defineRolloutFunction({
      name: "countdown",
      async run(task, ctx) {
        try {
          return await countdown.run(task, ctx);
        } catch (err) {
          seen.push(err);
          throw err;
        }
      },
    });
    return { fn, seen };
  }

  it("BC-49 a budget with room only for the claim: the LLM call fails with subrequest_budget, the claim is aborted and reported", async () => {
    const { emu, net } = await batchSetup();
    const { fn, seen } = seesBudget();
    const port = recordingPort();
    // 7 reserved (end/abort + reports) + claim + engine status: nothing left for the LLM call
    const budget = new SubrequestBudget(9);
    const deps = runnerDeps(net, port, { countdown: fn }, { budget });
    const result = await runEpisode(episodeMessage(countdownTask(0), {}, deps.now()), deps);

    expect(result).toEqual({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: "subrequest_budget" } });
    expect(seen).toHaveLength(1);
    const chain = (e: unknown): unknown[] => (e ? [e, ...chain((e as { cause?: unknown }).cause)] : []);
    expect(chain(seen[0]).some((e) => e instanceof SubrequestBudgetExceededError)).toBe(true);
    expect(net.chatCalls()).toHaveLength(0);
    const uuid = net.to("/claim_episode")[0] && port.calls.find((c) => c.method === "episodeClaimed");
    expect(uuid).toBeDefined();
    expect(net.to("/abort_episode")).toHaveLength(1);
    expect(net.to("/end_episode")).toHaveLength(0);
    expect(port.calls.map((c) => c.method)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeReported"]);
    expect(budget.used).toBeLessThanOrEqual(budget.limit);
    expect(budget.reserved).toBe(0);
    expect(emu.stepLog.flatMap((s) => s.episodes)).toHaveLength(0);
  });

  it("BC-49 ctx.canContinue() is ordinary work: a function that polls it never spends the calls reserved for its end and reports", async () => {
    const { emu, net } = await batchSetup();
    const port = recordingPort();
    const answers: boolean[] = [];
    const polling = defineRolloutFunction({
      name: "countdown",
      async run(task, ctx) {
        const out = await countdown.run(task, ctx);
        for (let i = 0; i < 8; i++) answers.push(await ctx.canContinue()); // e.g. a check between agent turns
        return out;
      },
    });
    // 7 reserved (end/abort + reports) + claim + engine status + one LLM call, and room for 2 more calls
    const budget = new SubrequestBudget(12);
    const deps = runnerDeps(net, port, { countdown: polling }, { budget });
    const result = await runEpisode(episodeMessage(countdownTask(0), {}, deps.now()), deps);

    expect(result).toEqual({ kind: "reported", result: "ended", outcome: { kind: "end", reward: 1 } });
    expect(answers).toEqual([true, true, false, false, false, false, false, false]); // past the free room: false, not the reserve
    expect(net.to("/end_episode")).toHaveLength(1);
    expect(emu.stepLog.flatMap((s) => s.episodes)).toHaveLength(1);
    expect([...emu.engine.records.values()].filter((r) => r.episode_status === "claimed")).toHaveLength(0);
    expect(budget.used).toBeLessThanOrEqual(budget.limit);
  });

  it("BC-49 16 episodes on a 120-subrequest budget: every claim is ended or aborted exactly once, the rest hold nothing", async () => {
    const { emu, net } = await batchSetup();
    const port = recordingPort();
    const budget = new SubrequestBudget(120);
    const shared = runnerDeps(net, port, { countdown }, { budget });
    const results = await Promise.all(
      Array.from({ length: BATCH }, (_, i) => runEpisode(episodeMessage(countdownTask(i), {}, shared.now()), shared)),
    );
    const claims = port.calls.flatMap((c) => (c.method === "episodeClaimed" ? c.report.claims.map((x) => x.episodeUuid) : []));
    expectOneActionPerClaim(net, claims);
    // a claimed episode reports; one the budget could not claim for reports claimFailed and holds nothing
    expect(results.filter((r) => r.kind === "reported")).toHaveLength(claims.length);
    expect(results.filter((r) => r.kind !== "reported").every((r) => r.kind === "claimFailed")).toBe(true);
    expect(claims.length).toBeGreaterThan(0);
    expect(port.calls.filter((c) => c.method === "episodeReported")).toHaveLength(claims.length);
    expect([...emu.engine.records.values()].filter((r) => r.episode_status === "claimed")).toHaveLength(0);
    expect(net.requests.length).toBeLessThanOrEqual(budget.limit);
    expect(budget.used).toBeLessThanOrEqual(budget.limit);
  });
});
