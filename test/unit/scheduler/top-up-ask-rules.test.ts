/**
 * The rules of a run's top-up ask (scheduler/top-up-ask) that decide how many groups a shared batch receives, stated
 * one by one through `decide`: a grant opens no more than the batch lacks, applies once, and only to the batch it
 * was asked for; the run tells its server object how many of its groups are not claimed yet (and that it has none
 * left, once); eval runs have no batches to plan.
 */
import { describe, expect, it } from "vitest";
import type { PollEngineStatus, } from "../../../src/scheduler/index.ts";
import { TOP_UP_RETRY_MS } from "../../../src/scheduler/top-up-ask.ts";
import { asksOf, landed, pool, seen, } from "./top-up-fixtures.ts";
import { Harness, specInput } from "./harness.ts";

const pollsOf = (h: Harness) => h.commands.filter((c): c is PollEngineStatus => c.type === "pollEngineStatus");

describe("a grant", () => {
  it("opens no more groups than the batch still lacks, whatever the object granted", () => {
    const h = landed(3); // lacks 1 task
    expect(asksOf(h)).toEqual([{ step: 1, groups: 1 }]);
    seen(h, pool(h, 3), { step: 1, groups: 2 });
    expect(h.takeDispatches()).toHaveLength(1);
    expect(h.state.run.totals.groupsToppedUp).toBe(1);
  });

  it("for another step than the one asked about opens nothing; the answer for the asked step still does", () => {
    const h = landed(3);
    seen(h, pool(h, 3), { step: 2, groups: 1 });
    expect(h.takeDispatches()).toEqual([]);
    seen(h, pool(h, 3), { step: 1, groups: 1 });
    expect(h.takeDispatches()).toHaveLength(1);
  });

  it("applies once: the same answer seen again (a second pull's copy) opens nothing more", () => {
    const h = landed(4); // lacks 2, the window may top up 2
    seen(h, pool(h, 4), { step: 1, groups: 1 });
    expect(h.takeDispatches()).toHaveLength(1);
    seen(h, pool(h, 4), { step: 1, groups: 1 });
    expect(h.takeDispatches()).toEqual([]);
    expect(h.state.run.totals.groupsToppedUp).toBe(1);
  });

  it("asks for at most what the batch lacks and the window may still top up", () => {
    expect(asksOf(landed(3))).toEqual([{ step: 1, groups: 1 }]);
    expect(asksOf(landed(9))).toEqual([{ step: 1, groups: 2 }]); // lacks 7; one batch's worth (2) per window
  });
});

describe("asking again", () => {
  it("a refused ask is asked again TOP_UP_RETRY_MS after it was made, with a pull made then (not at the next regular poll)", () => {
    const h = landed(3);
    seen(h, pool(h, 3), { step: 1, groups: 0 });
    h.advance(TOP_UP_RETRY_MS - 1);
    expect(asksOf(h)).toHaveLength(1);
    const polls = pollsOf(h).length;
    h.advance(1);
    expect(asksOf(h)).toHaveLength(2);
    expect(pollsOf(h).length).toBe(polls + 1);
  });

  it("a grant that arrives after the run was stopped opens nothing", () => {
    const h = landed(3);
    h.apply({ type: "stopRequested" });
    seen(h, pool(h, 3), { step: 1, groups: 1 });
    expect(h.takeDispatches()).toEqual([]);
    expect(h.state.run.totals.groupsToppedUp ?? 0).toBe(0);
  });
});

describe("what the run tells its server object with each pull", () => {
  it("the number of its groups with no claimed episode yet, then 0 once when it has none left, then nothing", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 2, maxParallel: 4, maxSteps: 1 }));
    h.answerTopUps = false;
    h.start();
    h.rolling(1);
    const sent = h.takeDispatches(); // 2 groups × 2 repeats
    expect(sent).toHaveLength(4);
    const poll = () => {
      const from = pollsOf(h).length;
      h.advance(60_000);
      return pollsOf(h).slice(from);
    };
    expect(poll()[0]?.plan).toEqual({ swarm: "default", pendingGroups: 2 });
    h.claim(sent[0]!, 1);
    h.claim(sent[1]!, 1);
    h.claim(sent[2]!, 1); // one group fully claimed, the other half: it still has an unclaimed episode
    const groupsLeft = new Set(sent.slice(3).map((d) => d.episodeKey.split("#")[0])).size;
    expect(poll()[0]?.plan).toEqual({ swarm: "default", pendingGroups: groupsLeft });
    h.claim(sent[3]!, 1);
    expect(poll()[0]?.plan).toEqual({ swarm: "default", pendingGroups: 0 });
    const later = poll();
    expect(later.length).toBeGreaterThan(0);
    for (const p of later) expect(p.plan).toBeUndefined();
  });

  it("an eval run has no batches to plan: its pulls carry no plan", () => {
    const h = new Harness(specInput({ episodeType: "eval", batchSize: 1, numRepeat: 1, maxParallel: 2 }), { gsm8k: 4 });
    h.start();
    h.rolling(1);
    expect(h.takeDispatches().length).toBeGreaterThan(0);
    h.advance(60_000);
    expect(pollsOf(h).length).toBeGreaterThan(0);
    for (const p of pollsOf(h)) expect(p.plan).toBeUndefined();
  });
});
