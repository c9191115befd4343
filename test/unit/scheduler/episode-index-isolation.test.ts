/**
 * The episode index is derived per episode table (scheduler/episode-index). Every empty table is one shared value
 * (immutable's empty Map), so a bound remembered for a table some run emptied must not become the bound of another
 * run's fresh table: a run's wake-up time depends on its own rows only, whatever other runs the same isolate served
 * (a Worker isolate hosts many Durable Objects).
 */
import { describe, expect, it } from "vitest";
import { Map as ImmutableMap } from "immutable";
import { episodeIndex, nextWakeAtMs } from "../../../src/scheduler/index.ts";
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

describe("the index of a table it has not seen", () => {
  it("is computed from the rows: counts per status and the exact earliest lease or back-off", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 2, maxParallel: 2 }));
    h.start();
    h.rolling(1);
    const [a] = h.takeDispatches();
    h.claim(a!, 1); // a on the run lease, b on the dispatch lease
    const rows = [...h.state.episodes.values()];
    const fresh = episodeIndex(ImmutableMap(rows.map((r) => [r.episodeKey, { ...r }])));
    expect(fresh.counts).toMatchObject({ running: 1, dispatched: 1 });
    expect(fresh.earliestMs).toBe(Math.min(...rows.map((r) => r.deadlineAtMs!)));
  });
});
