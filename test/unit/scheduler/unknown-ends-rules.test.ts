/**
 * The rules of an end whose outcome is unknown (scheduler/unknown-ends) that decide whether a reward counts, runs
 * again or is left unknown, stated one by one: a second unknown report is the same end (counted once, its first time
 * kept, a send that reached the server stays known to have reached it); the pool's absence is proof only from
 * POOL_LAG_MS on, at the claim's step, and only while the engine collects that batch; once the pool showed the server
 * let the episode go, no resend and no inference from a closed batch; the stop grace runs from the later of the stop
 * and the unknown report. Behaviour through `decide` (the harness), not the module's internals.
 */
import { describe, expect, it } from "vitest";
import type { EpisodeSettle, PoolSeen, PollEngineStatus, SettleEnds } from "../../../src/scheduler/index.ts";
import { POOL_LAG_MS, STOP_UNKNOWN_GRACE_MS, UNKNOWN_RECHECK_MS } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

const uuidOf = (ref: { episodeKey: string; attempt: number }) => `uuid-${ref.episodeKey}-${ref.attempt}`;
const settlesOf = (h: Harness): EpisodeSettle[] => h.commands.filter((c): c is SettleEnds => c.type === "settleEnds").flatMap((c) => c.episodes);
const resendsOf = (h: Harness) => h.commands.filter((c) => c.type === "resolveOutbox").length;
const polls = (h: Harness) => h.commands.filter((c): c is PollEngineStatus => c.type === "pollEngineStatus");
const seen = (h: Harness, engineStatus: string, globalStep: number | null, pool?: PoolSeen) =>
  h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus, globalStep, ...(pool ? { pool } : {}) });
const pool = (globalStep: number | null, completed: string[], running: string[]): PoolSeen => ({
  globalStep, completedTasks: 0, completedTaskTarget: 1, episodeUuids: completed, taskEpisodes: {}, runningTaskIds: Object.fromEntries(running.map((u) => [u, "t"])),
});

/** One train episode claimed at step 1 whose end is recorded (not yet reported). */
function recordedEnd() {
  const h = new Harness(specInput({ batchSize: 1, numRepeat: 1, maxParallel: 1, maxSteps: 1 }));
  h.start();
  h.rolling(1);
  const [d] = h.takeDispatches();
  h.claim(d!, 1);
  h.outcome(d!, { kind: "end", reward: 0.5 });
  const unknown = (reached: boolean) => h.apply({ type: "episodeReported", episodeKey: d!.episodeKey, attempt: d!.attempt, result: "unknown", reached });
  return { h, d: d!, unknown };
}

describe("the same unknown end reported again", () => {
  it("is counted once as unresolved, keeps the time it was first reported, and stays 'reached' once a send reached the server", () => {
    const { h, d, unknown } = recordedEnd();
    unknown(true);
    const since = h.row(d.episodeKey)!.endUnknown!.sinceMs;
    h.nowMs += 500;
    unknown(false); // the resend's answer was lost too, and this one may not have reached
    expect(h.state.run.totals.endsUnresolved).toBe(1);
    expect(h.row(d.episodeKey)!.endUnknown).toMatchObject({ sinceMs: since, reached: true });
    // the first send reached the server, so a batch that closed without a pool verdict trained it: counted, once
    seen(h, "ENGINE.WEIGHT_SYNCING", 1);
    expect(settlesOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: 1, result: "ended", reward: 0.5 }]);
  });

  it("a later send that reached makes the end one that reached (the batch's close then counts it accepted)", () => {
    const { h, unknown } = recordedEnd();
    unknown(false);
    unknown(true);
    seen(h, "ENGINE.WEIGHT_SYNCING", 1);
    expect(settlesOf(h)).toEqual([expect.objectContaining({ result: "ended" })]);
    expect(h.state.run.totals.endsInferred).toBe(1);
  });

  it("an unknown report for an episode with no recorded end to resolve is stale and changes nothing", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 1, maxParallel: 1, maxSteps: 1 }));
    h.start();
    h.rolling(1);
    const [d] = h.takeDispatches();
    h.claim(d!, 1); // running: no outcome recorded yet
    const before = h.state;
    const { ack } = h.apply({ type: "episodeReported", episodeKey: d!.episodeKey, attempt: d!.attempt, result: "unknown", reached: true });
    expect(ack).toMatchObject({ status: "stale" });
    expect(h.row(d!.episodeKey)).toEqual(before.episodes.get(d!.episodeKey));
    expect(h.state.run.totals.endsUnresolved ?? 0).toBe(0);
  });
});

describe("the pool as evidence", () => {
  it("absence proves the server let it go from POOL_LAG_MS after the unknown report on, not a millisecond before", () => {
    const { h, d, unknown } = recordedEnd();
    unknown(true);
    h.nowMs += POOL_LAG_MS - 1;
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], []));
    expect(settlesOf(h)).toEqual([]);
    h.nowMs += 1;
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], []));
    expect(settlesOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: 1, result: "lost", cause: "lost:reverted", reward: 0.5 }]);
  });

  it("a pool of another step is no evidence either way: neither accepted, nor lost, nor closed", () => {
    const { h, d, unknown } = recordedEnd();
    unknown(true);
    h.nowMs += POOL_LAG_MS * 5;
    seen(h, "ENGINE.ROLLING", 1, pool(0, [uuidOf(d)], [])); // the pool still describes an older batch
    seen(h, "ENGINE.ROLLING", 1, pool(0, [], []));
    expect(settlesOf(h)).toEqual([]);
    expect(h.row(d.episodeKey)).toMatchObject({ status: "reporting" });
  });

  it("is read while the engine still collects the batch (ROLLING_POST): the claim's uuid listed there is accepted", () => {
    const { h, d, unknown } = recordedEnd();
    unknown(false);
    seen(h, "ENGINE.ROLLING_POST", 1, pool(1, [uuidOf(d)], []));
    expect(settlesOf(h)).toEqual([expect.objectContaining({ result: "ended" })]);
  });

  it("while the pool shows the server still holds the episode, the end is sent again at each recheck", () => {
    const { h, d, unknown } = recordedEnd();
    unknown(true);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], [uuidOf(d)]));
    h.advance(UNKNOWN_RECHECK_MS);
    expect(resendsOf(h)).toBe(1);
  });

  it("once the pool showed the server let it go, the end is not sent again (it could only be refused): the proof is awaited", () => {
    const { h, d, unknown } = recordedEnd();
    unknown(true);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], [uuidOf(d)])); // held
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], [])); // then gone, before the lag: not proof yet
    h.advance(UNKNOWN_RECHECK_MS);
    expect(resendsOf(h)).toBe(0);
  });

  it("a batch that closed after the pool showed the episode gone is no proof of acceptance, even for a send that reached: left unknown", () => {
    const { h, d, unknown } = recordedEnd();
    unknown(true);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], [uuidOf(d)])); // held
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], [])); // then gone, within the lag
    seen(h, "ENGINE.WEIGHT_SYNCING", 1);
    expect(settlesOf(h)).toEqual([]);
    expect(h.state.run.totals).toMatchObject({ endsUnknown: 1, episodesEnded: 0 });
    expect(h.row(d.episodeKey)).toBeUndefined();
  });

  it("absent at the first sighting, inside the lag, is no evidence: the end is still sent again and a later absence after the lag proves it let go", () => {
    const { h, d, unknown } = recordedEnd();
    unknown(true);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], [])); // neither running nor (yet) completed: an accepted end looks like this
    expect(h.row(d.episodeKey)!.endUnknown!.lastSeen ?? null).toBeNull();
    h.advance(UNKNOWN_RECHECK_MS);
    expect(resendsOf(h)).toBe(1); // a resend's "not found" says delivered, "not in claimed status" says reverted
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], []));
    expect(settlesOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: 1, result: "lost", cause: "lost:reverted", reward: 0.5 }]);
  });

  it("absent at the first sighting, inside the lag, then the batch closed: a send that reached is counted accepted (it may be the end that closed it)", () => {
    const { h, d, unknown } = recordedEnd();
    unknown(true);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], []));
    seen(h, "ENGINE.WEIGHT_SYNCING", 1);
    expect(settlesOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: 1, result: "ended", reward: 0.5 }]);
    expect(h.state.run.totals.endsInferred).toBe(1);
  });

  it("absent at the first sighting, inside the lag, then the batch closed: a send not known to have reached stays unknown (neither counted nor run again)", () => {
    const { h, d, unknown } = recordedEnd();
    unknown(false);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], []));
    seen(h, "ENGINE.WEIGHT_SYNCING", 1);
    expect(settlesOf(h)).toEqual([]);
    expect(h.state.run.totals).toMatchObject({ endsUnknown: 1, episodesEnded: 0 });
    expect(h.row(d.episodeKey)).toBeUndefined();
  });

  it("a batch still at its step and collecting (ROLLING_POST, no pool) is not closed: nothing inferred yet", () => {
    const { h, unknown } = recordedEnd();
    unknown(true);
    seen(h, "ENGINE.ROLLING_POST", 1);
    expect(settlesOf(h)).toEqual([]);
    expect(h.state.run.totals.endsInferred ?? 0).toBe(0);
  });

  it("every status pull reads the pool while an end is unresolved, at least every recheck", () => {
    const { h, unknown } = recordedEnd();
    unknown(true);
    const from = polls(h).length;
    h.advance(UNKNOWN_RECHECK_MS);
    const after = polls(h).slice(from);
    expect(after.length).toBeGreaterThan(0);
    for (const p of after) expect(p.withPool).toEqual(["default"]);
  });
});

describe("a stop while an end is unresolved", () => {
  it("waits the stop grace from the unknown report when that came after the stop", () => {
    const { h, d, unknown } = recordedEnd();
    h.apply({ type: "stopRequested" });
    h.advance(STOP_UNKNOWN_GRACE_MS / 2);
    unknown(false);
    const since = h.nowMs;
    while (h.nowMs + UNKNOWN_RECHECK_MS < since + STOP_UNKNOWN_GRACE_MS) h.advance(UNKNOWN_RECHECK_MS);
    expect(h.row(d.episodeKey)).toMatchObject({ status: "reporting" }); // the grace runs from the report, not the stop
    expect(h.state.run.phase).toBe("draining");
    h.advance(since + STOP_UNKNOWN_GRACE_MS - h.nowMs);
    expect(h.state.run.totals.endsUnknown).toBe(1);
    expect(h.state.run.phase).toBe("finished");
  });
});
