/**
 * `ajet-edge rescore` on the real stack (issue 22 §3): a 2-step Countdown run (emulator + the Worker in local
 * workerd, transcripts in R2), then its stored transcripts re-scored from the CLI. With the function's own reward
 * (`--function countdown`) nothing changes — the re-score reproduces every live reward; with a stricter reward (no
 * 0.1 for a well-formed wrong answer) exactly the episodes that earned 0.1 change, to 0. The emulator's request log
 * shows no request of any kind while the re-scores run: no claim, no LLM call, no end.
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runRescoreCommand } from "../../src/cli/commands/rescore.ts";
import { memoryIo } from "../../src/cli/dev/output.ts";
import { rewardedAttempts, type RescoreReport } from "../../src/cli/rescore/rescore.ts";
import type { AttemptRow } from "../../src/edge/run/attempts.ts";
import { runToEnd, startRig, type E2eRig } from "./_support.ts";

describe("e2e: rescore a finished run's transcripts", () => {
  let rig: E2eRig | undefined;
  let runId: string;
  let attempts: AttemptRow[];
  beforeAll(async () => {
    rig = await startRig(["--steps", "2"]);
    runId = (await runToEnd(rig)).runId;
    attempts = await rig.api.attempts(runId);
  });
  afterAll(async () => {
    await rig?.session.close();
  });

  async function rescore(flags: string[]): Promise<{ report: RescoreReport; requests: string[] }> {
    const log = rig!.emulator.emulator.requestLog;
    const before = log.length;
    const io = memoryIo();
    const code = await runRescoreCommand([runId, "--worker", rig!.session.worker.url, "--json", ...flags], io, { AJET_API_TOKEN: rig!.session.worker.token }, fetch, fileURLToPath(new URL("../..", import.meta.url)));
    expect(io.stderr.join("")).toBe("");
    expect(code).toBe(0);
    return { report: JSON.parse(io.stdout.join("")) as RescoreReport, requests: log.slice(before).map((r) => `${r.method} ${r.path}`) };
  }

  it("the function's own reward reproduces every live reward", async () => {
    const { report, requests } = await rescore(["--function", "countdown"]);
    // every episode's latest rewarded attempt: 2 steps × 32 episodes
    expect(report.episodes).toBe(rewardedAttempts(attempts).length);
    expect(report.episodes).toBeGreaterThanOrEqual(64);
    expect(report.changedShare).toBe(0);
    expect(report.skipped).toEqual({ truncated: 0, no_task: 0, missing: 0, score_failed: 0 });
    // the emulator was not asked anything while the CLI re-scored (the Worker's own engine watch may poll status only)
    expect(requests.filter((r) => !r.endsWith("/get_engine_status"))).toEqual([]);
  });

  it("a stricter reward changes exactly the episodes that earned 0.1, to 0; no claim, no LLM call, no end", async () => {
    const { report, requests } = await rescore(["--reward", fileURLToPath(new URL("fixtures/strict-countdown.ts", import.meta.url))]);
    const formOnly = rewardedAttempts(attempts).filter((a) => Math.abs(a.reward! - 0.1) < 1e-9).map((a) => a.episodeKey).sort();
    const changed = report.rescored.filter((e) => e.newReward !== e.oldReward);
    expect(changed.map((e) => e.episodeKey).sort()).toEqual(formOnly);
    expect(changed.every((e) => e.newReward === 0)).toBe(true);
    expect(report.changedShare).toBeCloseTo(formOnly.length / report.episodes, 12);
    for (const s of report.steps) {
      const rows = report.rescored.filter((e) => e.window === s.window);
      expect(s.newMean).toBeCloseTo(rows.reduce((n, e) => n + (e.oldReward === 1 ? 1 : 0), 0) / rows.length, 12);
    }
    console.log(`rescore: ${formOnly.length} of ${report.episodes} episodes changed (0.1 → 0); signal appears in ${report.signalAppears.length} groups, disappears from ${report.signalDisappears.length}`);
    expect(requests.filter((r) => !r.endsWith("/get_engine_status"))).toEqual([]);
  });
});
