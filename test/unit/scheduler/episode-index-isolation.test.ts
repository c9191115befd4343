/**
 * The episode index is derived per episode table (scheduler/episode-index). Every empty table is one shared value
 * (immutable's empty Map), so a bound remembered for a table some run emptied must not become the bound of another
 * run's fresh table: a run's wake-up time depends on its own rows only, whatever other runs the same isolate served
 * (a Worker isolate hosts many Durable Objects).
 */
import { describe, expect, it } from "vitest";
import { nextWakeAtMs } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

describe("runs in one isolate do not share an episode index", () => {
  it("a run that emptied its episode table leaves no wake-up bound to a run that starts after it", () => {
    const a = new Harness(specInput({ batchSize: 1, numRepeat: 1, maxParallel: 1, maxSteps: 1 }));
    // an earlier clock than the next run's, so that its last lease bound (its dispatch lease, 300 s) falls between the
    // next run's start and that run's first poll: a bound in the next run's future is never re-checked before it wakes
    a.nowMs = 1_000_000 - 300_000 + 500;
    a.start();
    a.rolling(1);
    a.serveAll(1);
    expect(a.state.episodes.size).toBe(0); // its one group resolved: every row deleted

    const b = new Harness(specInput({ batchSize: 1, numRepeat: 1 }));
    b.start(); // the gate is closed until the engine is seen: the next poll is the only thing due
    expect(nextWakeAtMs(b.state)).toBe(b.state.run.nextPollAtMs);
  });
});
