/**
 * @module test/unit/rewards/judge-idle-budget — BC-23: a slow judge after the last policy call outlives the idle
 * timer; the runtime's `decideOutcome` classifies the episode `expired` and sends nothing. Time is injected: the
 * fake judge advances a manual clock instead of sleeping. Also the documented budget formula.
 */
import { describe, expect, it } from "vitest";
import { createAcademicTranslation, demoTasks } from "../../../functions/academic-translation.ts";
import { swarmsOf } from "../../../src/sdk/contract.ts";
import { createTestContext } from "../../../src/sdk/testing.ts";
import { checkIdleBudget, maxJudgeLatencyMs, minDiscardTimeoutSeconds } from "../../../src/rewards/judge-budget.ts";
import { createFakeJudge } from "../../../src/rewards/judge-fake.ts";
import { decideOutcome } from "../../../src/runtime/outcome.ts";
import { createEpisodeStop } from "../../../src/runtime/episode-stop.ts";
import { createRolloutContext } from "../../../src/runtime/rollout-context.ts";

const DISCARD_TIMEOUT_SECONDS = 60;

/**
 * Runs academic-translation in the runtime's real rollout context (activity tracking on a manual clock): each
 * policy call takes 1 s, the judge takes `judgeSeconds` per verdict (parallel verdicts: the clock moves once).
 */
async function runWithJudge(judgeSeconds: number) {
  let nowMs = 1_000_000;
  const claimedAtMs = nowMs;
  const fn = createAcademicTranslation({
    judge: () => {
      let advanced = false;
      return createFakeJudge(() => {
        if (!advanced) nowMs += judgeSeconds * 1000; // the two verdicts run in parallel: wall time counts once
        advanced = true;
        return 0.7;
      });
    },
  });
  const swarms = swarmsOf(fn);
  const local = createTestContext({
    swarms,
    reply: () => {
      nowMs += 1000;
      return "<translation>译文</translation>";
    },
  });
  const { ctx, activity } = createRolloutContext(
    {
      fetch: local.fetch,
      episodes: { ...local.ctx.episodes },
      episodeType: "train",
      stop: createEpisodeStop(),
      discardEpisodeTimeoutSeconds: DISCARD_TIMEOUT_SECONDS,
      hardStopAtMs: Infinity,
      hardStop: { cause: "lifetime_exceeded", message: "never" },
      canContinue: async () => true,
      sleep: async () => undefined,
      random: () => 0.5,
      log: local.ctx.log,
      secrets: {},
      model: "policy",
      now: () => nowMs,
    },
    claimedAtMs,
  );
  const result = await fn.run(demoTasks[0]!, ctx);
  const decision = decideOutcome({
    result,
    threw: false,
    swarms,
    activity,
    episodeType: "train",
    discardEpisodeTimeoutSeconds: DISCARD_TIMEOUT_SECONDS,
    lifetimeExceeded: false,
    nowMs,
  });
  return { decision, activity, elapsedMs: nowMs - claimedAtMs };
}

describe("idle-timeout budget of a judged reward (BC-23)", () => {
  it("BC-23 a judge slower than the discard timeout after the last policy call → abort 'expired', nothing sent", async () => {
    const { decision, activity, elapsedMs } = await runWithJudge(70);
    expect(activity.translator).toMatchObject({ calls: 2, successfulCalls: 2, inFlight: 0 });
    expect(activity.detector).toMatchObject({ calls: 1, successfulCalls: 1, inFlight: 0 });
    expect(elapsedMs).toBe(73_000); // three 1 s policy calls, then 70 s of judging
    expect(decision.outcome).toEqual({ kind: "abort", cause: "expired" });
    expect(decision.action).toBe("none"); // no end_episode: the janitor may have handed the episode to someone else
    expect(decision.outputs).toBeUndefined();
  });

  it("BC-23 the detector's episode idles from call 2, so its clock decides even when the translator's is fresh", async () => {
    // translator last active at +3 s, detector at +2 s. Judge 58 s: the detector idles 59 s (ok). Judge 60 s: the
    // detector idles 61 s (expired) while the translator's 60 s is not yet past the timeout.
    const fits = await runWithJudge(58);
    expect(fits.decision).toMatchObject({ action: "end", outcome: { kind: "end", reward: 0.7 } });
    expect(Object.keys(fits.decision.outputs ?? {})).toEqual(["translator", "detector"]);
    const late = await runWithJudge(60);
    expect(late.decision).toMatchObject({ action: "none", outcome: { kind: "abort", cause: "expired" } });
  });

  it("documents the budget: discard timeout ≥ max judge latency + 10 s janitor scan + margin", () => {
    expect(maxJudgeLatencyMs()).toBe(3 * 60_000 + 1000 + 2000);
    expect(maxJudgeLatencyMs({ maxAttempts: 2, timeoutMs: 20_000, retryDelayMs: 500 })).toBe(40_500);
    expect(minDiscardTimeoutSeconds({ maxJudgeLatencyMs: 183_000 })).toBe(183 + 10 + 20);
    expect(minDiscardTimeoutSeconds({ maxJudgeLatencyMs: 40_500, judgeCalls: 2, marginSeconds: 5 })).toBe(81 + 10 + 5);
    expect(checkIdleBudget(240, { maxJudgeLatencyMs: 183_000 })).toBeNull();
    expect(checkIdleBudget(DISCARD_TIMEOUT_SECONDS, { maxJudgeLatencyMs: 183_000 })).toMatch(
      /discardEpisodeTimeoutSeconds 60 is below the judge's idle budget 213 s .*raise the timeout/,
    );
  });
});
