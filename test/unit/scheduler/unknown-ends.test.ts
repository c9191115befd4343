/**
 * Ends whose outcome is unknown (scheduler/unknown-ends, issue 25): resolved from the server's own record within
 * seconds — the pool's completed episodes, its running episodes, the next status — never from a resend's "not
 * rolling" alone, and only a proven non-acceptance runs the repeat again. A stop waits a bounded time for them.
 */
import { describe, expect, it } from "vitest";
import type { EpisodeSettle, FinishRun, PoolSeen, SettleEnds } from "../../../src/scheduler/index.ts";
import { POOL_LAG_MS, STOP_UNKNOWN_GRACE_MS, UNKNOWN_RECHECK_MS } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

const uuidOf = (ref: { episodeKey: string; attempt: number }) => `uuid-${ref.episodeKey}-${ref.attempt}`;
const settlesOf = (h: Harness): EpisodeSettle[] => h.commands.filter((c): c is SettleEnds => c.type === "settleEnds").flatMap((c) => c.episodes);
const resendsOf = (h: Harness) => h.commands.filter((c) => c.type === "resolveOutbox").length;
const seen = (h: Harness, engineStatus: string, globalStep: number | null, pool?: PoolSeen) => h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus, globalStep, ...(pool ? { pool } : {}) });
const pool = (globalStep: number, completed: string[], running: string[]): PoolSeen => ({
  globalStep, completedTasks: 0, completedTaskTarget: 1, episodeUuids: completed, taskEpisodes: {}, runningTaskIds: Object.fromEntries(running.map((u) => [u, "t"])),
});

/** One train episode claimed at step 1 whose end is recorded and then reported unknown. */
function unknownEnd(reached: boolean) {
  const h = new Harness(specInput({ batchSize: 1, numRepeat: 1, maxParallel: 1, maxSteps: 1 }));
  h.start();
  h.rolling(1);
  const [d] = h.takeDispatches();
  h.claim(d!, 1);
  h.outcome(d!, { kind: "end", reward: 1 });
  const { ack } = h.apply({ type: "episodeReported", episodeKey: d!.episodeKey, attempt: d!.attempt, result: "unknown", reached });
  return { h, d: d!, ack };
}

/** The DO's side of a settle: report it through the loop, as edge/run/command-runner does. */
function carryOutSettles(h: Harness, from: number): void {
  for (const s of settlesOf(h).slice(from)) h.apply({ type: "episodeReported", episodeKey: s.episodeKey, attempt: s.attempt, result: s.result, reward: s.reward, ...(s.cause ? { cause: s.cause } : {}) });
}

describe("an end whose outcome is unknown", () => {
  it("stays reporting (the attempt open), is sent again within seconds, and is never re-run for a resend's 'not rolling'", () => {
    const { h, d, ack } = unknownEnd(true);
    expect(ack).toEqual({ status: "applied" });
    expect(h.row(d.episodeKey)).toMatchObject({ status: "reporting", attempt: 1, endUnknown: { reached: true } });
    h.advance(UNKNOWN_RECHECK_MS);
    expect(resendsOf(h)).toBe(1);
    expect(h.state.run.totals.endsUnresolved).toBe(1);
  });

  it("the batch closed (WEIGHT_SYNCING at its step) after a send that reached the server: counted accepted, once, and the run finishes trained", () => {
    const { h, d } = unknownEnd(true);
    seen(h, "ENGINE.ROLLING_POST", 1);
    seen(h, "ENGINE.WEIGHT_SYNCING", 1);
    expect(settlesOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: 1, result: "ended", reward: 1 }]);
    seen(h, "ENGINE.WEIGHT_SYNCING", 1); // a second observation settles nothing more while the report is awaited
    expect(settlesOf(h)).toHaveLength(1);
    carryOutSettles(h, 0);
    expect(h.state.run.totals).toMatchObject({ episodesEnded: 1, endsInferred: 1, attemptsFailed: 0 });
    h.rolling(2);
    const summary = h.commands.find((c): c is FinishRun => c.type === "finishRun")?.summary;
    expect(summary).toMatchObject({ verdict: "trained", untrainedRewards: 0 });
  });

  it("the pool lists it as completed: ended at once, from the pool (also when its consumer never reported)", () => {
    const { h, d } = unknownEnd(false);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [uuidOf(d)], []));
    expect(settlesOf(h)).toEqual([expect.objectContaining({ result: "ended" })]);
  });

  it("the pool shows the server still holds it: sent again; then gone without completing (reverted) after the pool's lag: lost, and only then the repeat runs again", () => {
    const { h, d } = unknownEnd(true);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], [uuidOf(d)]));
    expect(settlesOf(h)).toEqual([]);
    h.advance(UNKNOWN_RECHECK_MS);
    expect(resendsOf(h)).toBe(1);
    h.nowMs += POOL_LAG_MS;
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], []));
    expect(settlesOf(h)).toEqual([expect.objectContaining({ result: "lost", cause: "lost:reverted" })]);
    carryOutSettles(h, 0);
    expect(h.row(d.episodeKey)).toMatchObject({ status: "dispatched", attempt: 2, lastCause: "lost:reverted" });
  });

  it("absent from the pool right after the report is not proof (the engine's push may lag): nothing settled", () => {
    const { h } = unknownEnd(true);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], []));
    expect(settlesOf(h)).toEqual([]);
  });

  it("a send that may never have reached the server, whose batch then closed without a record: left unknown, neither counted nor re-run", () => {
    const { h, d } = unknownEnd(false);
    seen(h, "ENGINE.WEIGHT_SYNCING", 1);
    expect(settlesOf(h)).toEqual([]);
    expect(h.state.run.totals).toMatchObject({ endsUnknown: 1, episodesEnded: 0 });
    expect(h.row(d.episodeKey)).toBeUndefined(); // its group resolved (abandoned): not run again
    expect(h.closedAttempts.map((c) => c.cause)).toEqual(["end_unknown"]);
  });

  it("an engine restart: its batch is gone either way, so the repeat runs again", () => {
    const { h } = unknownEnd(true);
    seen(h, "ENGINE.OFFLINE", 0);
    expect(settlesOf(h)).toEqual([expect.objectContaining({ result: "lost", cause: "lost:engineRestarted" })]);
  });

  it("a stop during an unresolved end finishes within the stop grace and says what it left unknown", () => {
    const { h } = unknownEnd(false);
    h.apply({ type: "stopRequested" });
    expect(h.state.run.phase).toBe("draining");
    for (let t = 0; t < STOP_UNKNOWN_GRACE_MS + UNKNOWN_RECHECK_MS; t += UNKNOWN_RECHECK_MS) h.advance(UNKNOWN_RECHECK_MS);
    expect(h.state.run.phase).toBe("finished");
    expect(h.state.run.totals.endsUnknown).toBe(1);
  });
});
