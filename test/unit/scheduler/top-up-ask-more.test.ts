/**
 * More rules of a run's top-up ask (scheduler/top-up-ask), through `decide`: a batch is shared as soon as another
 * client serves a task of it (a running claim is enough); a window's room shrinks by what it already topped up; an
 * answer applies once even after its groups ended; an ask goes out with one pull only; the groups the run tells its
 * object include those queued again after a failed claim; a finishing run waits exactly TOP_UP_STARVED_MS.
 */
import { describe, expect, it } from "vitest";
import type { PollEngineStatus } from "../../../src/scheduler/index.ts";
import { TOP_UP_RETRY_MS, TOP_UP_STARVED_MS } from "../../../src/scheduler/top-up-ask.ts";
import { asksOf, landed, pool, seen, waitingForOthers } from "./top-up-fixtures.ts";
import { Harness, specInput } from "./harness.ts";

const pollsOf = (h: Harness) => h.commands.filter((c): c is PollEngineStatus => c.type === "pollEngineStatus");

describe("who feeds the batch", () => {
  it("mid-run, another client's running claim on a task of the batch (no completed episode of it yet) makes the batch shared: no top-up", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 1, maxParallel: 4, maxSteps: 3 }));
    h.answerTopUps = false;
    h.start();
    h.rolling(1);
    for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 1);
    seen(h, { ...pool(h, 4), runningTaskIds: { "foreign-running": "their-task" } });
    expect(h.state.batches["0:1"]).toMatchObject({ foreignEpisodes: 0 });
    expect(asksOf(h)).toEqual([]);
    expect(h.state.run.windowsOpened).toBe(2); // the next window fills it
  });
});

describe("how much a window may still top up", () => {
  it("a window's room shrinks by the groups it already topped up: the next ask is for what is left of one batch's worth", () => {
    const h = landed(6); // lacks 4; one batch's worth (2) per window
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2 }]);
    seen(h, pool(h, 6), { step: 1, groups: 1 });
    for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 1);
    seen(h, pool(h, 6));
    h.advance(TOP_UP_RETRY_MS);
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2 }, { step: 1, groups: 1 }]);
  });

  it("an answer that arrives after the engine trained the batch asked about opens nothing", () => {
    const h = landed(3);
    expect(asksOf(h)).toEqual([{ step: 1, groups: 1 }]);
    h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 2 }); // batch 1 trained
    expect(h.state.batches["0:1"]!.state).toBe("closed");
    h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 2, topUpGrant: { step: 1, groups: 1 } });
    expect(h.takeDispatches()).toEqual([]);
    expect(h.state.run.totals.groupsToppedUp ?? 0).toBe(0);
  });

  it("an answer applies once, also after the groups it opened have ended", () => {
    const h = landed(5); // lacks 3
    seen(h, pool(h, 5), { step: 1, groups: 1 });
    for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 1);
    expect(h.state.run.totals.groupsToppedUp).toBe(1);
    seen(h, pool(h, 5), { step: 1, groups: 1 }); // a later pull's copy of the same answer
    expect(h.takeDispatches()).toEqual([]);
    expect(h.state.run.totals.groupsToppedUp).toBe(1);
  });
});

describe("mid-run", () => {
  it("a batch only this run feeds that lacks tasks is topped up with the grant while the run is still running", () => {
    const h = landed(3, 3); // 3 steps: the run is running, not finishing
    expect(h.state.run.phase).toBe("running");
    expect(asksOf(h)).toEqual([{ step: 1, groups: 1, midRun: true }]);
    seen(h, pool(h, 3), { step: 1, groups: 1 });
    expect(h.takeDispatches()).toHaveLength(1);
    expect(h.state.run.totals.groupsToppedUp).toBe(1);
  });

  it("once its window's batch's worth is used, a running run asks no more, even as the batch's last feeder (that allowance is for a finishing run)", () => {
    const h = landed(8, 3); // lacks 6
    seen(h, pool(h, 8), { step: 1, groups: 2 });
    for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 1);
    expect(h.state.run.phase).toBe("running");
    seen(h, pool(h, 8)); // nothing of another client running: this run is the last feeder
    h.advance(TOP_UP_RETRY_MS);
    seen(h, pool(h, 8));
    expect(asksOf(h)).toEqual([{ step: 1, groups: 2, midRun: true }]);
  });
});

describe("what each pull carries", () => {
  it("an ask goes out with one pull only; an unanswered ask is not sent again before TOP_UP_RETRY_MS", () => {
    // landed(3) with a status pull every 500 ms, so that pulls are made while the ask waits for its answer
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 1, maxParallel: 4, maxSteps: 1, tuning: { statusPollRollingMs: 500, statusPollWaitingMs: 500 } }));
    h.answerTopUps = false;
    h.start();
    h.rolling(1);
    for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 1);
    seen(h, pool(h, 3));
    expect(asksOf(h)).toEqual([{ step: 1, groups: 1 }]);
    const from = pollsOf(h).length;
    for (let t = 0; t < TOP_UP_RETRY_MS - 100; t += 100) h.advance(100);
    expect(pollsOf(h).length).toBeGreaterThan(from); // pulls were made meanwhile
    expect(asksOf(h)).toHaveLength(1);
  });

  it("a run that never had to ask records no ask", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 1, maxParallel: 4, maxSteps: 3 }));
    h.answerTopUps = false;
    h.start();
    h.rolling(1);
    h.advance(60_000);
    expect(pollsOf(h).length).toBeGreaterThan(1);
    expect(h.state.run.topUpAsk ?? null).toBeNull();
  });

  it("a group queued again after a failed claim still counts among the groups not claimed yet", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 1, maxParallel: 1, maxSteps: 3 }));
    h.answerTopUps = false;
    h.start();
    h.rolling(1);
    const [d] = h.takeDispatches();
    h.apply({ type: "claimFailed", episodeKey: d!.episodeKey, attempt: 1, dispatchId: d!.dispatchId, kind: "syncing" });
    expect(h.row(d!.episodeKey)?.status).toBe("queued");
    const from = pollsOf(h).length;
    h.advance(1_000);
    const plans = pollsOf(h).slice(from).map((p) => p.plan);
    expect(plans.length).toBeGreaterThan(0);
    expect(plans[0]).toMatchObject({ pendingGroups: 1 });
  });
});

describe("a finishing run whose top-up room is used up", () => {
  it("waits exactly TOP_UP_STARVED_MS from the moment its room ran out, then finishes with the rewards untrained", () => {
    const h = waitingForOthers(); // lacks 4: 2 in the window's room, then none (another client still serves a task)
    const waitFrom = h.state.run.topUpAsk!;
    expect(waitFrom).toMatchObject({ granted: -1, step: 1 });
    h.nowMs = waitFrom.askedAtMs + TOP_UP_STARVED_MS - 1;
    h.apply({ type: "tick" });
    expect(h.state.run.phase).toBe("finishing");
    h.nowMs += 1;
    h.apply({ type: "tick" });
    expect(h.state.run.phase).toBe("finished");
  });

  it("a batch other clients completed meanwhile is not starved: the run finishes trained", () => {
    const h = waitingForOthers();
    expect(h.state.run.topUpAsk).toMatchObject({ granted: -1 });
    // the other client's tasks completed the batch: 6 tasks, 2 of them theirs
    seen(h, pool(h, 6, { t1: ["o-1"], t2: ["o-2"] }));
    h.advance(TOP_UP_STARVED_MS);
    expect(h.state.run.untrainedRewards ?? 0).toBe(0);
  });
});

describe("a finishing run whose batch closes while it waits", () => {
  it("is never starved while the engine drains and trains that batch, however long the weight sync: its rewards count trained", () => {
    const h = waitingForOthers();
    expect(h.state.run.topUpAsk).toMatchObject({ granted: -1, step: 1 });
    // the other client completes the batch; the engine drains it, then syncs for longer than the starvation wait
    seen(h, pool(h, 6, { t1: ["o-1"], t2: ["o-2"] }));
    h.engine("ENGINE.ROLLING_POST", 1);
    h.engine("ENGINE.WEIGHT_SYNCING", 1);
    for (let t = 0; t < 2 * TOP_UP_STARVED_MS; t += 10_000) h.advance(10_000);
    expect(h.state.run.phase).toBe("finishing");
    h.rolling(2);
    expect(h.state.run.phase).toBe("finished");
    expect(h.state.run.untrainedRewards ?? 0).toBe(0);
  });
});

describe("a grant for a batch the engine no longer collects", () => {
  it("opens nothing when the engine moved past the asked step before the answer came", () => {
    const h = landed(3); // lacks 1 task: the run asked for step 1, unanswered
    expect(asksOf(h)).toEqual([{ step: 1, groups: 1 }]);
    // others filled step 1; the engine collects step 2, where the run has no rewards; the late answer grants step 1
    h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 2, topUpGrant: { step: 1, groups: 1 } });
    expect(h.takeDispatches()).toEqual([]);
    expect(h.state.run.totals.groupsToppedUp ?? 0).toBe(0);
  });
});

describe("who feeds the batch, from a pool without per-task details", () => {
  it("another client's episode of a task not complete yet makes the batch shared: no top-up mid-run", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 2, maxParallel: 4, maxSteps: 3 }));
    h.answerTopUps = false;
    h.start();
    h.rolling(1);
    for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 1);
    const ours = [...h.state.batches["0:1"]!.episodes.keys()];
    expect(ours).toHaveLength(4); // our 2 tasks × 2 repeats
    seen(h, { globalStep: 1, episodeUuids: [...ours, "foreign-1"], completedTasks: 2, completedTaskTarget: 4 });
    expect(h.state.batches["0:1"]).toMatchObject({ foreignEpisodes: 1, poolForeignTasks: 0 });
    expect(asksOf(h)).toEqual([]);
    expect(h.state.run.windowsOpened).toBe(2);
  });
});
