/**
 * Issue 4 end to end: the two-model `academic-translation` function against two emulators (one claim on each
 * swarm per episode, both ended together, each with its own reward), and an eval run (episodes claimed as eval,
 * scored, then aborted: nothing reaches training; `GET /runs/:id/report` has per-task rewards and pass@k).
 */
import { afterEach, describe, expect, it } from "vitest";
import { parseDevArgs } from "../../src/cli/dev/options.ts";
import { buildDevPlan } from "../../src/cli/dev/plan.ts";
import { runsApi, waitForRun } from "../../src/cli/dev/runs-api.ts";
import { startDevSession, type DevSession } from "../../src/cli/dev/session.ts";
import type { EvalReport } from "../../src/scheduler/index.ts";
import { episodeBuffer, fetchWithTimeout, runToEnd, startRig, type E2eRig } from "./_support.ts";

describe("e2e: two models in one episode (academic-translation, two emulators)", () => {
  let session: DevSession | undefined;
  afterEach(async () => {
    await session?.close();
  });

  it("claims one episode on each swarm, ends both with their own rewards, one step on each server", async () => {
    const options = parseDevArgs(["--function", "academic-translation", "--steps", "1", "--batch-size", "2", "--num-repeat", "2"]);
    session = await startDevSession(await buildDevPlan(options!));
    expect(session.swarms.map((s) => s.name).sort()).toEqual(["detector", "translator"]);
    const api = runsApi(session.worker.url, fetchWithTimeout, { token: session.worker.token });
    const created = await api.create(session.spec);
    const { outcome, status } = await waitForRun(api, created.runId, { timeoutMs: 60_000 });
    expect(outcome).toBe("finished");
    expect(status!.stopReason).toBe("maxSteps");

    const ledger = await api.endedEpisodes(created.runId);
    const bySwarm = (swarm: string) => ledger.filter((e) => e.swarm === swarm);
    expect(bySwarm("translator")).toHaveLength(4);
    expect(bySwarm("detector")).toHaveLength(4);
    // each logical episode ended on both servers (same episode key and attempt), never on one only
    const keys = (swarm: string) => bySwarm(swarm).map((e) => `${e.episodeKey}@${e.attempt}`).sort();
    expect(keys("translator")).toEqual(keys("detector"));
    for (const swarm of session.swarms) {
      const emulator = swarm.emulator!.emulator;
      const accepted = emulator.stepLog.flatMap((s) => s.episodes.filter((e) => !e.dropped));
      expect(accepted.map((e) => e.episodeUuid).sort()).toEqual(bySwarm(swarm.name).map((e) => e.episodeUuid).sort());
      for (const e of accepted) expect(Number.isFinite(e.reward)).toBe(true);
      expect((await episodeBuffer(swarm.emulator!)).filter((r) => r.episode_status === "claimed")).toEqual([]);
    }
  });
});

describe("e2e: an eval run", () => {
  let rig: E2eRig | undefined;
  afterEach(async () => {
    await rig?.session.close();
  });

  it("scores every repeat of every task, aborts them all (nothing trained), and reports pass@k per task", async () => {
    rig = await startRig(["--episode-type", "eval", "--batch-size", "4", "--num-repeat", "3", "--steps", "1"]);
    const status = await runToEnd(rig);
    expect(status.episodeType).toBe("eval");

    const report = await rig.api.report(status.runId);
    const evalReport = report.eval as EvalReport;
    expect(evalReport.k).toBe(3);
    expect(evalReport.tasks.length).toBeGreaterThan(0);
    for (const t of evalReport.tasks) {
      expect(t.rewards).toHaveLength(3);
      expect(t.passAtK).toBe(t.rewards.some((r) => r >= 1) ? 1 : 0);
      expect(t.meanReward).toBeCloseTo(t.rewards.reduce((a, b) => a + b, 0) / 3, 12);
    }
    // nothing reached training: eval episodes are aborted, so the server accepted no train episode
    expect(rig.emulator.emulator.stepLog.flatMap((s) => s.episodes)).toEqual([]);
    expect(rig.endRequests.size).toBe(0);
    expect((await episodeBuffer(rig.emulator)).filter((r) => r.episode_status === "claimed")).toEqual([]);
  });
});
