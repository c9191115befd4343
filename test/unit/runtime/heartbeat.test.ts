/**
 * The episode's heartbeats (runtime/heartbeat): the start report before the claim, the beats while the function
 * runs, and what the runtime does when the run answers that it gave up on the attempt.
 */
import { describe, expect, it } from "vitest";
import { realSleep } from "../../../src/client/index.ts";
import type { EventAck, HeartbeatReport, SchedulerPort } from "../../../src/port/index.ts";
import { startHeartbeat } from "../../../src/runtime/heartbeat.ts";
import { runEpisode } from "../../../src/runtime/episode-runner.ts";
import { defineRolloutFunction, type RolloutFunction } from "../../../src/sdk/contract.ts";
import { countdownTask, episodeMessage, recordingPort, recordingLogger, rollingEmulator, runnerDeps, SWARM_A, SwarmNet } from "./_harness.ts";

const ref = { episodeKey: "k#0", attempt: 1, dispatchId: 1 };

/** A port with heartbeats: every report recorded, answered by `answer`. */
function heartbeatPort(answer: (r: HeartbeatReport) => EventAck | Promise<EventAck>) {
  const port = recordingPort();
  const beats: HeartbeatReport[] = [];
  const withBeats: SchedulerPort & { calls: typeof port.calls; beats: HeartbeatReport[] } = Object.assign(port, {
    beats,
    async episodeHeartbeat(r: HeartbeatReport) {
      beats.push(r);
      return answer(r);
    },
  });
  return withBeats;
}

async function rig(functions: Record<string, RolloutFunction>, answer: (r: HeartbeatReport) => EventAck | Promise<EventAck>) {
  const { emu } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
  emu.answerKey.add([{ target: 24, nums: [2, 3, 4] }]);
  const net = new SwarmNet().add(SWARM_A, "default", emu);
  const port = heartbeatPort(answer);
  // real waits: the beats are spaced on the clock (20 ms apart here)
  const deps = runnerDeps(net, port, functions, { sleep: realSleep, now: () => Date.now() });
  const msg = episodeMessage(countdownTask(0), { heartbeatSeconds: 0.02 }, Date.now());
  return { emu, net, port, deps, msg };
}

describe("heartbeats of a running episode", () => {
  it("beats every interval with stage running until cancelled; a failed beat is logged and the next goes on time", async () => {
    const sent: HeartbeatReport[] = [];
    const log = recordingLogger();
    const hb = startHeartbeat(
      { beat: async (r) => (sent.push(r), sent.length === 2 ? Promise.reject(new Error("reset")) : { status: "applied" }), sleep: realSleep, log },
      ref, 10, () => expect.fail("not given up"),
    );
    while (sent.length < 4) await realSleep(5);
    hb.cancel();
    const count = sent.length;
    await realSleep(40);
    expect(sent.length).toBe(count);
    expect(sent[0]).toEqual({ ...ref, stage: "running" });
    expect(log.lines.filter((l) => l.level === "warn").map((l) => l.msg)).toEqual(["heartbeat failed; the next one goes on time"]);
  });

  it("when the shared budget has no subrequest left, one last quiet beat is paid from the episode's reserve and the beats end", async () => {
    const sent: HeartbeatReport[] = [];
    let shared = 2;
    let reserved = 0;
    const budget = { take: () => { if (shared-- <= 0) throw new Error("subrequest budget exhausted"); } };
    startHeartbeat(
      { beat: async (r) => (sent.push(r), { status: "applied" }), budget, reserve: { take: () => void reserved++ }, sleep: realSleep, log: recordingLogger() },
      ref, 5, () => expect.fail("not given up"),
    );
    while (sent.length < 3) await realSleep(5);
    await realSleep(40);
    expect(sent.map((r) => r.stage)).toEqual(["running", "running", "quiet"]);
    expect(reserved).toBe(1);
  });

  it("a stale answer calls onGivenUp once and ends the beats", async () => {
    let given: string[] = [];
    let n = 0;
    startHeartbeat({ beat: async () => (n++, { status: "stale", reason: "attempt 1 was closed" }), sleep: realSleep, log: recordingLogger() }, ref, 5, (why) => (given = [...given, why]));
    await realSleep(60);
    expect(given).toEqual(["attempt 1 was closed"]);
    expect(n).toBe(1);
  });

  it("each beat is one subrequest of the shared budget; an exhausted budget ends the beats, not the episode", async () => {
    let taken = 0;
    let beats = 0;
    const budget = { take: () => { if (++taken > 2) throw new Error("budget"); } };
    startHeartbeat({ beat: async () => (beats++, { status: "applied" }), budget, sleep: realSleep, log: recordingLogger() }, ref, 5, () => undefined);
    await realSleep(80);
    expect(beats).toBe(2);
  });
});

describe("the episode and its heartbeats", () => {
  it("reports its start before anything else, then beats while the function runs, and ends normally", async () => {
    const r = await rig(
      {
        countdown: defineRolloutFunction({
          name: "countdown",
          async run(_task, ctx) {
            await ctx.llm.chat.completions.create({ model: ctx.model, messages: [{ role: "user", content: "hi" }] });
            await realSleep(120);
            return { reward: 1 };
          },
        }),
      },
      () => ({ status: "applied" }),
    );
    const result = await runEpisode(r.msg, r.deps);
    expect(result).toMatchObject({ kind: "reported", result: "ended" });
    expect(r.port.beats[0]).toEqual({ episodeKey: r.msg.episodeKey, attempt: 1, dispatchId: 1, stage: "started" });
    expect(r.port.beats.slice(1).length).toBeGreaterThanOrEqual(2);
    expect(r.port.beats.slice(1).every((b) => b.stage === "running")).toBe(true);
    expect(r.port.calls[0]?.method).toBe("episodeClaimed"); // the start came before the claim
  });

  it("a stale start (the dispatch was sent again) claims nothing: no request reaches the server", async () => {
    const r = await rig({ countdown: defineRolloutFunction({ name: "countdown", run: async () => ({ reward: 1 }) }) }, () => ({ status: "stale", reason: "message of dispatch 1; dispatch 2 is current" }));
    const result = await runEpisode(r.msg, r.deps);
    expect(result).toEqual({ kind: "stale", reason: "message of dispatch 1; dispatch 2 is current" });
    expect(r.net.to("/claim_episode")).toHaveLength(0);
    expect(r.port.calls).toEqual([]);
  });

  it("when the run gave up on the attempt, ctx.signal fires at once and nothing more is sent to the server for it (the run aborted it already)", async () => {
    let reason: unknown;
    const r = await rig(
      {
        countdown: defineRolloutFunction({
          name: "countdown",
          async run(_task, ctx) {
            // the first beat goes as the function starts (it is the stop channel): listen from the start
            const stopped = new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject((reason = ctx.signal.reason)), { once: true }));
            stopped.catch(() => undefined);
            await ctx.llm.chat.completions.create({ model: ctx.model, messages: [{ role: "user", content: "hi" }] });
            await stopped;
            return { reward: 1 };
          },
        }),
      },
      (b) => (b.stage === "started" ? { status: "applied" } : { status: "stale", reason: "attempt 1 was closed; attempt 2 is current" }),
    );
    // the run closed the attempt: its outcome record is stale too
    r.deps.port.episodeOutcomeRecorded = async () => ({ status: "stale", reason: "attempt 1 was closed; attempt 2 is current" });
    const result = await runEpisode(r.msg, r.deps);
    expect(reason).toMatchObject({ name: "EpisodeAbortError", reason: "lease_expired" });
    expect(result).toEqual({ kind: "stale", reason: "attempt 1 was closed; attempt 2 is current" });
    expect(r.net.to("/abort_episode")).toHaveLength(0);
    expect(r.net.to("/end_episode")).toHaveLength(0);
  });
});
