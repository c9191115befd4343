/**
 * Whether a finished dev run did what was asked (exit code 1 with a one-line reason otherwise): a train run where
 * every episode failed, a step that ended nothing, tasks that ran out before the last step, an eval run that scored
 * nothing or stopped early; and the step count said in the singular.
 */
import { describe, expect, it } from "vitest";
import { stepsText } from "../../../src/cli/dev/run-dev.ts";
import { runFailure, type VerdictInput } from "../../../src/cli/dev/verdict.ts";
import { step } from "./_fixtures.ts";

const plan = { steps: 3, episodesPerStep: 32 };

function run(over: Partial<VerdictInput> & { episodesEnded?: number; attemptsFailed?: number } = {}): VerdictInput {
  const { episodesEnded, attemptsFailed, ...rest } = over;
  const steps = rest.steps ?? [step(0, 32, 0.25, 2_000), step(1, 32, 0.5, 2_000), step(2, 32, 0.75, 2_000)];
  return {
    episodeType: "train",
    stopReason: "maxSteps",
    failuresByCause: {},
    ...rest,
    steps,
    totals: { episodesEnded: episodesEnded ?? steps.reduce((n, s) => n + s.episodesEnded, 0), attemptsFailed: attemptsFailed ?? 0 },
  };
}

describe("dev run verdict", () => {
  it("a train run that stopped on maxSteps with episodes in every step passes", () => {
    expect(runFailure(run(), plan)).toBeNull();
    expect(runFailure(run({ untrainedRewards: 0 }), plan)).toBeNull();
  });

  it("a train run that finished with rewards in a batch the server never trained fails, saying how many", () => {
    expect(runFailure(run({ untrainedRewards: 12 }), plan)).toMatch(/^12 accepted rewards sit in a server batch that was never trained/);
  });

  it("a train run whose every episode aborted invalid_task fails, naming the causes and --function/--kind", () => {
    const allFailed = run({ steps: [step(0, 0, null, null)], failuresByCause: { invalid_task: 192 }, attemptsFailed: 192 });
    expect(runFailure(allFailed, { steps: 1, episodesPerStep: 32 })).toBe(
      "no episode ended: all 192 attempts failed (invalid_task 192); the function refused the tasks as invalid: check that --function fits the dataset (--kind)",
    );
  });

  it("a step that ended no episode fails even when the run reached maxSteps", () => {
    const hole = run({ steps: [step(0, 32, 0.5, 2_000), step(1, 0, null, null), step(2, 32, 0.6, 2_000)], failuresByCause: { function_error: 40, expired: 2 } });
    expect(runFailure(hole, plan)).toBe(
      "step 2 ended no episode (of 32); failed attempts: function_error 40, expired 2; see the [run warn] / [worker warn] lines above",
    );
  });

  it("tasks that ran out before the asked steps fail with the fix", () => {
    const short = run({ stopReason: "epochsDone", steps: [step(0, 32, 0.5, 2_000), { ...step(1, 12, 0.5, null), partial: true }] });
    expect(runFailure(short, plan)).toBe(
      "the tasks ran out after 2 of 3 training steps; step 2 got 12 of 32 episodes: give more tasks (--limit, a bigger --dataset) or fewer --steps",
    );
    expect(runFailure(run({ stopReason: null }), plan)).toBe("the run stopped (no stop reason) after 3 of 3 training steps");
    // stopped on request with every accepted reward trained: its results are kept, not a failure (issue 25)
    expect(runFailure(run({ stopReason: "stopRequested" }), plan)).toBeNull();
  });

  it("an eval run passes on epochsDone with scored episodes, fails when nothing was scored or it stopped early", () => {
    const evalRun = (o: Partial<VerdictInput> & { episodesEnded?: number; attemptsFailed?: number }) => run({ episodeType: "eval", steps: [], stopReason: "epochsDone", ...o });
    const evalPlan = { steps: null, episodesPerStep: 32 };
    expect(runFailure(evalRun({ episodesEnded: 64 }), evalPlan)).toBeNull();
    expect(runFailure(evalRun({ episodesEnded: 0, attemptsFailed: 0 }), evalPlan)).toBe("no episode was scored: no attempt ran; see the warnings above");
    expect(runFailure(evalRun({ episodesEnded: 5, stopReason: "stopRequested" }), evalPlan)).toBe("the eval run stopped (stopRequested) before every task was scored");
  });

  it("says training steps in the singular for one", () => {
    expect([stepsText(1), stepsText(3), stepsText(null)]).toEqual(["1 training step", "3 training steps", "eval run"]);
  });
});
