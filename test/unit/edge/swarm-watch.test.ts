/**
 * The status watcher's schedule (edge/swarm-server/swarm-watch, issue 11 §3): quick around the edges it expects, the booting pace
 * while BOOTING, slow otherwise, and never more than maxPollsPerMinute polls in any 60 s, whatever it is asked.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_WATCH_TIMING, desiredIntervalMs, freshBucket, nextPollAtMs, spend, type WatchView } from "../../../src/edge/swarm-server/swarm-watch.ts";
import { ENGINE } from "../../../src/protocol/index.ts";

const T = DEFAULT_WATCH_TIMING;
const view = (o: Partial<WatchView> = {}): WatchView => ({ engineStatus: ENGINE.ROLLING, changedAtMs: 0, expectEdgeUntilMs: null, booting: false, ...o });
const NOW = 1_000_000;

describe("the watcher's pace", () => {
  it("is slow mid-batch: ROLLING, no recent change, no run expecting an edge", () => {
    expect(desiredIntervalMs(view(), T, NOW)).toBe(T.slowMs);
  });

  it("is quick while ROLLING_POST or WEIGHT_SYNCING (ROLLING follows), after a change, and while a run expects an edge", () => {
    expect(desiredIntervalMs(view({ engineStatus: ENGINE.ROLLING_POST }), T, NOW)).toBe(T.quickMs);
    expect(desiredIntervalMs(view({ engineStatus: ENGINE.WEIGHT_SYNCING }), T, NOW)).toBe(T.quickMs);
    expect(desiredIntervalMs(view({ changedAtMs: NOW - T.edgeBurstMs + 1 }), T, NOW)).toBe(T.quickMs);
    expect(desiredIntervalMs(view({ changedAtMs: NOW - T.edgeBurstMs }), T, NOW)).toBe(T.slowMs);
    expect(desiredIntervalMs(view({ expectEdgeUntilMs: NOW + 1 }), T, NOW)).toBe(T.quickMs);
    expect(desiredIntervalMs(view({ expectEdgeUntilMs: NOW }), T, NOW)).toBe(T.slowMs);
  });

  it("takes the booting pace while BOOTING (a real boot takes minutes)", () => {
    expect(desiredIntervalMs(view({ engineStatus: ENGINE.BOOTING }), T, NOW)).toBe(T.bootingMs);
    expect(desiredIntervalMs(view({ engineStatus: ENGINE.OFFLINE, booting: true }), T, NOW)).toBe(T.bootingMs);
  });
});

describe("the poll bound", () => {
  it("admits at most maxPollsPerMinute polls in any 60 s window while an edge is expected the whole time", () => {
    const v = view({ engineStatus: ENGINE.WEIGHT_SYNCING });
    let bucket = freshBucket(T, 0);
    const polls: number[] = [];
    let at = 0;
    while (at < 5 * 60_000) {
      bucket = spend(bucket, T, at);
      polls.push(at);
      at = nextPollAtMs(v, bucket, T, at);
    }
    let most = 0;
    for (let i = 0; i < polls.length; i++) {
      const inWindow = polls.filter((p) => p >= polls[i]! && p < polls[i]! + 60_000).length;
      most = Math.max(most, inWindow);
    }
    expect(most).toBeLessThanOrEqual(T.maxPollsPerMinute);
    // the first burst goes at the quick pace
    expect(polls.slice(0, T.burst)).toEqual(Array.from({ length: T.burst }, (_, i) => i * T.quickMs));
  });

  it("never schedules a poll earlier than the pace asks", () => {
    const bucket = freshBucket(T, NOW);
    expect(nextPollAtMs(view(), bucket, T, NOW)).toBe(NOW + T.slowMs);
  });

  it("refuses to spend a token that is not there", () => {
    let bucket = freshBucket({ ...T, burst: 1 }, 0);
    bucket = spend(bucket, { ...T, burst: 1 }, 0);
    expect(() => spend(bucket, { ...T, burst: 1 }, 0)).toThrow(/poll budget exhausted/);
  });
});

describe("the pace by what the engine can do next (issue 23)", () => {
  it("waits for an edge whose time is known from the last time at the paced interval, quick from leadMs before it", () => {
    const syncing = (expectedChangeAtMs: number | null) => view({ engineStatus: ENGINE.WEIGHT_SYNCING, changedAtMs: NOW, expectedChangeAtMs });
    // the last weight sync took 5 s: paced (at most pacedMaxMs) until 1 s before its end, then quick
    expect(desiredIntervalMs(syncing(NOW + 5_000), T, NOW)).toBe(T.pacedMaxMs);
    expect(desiredIntervalMs(syncing(NOW + 5_000), T, NOW + 2_500)).toBe(1_500);
    expect(desiredIntervalMs(syncing(NOW + 5_000), T, NOW + 4_000 - T.quickMs)).toBe(T.quickMs);
    expect(desiredIntervalMs(syncing(NOW + 5_000), T, NOW + 6_000)).toBe(T.quickMs); // late: quick until it comes
    expect(desiredIntervalMs(syncing(null), T, NOW)).toBe(T.quickMs); // never seen end: quick
  });

  it("a run expecting the edge keeps the quick pace, whatever the last time said", () => {
    expect(desiredIntervalMs(view({ changedAtMs: NOW, expectedChangeAtMs: NOW + 4_000, expectEdgeUntilMs: NOW + 60_000 }), T, NOW)).toBe(T.quickMs);
  });

  it("fewer polls over one 9 s cycle of the issue's shape (rollout 4 s, post 0.3 s, sync 5 s) once the durations are known", () => {
    const phases: Array<[string, number]> = [[ENGINE.ROLLING, 4_000], [ENGINE.ROLLING_POST, 300], [ENGINE.WEIGHT_SYNCING, 5_000]];
    const count = (known: boolean) => {
      let polls = 0;
      let start = 0;
      for (const [status, ms] of phases) {
        let at = start;
        while (at < start + ms) {
          polls++;
          at += desiredIntervalMs(view({ engineStatus: status, changedAtMs: start, expectedChangeAtMs: known ? start + ms : null }), T, at);
        }
        start += ms;
      }
      return polls;
    };
    expect(count(true)).toBeLessThan(count(false) / 2);
  });
});
