/**
 * A run's top-up room is one batch's worth over the whole run, not per window (scheduler/top-up-ask `topUpRoom`):
 * issue 25's bound, accepted rewards ≤ planned + one batch per run. Found on the real stack under load: a run topped
 * up mid-run (the batch looked unshared on a pool read older than the other run's landings), its top-up groups
 * overflowed into the next batch, and with a room per window it either topped up again in its last window (two
 * runs: 50 rewards accepted for 32 planned, bound 48) or, mid-run with the room used, waited for others forever
 * instead of opening its next window.
 */
import { describe, expect, it } from "vitest";
import type { PoolSeen } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";
import { asksOf, pool, seen, uuids } from "./top-up-fixtures.ts";
import { TOP_UP_RETRY_MS } from "../../../src/scheduler/top-up-ask.ts";

/** A run of 2 tasks (1 repeat) per window whose first window landed at step 1. */
function firstWindowLanded(maxSteps: number): Harness {
  const h = new Harness(specInput({ batchSize: 2, numRepeat: 1, maxParallel: 4, maxSteps }));
  h.answerTopUps = false;
  h.start();
  h.rolling(1);
  for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 1);
  return h;
}

/** The pool of step 2: our episodes of that step (one task each), target `target`, and `running` other clients' claims. */
function poolAt2(h: Harness, target: number, running: Record<string, string> = {}): PoolSeen {
  const ours = uuids(h).filter((u) => Object.values(h.state.batches).some((b) => b.globalStep === 2 && b.episodes.has(u)));
  return { globalStep: 2, completedTasks: ours.length, completedTaskTarget: target, episodeUuids: [...ours, ...Object.keys(running)], taskEpisodes: Object.fromEntries(ours.map((u) => [`t-${u}`, [u]])), runningTaskIds: running };
}

const seen2 = (h: Harness, p: PoolSeen, grant?: { step: number; groups: number }) =>
  h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 2, pool: p, ...(grant ? { topUpGrant: grant } : {}) });

describe("a run's top-up room", () => {
  it("mid-run, once the run's room is used up, the next window fills the batch (the run never waits for others)", () => {
    const h = firstWindowLanded(3);
    seen(h, pool(h, 6)); // lacks 4 tasks, nobody else in the batch: a mid-run top-up of one batch's worth (2)
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2, midRun: true }]);
    seen(h, pool(h, 6), { step: 1, groups: 2 });
    const topUps = h.takeDispatches();
    expect(topUps).toHaveLength(2);
    for (const d of topUps) h.finishEpisode(d, 1, 1);
    seen(h, pool(h, 6)); // still lacks 2
    expect(asksOf(h)).toHaveLength(1);
    expect(h.state.run.windowsOpened).toBe(2);
    expect(h.takeDispatches()).toHaveLength(2); // the next window's 2 groups
    expect(h.state.run.totals.groupsToppedUp).toBe(2);
  });

  it("counts every window's top-ups: after a mid-run top-up, the last window tops up only as the batch's last feeder", () => {
    const h = firstWindowLanded(2);
    seen(h, pool(h, 4)); // lacks 2: the mid-run top-up uses the run's whole room
    seen(h, pool(h, 4), { step: 1, groups: 2 });
    for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 1);
    h.rolling(2); // the batch trained; the last window opens on step 2
    const last = h.takeDispatches();
    expect(last).toHaveLength(2);
    for (const d of last) h.finishEpisode(d, 1, 2);
    // step 2's batch lacks 2 tasks and another client still serves one: no room left (per window it had 2)
    seen2(h, poolAt2(h, 4, { "other-uuid": "other-task" }));
    h.advance(3_000);
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2, midRun: true }]);
    expect(h.state.run.phase).toBe("finishing");
    // the other client left: the run is the batch's last feeder and may top up one more batch's worth
    seen2(h, poolAt2(h, 4));
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2, midRun: true }, { step: 2, groups: 2 }]);
  });

  it("mid-run, an ask the server's object refuses (another run shares the server) opens the next window instead of asking again", () => {
    const h = firstWindowLanded(3);
    seen(h, pool(h, 6)); // lacks 4 tasks: the run asks, saying it has windows left
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2, midRun: true }]);
    seen(h, pool(h, 6), { step: 1, groups: 0 });
    expect(h.state.run.windowsOpened).toBe(2);
    expect(h.takeDispatches()).toHaveLength(2); // the next window's 2 groups fill the batch
    expect(h.state.run.totals.groupsToppedUp ?? 0).toBe(0);
    h.advance(TOP_UP_RETRY_MS + 1);
    seen(h, pool(h, 6));
    expect(asksOf(h)).toHaveLength(1);
  });

  it("the last window's ask says the run has no windows left (the object may grant it while other runs share the server)", () => {
    const h = firstWindowLanded(1);
    seen(h, pool(h, 4));
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2 }]);
  });

  it("mid-run, an ask still awaiting its answer opens no window: the run waits for the object's grant or refusal", () => {
    const h = firstWindowLanded(3);
    seen(h, pool(h, 6));
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2, midRun: true }]);
    h.advance(500);
    seen(h, pool(h, 6));
    expect(h.state.run.windowsOpened).toBe(1);
    expect(h.takeDispatches()).toEqual([]);
  });

  it("a refusal for an earlier batch does not stand for the next: the run asks again for the batch its next window left short", () => {
    const h = firstWindowLanded(3);
    seen(h, pool(h, 4)); // step 1 lacks 2: asked mid-run, refused, the next window fills it
    seen(h, pool(h, 4), { step: 1, groups: 0 });
    expect(h.state.run.windowsOpened).toBe(2);
    h.rolling(2); // the batch trained before the second window's episodes were claimed; they land at step 2
    for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 2);
    h.advance(TOP_UP_RETRY_MS + 1);
    seen2(h, poolAt2(h, 4)); // step 2 lacks 2 tasks, nobody else serves it
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2, midRun: true }, { step: 2, groups: 2, midRun: true }]);
    expect(h.state.run.windowsOpened).toBe(2);
  });
});
