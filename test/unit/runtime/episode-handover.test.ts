/**
 * The handover through the runtime, against the in-process emulator (docs/design/long-episodes.md): the first holder
 * (`runEpisode`) claims, makes a call, and at its gate hands the attempt over with the journal — it records no
 * outcome and sends no end or abort; the next holder (`resumeEpisode`) never claims, answers the first call from the
 * journal (the server sees it once), makes the rest, and ends the one claim once. A replay that asks for something
 * else is aborted (`replay_diverged`), never ended.
 */
import { describe, expect, it } from "vitest";
import countdown from "../../../functions/countdown.ts";
import { defineRolloutFunction, type RolloutFunction } from "../../../src/sdk/contract.ts";
import { runEpisode } from "../../../src/runtime/episode-runner.ts";
import { resumeEpisode, type HandoverRecord } from "../../../src/runtime/episode-resume.ts";
import { CallJournal, REPLAY_DIVERGED } from "../../../src/runtime/call-journal.ts";
import { countdownTask, episodeMessage, methodsOf, recordingPort, rollingEmulator, runnerDeps, SWARM_A, SwarmNet } from "./_harness.ts";

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

async function firstHolder(pause: Promise<void>) {
  const { emu } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
  emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
  const net = new SwarmNet().add(SWARM_A, "default", emu);
  const port = recordingPort();
  const time = testTime();
  const task = countdownTask(0);
  const msg = episodeMessage(task, { runHasSecrets: false }, time.now());
  const gateAtMs = time.now() + 10_000;
  let record: HandoverRecord | null = null;
  const deps = runnerDeps(net, port, { countdown: twoTurns(pause) }, {
    now: time.now,
    sleep: time.sleep,
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
