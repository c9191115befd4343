/**
 * Every episode in flight at once in local workerd: with `maxParallel` 64 (batch 16 × num_repeat 4, max_env_worker
 * 64) and every LLM call held 1.5 s, the emulator sees 64 episodes claimed at the same moment — the dispatch is not
 * capped by a queue batch (miniflare's broker runs one batch at a time). Counted from the emulator's view: at each
 * chat call, the records claimed at that instant.
 */
import { afterAll, describe, expect, it } from "vitest";
import { runToEnd, startRig, type E2eRig } from "./_support.ts";

describe("e2e: in-flight episodes", () => {
  let rig: E2eRig | undefined;
  afterAll(async () => {
    await rig?.session.close();
  });

  it("runs 64 episodes claimed at once with maxParallel 64, and ends each exactly once", async () => {
    rig = await startRig(["--batch-size", "16", "--num-repeat", "4", "--max-env-worker", "64", "--steps", "1"]);
    rig.session.spec.maxParallel = 64; // the server cap min(16, ceil(64 / 4)) × 4, said explicitly
    const emu = rig.emulator.emulator;
    let maxClaimed = 0;
    const claimedNow = () => [...emu.engine.records.values()].filter((r) => r.episode_status === "claimed").length;
    emu.hooks.llmLatencyMs = () => {
      maxClaimed = Math.max(maxClaimed, claimedNow());
      return 1_500;
    };
    const status = await runToEnd(rig, 90_000);
    expect(status.steps.map((s) => s.episodesEnded)).toEqual([64]);
    expect(maxClaimed).toBe(64);
    expect([...rig.endRequests.values()].every((n) => n === 1)).toBe(true);
    expect(rig.endRequests.size).toBe(64);
  });
});
