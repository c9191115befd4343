/**
 * A consumer that dies mid-episode, on the real stack (the emulator in its own process, the Worker in local workerd
 * on persisted state): workerd is SIGKILLed while episodes run and started again. The run's object notices the dead
 * consumers by their missing heartbeats and gives their episodes up (`lease_expired`: claims aborted once, the
 * repeats run again) within seconds — the run lease would be 8 × 120 + 60 = 1020 s, far past this test's bounded
 * wait — and the run still finishes with nothing lost, doubled, left claimed or stranded (the emulator's journal
 * against the run's ledger).
 */
import { afterAll, describe, expect, it } from "vitest";
import type { RunView } from "../../src/cli/dev/runs-api.ts";
import { ChaosStack, formatTable, type Scenario } from "../chaos/harness.ts";
import { SCENARIOS } from "../chaos/scenarios.ts";

const stack = new ChaosStack();
afterAll(async () => {
  await stack.close();
}, 60_000);

describe("e2e: a consumer killed mid-episode", () => {
  it("the run gives the dead consumers' episodes up within its bounded wait (lease_expired), re-runs them, and finishes clean", async () => {
    const base = SCENARIOS.find((s) => s.name === "consumer killed mid-episode")!;
    let afterKill: RunView | null = null;
    const scenario: Scenario = {
      ...base,
      async during(ctx) {
        await base.during!(ctx);
        afterKill = await ctx.api.get(ctx.runId);
      },
    };
    const row = await stack.run(scenario);
    console.log(formatTable([row]));
    const seen = afterKill as RunView | null;
    expect(row.notes.some((n) => n.includes("the run gave up on them (lease_expired)")), row.notes.join("; ")).toBe(true);
    expect(seen?.failuresByCause["lease_expired"] ?? 0).toBeGreaterThan(0);
    expect(Number(seen?.totals["reconciles"] ?? 0)).toBeGreaterThan(0);
    expect({ lost: row.lost, doubled: row.doubled, leftClaimed: row.leftClaimed, stranded: row.stranded }).toEqual({ lost: 0, doubled: 0, leftClaimed: 0, stranded: 0 });
    expect(row.verdict).toBe("finished/maxSteps ok");
    expect(row.rerun).toBeGreaterThan(0); // the given-up repeats ended on a later attempt
  }, 330_000);
});
