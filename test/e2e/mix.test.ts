/**
 * Two task sources at weights 0.25 and 0.75 (two generated Countdown datasets with different names), batch 8,
 * num_repeat 2, 3 training steps: every batch the server trains on holds exactly 2 tasks of the first source and 6
 * of the second (design note: one batch window per global step, mixed by weight).
 */
import { afterAll, describe, expect, it } from "vitest";
import { generatedCountdownDataset } from "../../src/cli/dev/plan.ts";
import { runToEnd, startRig, stepsByGlobalStep, type E2eRig } from "./_support.ts";

describe("e2e: two datasets mixed 0.25 / 0.75", () => {
  let rig: E2eRig | undefined;
  afterAll(async () => {
    await rig?.session.close();
  });

  it("completes 2 + 6 tasks per global step, split by source, for 3 steps", async () => {
    rig = await startRig(["--batch-size", "8", "--num-repeat", "2", "--steps", "3"], [
      generatedCountdownDataset({ name: "mix-a", count: 16, seed: 3, weight: 0.25 }),
      generatedCountdownDataset({ name: "mix-b", count: 40, seed: 4, weight: 0.75 }),
    ]);
    const status = await runToEnd(rig);

    expect(status.stopReason).toBe("maxSteps");
    const serverSteps = stepsByGlobalStep(rig.emulator);
    expect([...serverSteps.keys()]).toEqual([1, 2, 3]);
    for (const [globalStep, entry] of serverSteps) {
      const bySource = { a: 0, b: 0, other: 0 };
      for (const id of entry.completedTaskIds) {
        if (id.startsWith("mix-a:gen-3:")) bySource.a++;
        else if (id.startsWith("mix-b:gen-4:")) bySource.b++;
        else bySource.other++;
      }
      expect({ globalStep, ...bySource }).toEqual({ globalStep, a: 2, b: 6, other: 0 });
      expect(entry.episodes).toHaveLength(16); // exactly the batch: no episode of another window slipped in
    }
    expect(status.steps.map((s) => s.sourceGroups)).toEqual([
      { "mix-a": 2, "mix-b": 6 },
      { "mix-a": 2, "mix-b": 6 },
      { "mix-a": 2, "mix-b": 6 },
    ]);
  });
});
