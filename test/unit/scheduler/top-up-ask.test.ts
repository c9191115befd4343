/**
 * A run's side of one plan per server batch (scheduler/top-up-ask, issue 25): it tops up only with its server object's
 * grant, at most one batch's worth per window (two for a batch it is the last feeder of, once its last window is
 * resolved), fills a shared batch mid-run with its next window, and never waits forever for a batch nobody fills.
 */
import { describe, expect, it } from "vitest";
import { TOP_UP_RETRY_MS, TOP_UP_STARVED_MS } from "../../../src/scheduler/top-up-ask.ts";
import { asksOf, landed, pool, seen, serving, waitingForOthers } from "./top-up-fixtures.ts";
import { Harness, specInput } from "./harness.ts";

describe("top-ups under the server object's grant", () => {
  it("the last window's batch lacks a task: the run asks with its pull and opens only what is granted; a refusal is asked again later", () => {
    const h = landed(3);
    expect(asksOf(h)).toEqual([{ step: 1, groups: 1 }]);
    seen(h, pool(h, 3), { step: 1, groups: 0 }); // another run holds the reservation
    expect(h.takeDispatches()).toEqual([]);
    h.advance(TOP_UP_RETRY_MS / 2);
    expect(asksOf(h)).toHaveLength(1);
    h.advance(TOP_UP_RETRY_MS);
    expect(asksOf(h)).toHaveLength(2);
    seen(h, pool(h, 3), { step: 1, groups: 1 });
    expect(h.takeDispatches()).toHaveLength(1);
    expect(h.state.run.totals.groupsToppedUp).toBe(1);
  });

  it("the last window's batch has no other feeder left: past one batch's worth the run tops it up once more, so it trains", () => {
    const h = landed(5); // needs 3 more tasks, the window may top up 2, nobody else serves a task of the batch
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2 }]);
    seen(h, pool(h, 5), { step: 1, groups: 2 });
    const topUps = h.takeDispatches();
    expect(topUps).toHaveLength(2);
    for (const d of topUps) h.finishEpisode(d, 1, 1);
    seen(h, pool(h, 5));
    expect(h.state.run.phase).toBe("finishing");
    h.advance(TOP_UP_RETRY_MS);
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2 }, { step: 1, groups: 1 }]);
    seen(h, pool(h, 5), { step: 1, groups: 1 });
    const last = h.takeDispatches();
    expect(last).toHaveLength(1);
    for (const d of last) h.finishEpisode(d, 1, 1);
    h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 2 });
    expect(h.state.run.phase).toBe("finished");
    expect(h.state.run.untrainedRewards).toBe(0);
    expect(h.state.run.totals.groupsToppedUp).toBe(3);
  });

  it("two batches' worth per window at most: past it the run waits, then finishes and reports the rewards untrained", () => {
    const h = landed(8); // needs 6 more tasks: 2 in the window's room, 2 more as the last feeder, then none
    seen(h, pool(h, 8), { step: 1, groups: 2 });
    for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 1);
    seen(h, pool(h, 8));
    h.advance(TOP_UP_RETRY_MS);
    seen(h, pool(h, 8), { step: 1, groups: 2 });
    for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 1);
    seen(h, pool(h, 8));
    h.advance(TOP_UP_RETRY_MS);
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2 }, { step: 1, groups: 2 }]);
    expect(h.state.run.totals.groupsToppedUp).toBe(4);
    h.advance(TOP_UP_STARVED_MS);
    expect(h.state.run.phase).toBe("finished");
    expect(h.state.run.untrainedRewards).toBe(6);
  });

  it("another client still serves a task of the batch: past one batch's worth the run leaves the rest to it", () => {
    const h = waitingForOthers();
    seen(h, serving(h));
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2 }]);
    expect(h.state.run.phase).toBe("finishing");
    h.advance(TOP_UP_STARVED_MS);
    expect(h.state.run.phase).toBe("finished");
    expect(h.state.run.untrainedRewards).toBe(4);
  });

  it("mid-run, a batch other clients feed is filled by the next window, not topped up", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 1, maxParallel: 4, maxSteps: 3 }));
    h.answerTopUps = false;
    h.start();
    h.rolling(1);
    for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 1);
    // another client's complete task sits in the batch, whose target is 4
    seen(h, pool(h, 4, { other: ["foreign-1"] }));
    expect(asksOf(h)).toEqual([]);
    expect(h.takeDispatches()).toHaveLength(2); // the next window's 2 groups
    expect(h.state.run.windowsOpened).toBe(2);
  });
});
