/**
 * The sandbox chaos rows that are quick enough for `npm test`, on the real stack (emulator, local sandbox server
 * and the Worker in local workerd, each in its own process): 30 % of sandbox creates refused, and the sandbox
 * server killed mid-command and started again. In each: 0 sandboxes alive 60 s after the run finished, none seen
 * alive more than 60 s after its own attempt was over (sampled every second), 0 sandbox
 * failures posted as rewards, 0 lost / doubled / left claimed / stranded. The full table is `npm run chaos -- sandbox`.
 */
import { describe, expect, it } from "vitest";
import { FAST_SANDBOX, SCENARIOS } from "../chaos/scenarios.ts";
import { chaosSuite } from "../chaos/suite.ts";

const { stack, rows } = chaosSuite();

describe("sandbox chaos (fast subset)", () => {
  for (const name of FAST_SANDBOX) {
    const scenario = SCENARIOS.find((s) => s.name === name)!;
    it(`${name}: 0 sandboxes left, 0 failures as rewards, 0 lost / doubled / left claimed / stranded`, async () => {
      const row = await stack.run(scenario);
      rows.push(row);
      expect(row.episodes, row.notes.join("; ")).toBeGreaterThan(0);
      expect(row.sandboxes?.created, "the run made sandboxes").toBeGreaterThan(0);
      const { aliveAfter60s, pastAttempt60s, infraAsReward } = row.sandboxes ?? {};
      expect({ aliveAfter60s, pastAttempt60s, infraAsReward }, row.notes.join("; ")).toEqual({ aliveAfter60s: 0, pastAttempt60s: 0, infraAsReward: 0 });
      expect({ lost: row.lost, doubled: row.doubled, leftClaimed: row.leftClaimed, stranded: row.stranded }).toEqual({
        lost: 0,
        doubled: 0,
        leftClaimed: 0,
        stranded: 0,
      });
      expect(row.verdict).toBe("finished/maxSteps ok");
    }, 240_000);
  }
});
