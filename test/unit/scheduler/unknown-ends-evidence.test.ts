/**
 * More rules of an end whose outcome is unknown (scheduler/unknown-ends): only a recorded end can be resolved from
 * the server's record (an abort never becomes an end); a multi-server end is not settled from one server's pool; a
 * claim on the run's second server is judged by that server's engine epoch; the pool counts only at the step the
 * engine is at; a batch counts as closed once the engine moved past the claim's step; a resend carries the end as
 * recorded and moves the recheck later; only a stopping run gives up on an unresolved end.
 */
import { describe, expect, it } from "vitest";
import type { EpisodeSettle, PollEngineStatus, PoolSeen, ResolveOutbox, SettleEnds } from "../../../src/scheduler/index.ts";
import { STOP_UNKNOWN_GRACE_MS, UNKNOWN_RECHECK_MS } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

const uuidOf = (ref: { episodeKey: string; attempt: number }) => `uuid-${ref.episodeKey}-${ref.attempt}`;
const settlesOf = (h: Harness): EpisodeSettle[] => h.commands.filter((c): c is SettleEnds => c.type === "settleEnds").flatMap((c) => c.episodes);
const resendsOf = (h: Harness) => h.commands.filter((c): c is ResolveOutbox => c.type === "resolveOutbox").flatMap((c) => c.episodes);
const polls = (h: Harness) => h.commands.filter((c): c is PollEngineStatus => c.type === "pollEngineStatus");
const seen = (h: Harness, engineStatus: string, globalStep: number | null, p?: PoolSeen, swarm = "default") =>
  h.apply({ type: "engineStatusSeen", swarm, engineStatus, globalStep, ...(p ? { pool: p } : {}) });
const pool = (globalStep: number | null, completed: string[], running: string[]): PoolSeen => ({
  globalStep, completedTasks: 0, completedTaskTarget: 1, episodeUuids: completed, taskEpisodes: {}, runningTaskIds: Object.fromEntries(running.map((u) => [u, "t"])),
});

/** One train episode claimed at `step` whose `outcome` is recorded (not yet reported). */
function recorded(outcome: { kind: "end"; reward: number } | { kind: "abort"; cause: string } = { kind: "end", reward: 0.5 }, step: number | null = 1) {
  const h = new Harness(specInput({ batchSize: 1, numRepeat: 1, maxParallel: 1, maxSteps: 3 }));
  h.start();
  h.rolling(1);
  const [d] = h.takeDispatches();
  h.claim(d!, step);
  h.outcome(d!, outcome);
  const unknown = (reached: boolean) => h.apply({ type: "episodeReported", episodeKey: d!.episodeKey, attempt: d!.attempt, result: "unknown", reached });
  return { h, d: d!, unknown };
}

const twoServers = () => {
  const h = new Harness(specInput({
    swarms: [{ name: "policy", url: "http://127.0.0.1:10086" }, { name: "judge", url: "http://127.0.0.1:10087" }],
    batchSize: 1, numRepeat: 1, maxParallel: 1, maxSteps: 3,
  }));
  h.start();
  h.rolling(1);
  const [d] = h.takeDispatches();
  return { h, d: d! };
};

describe("only a recorded end is resolved from the server's record", () => {
  it("an unknown report for a recorded abort is stale: an abort has no end to resolve", () => {
    const { h, d, unknown } = recorded({ kind: "abort", cause: "no_llm_call" });
    const before = h.state;
    expect(unknown(true).ack.status).toBe("stale");
    expect(h.state.episodes).toBe(before.episodes);
    expect(h.state.run.totals.endsUnresolved ?? 0).toBe(0);
    expect(h.row(d.episodeKey)?.endUnknown ?? null).toBeNull();
  });

  it("a recorded abort whose uuid the pool lists as completed is never settled as an end", () => {
    const { h, d } = recorded({ kind: "abort", cause: "no_llm_call" });
    seen(h, "ENGINE.ROLLING", 1, pool(1, [uuidOf(d)], []));
    expect(settlesOf(h)).toEqual([]);
    expect(h.state.run.totals.episodesEnded).toBe(0);
  });

  it("a recorded end the pool lists as completed is settled once, and waits for that report as an end not known to have reached", () => {
    const { h, d } = recorded();
    seen(h, "ENGINE.ROLLING", 1, pool(1, [uuidOf(d)], []));
    expect(settlesOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: 1, result: "ended", reward: 0.5 }]);
    expect(h.row(d.episodeKey)?.endUnknown).toEqual({ sinceMs: h.nowMs, reached: false, settlingAtMs: h.nowMs });
    expect(h.row(d.episodeKey)?.deadlineAtMs).toBe(h.nowMs + UNKNOWN_RECHECK_MS);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [uuidOf(d)], []));
    expect(settlesOf(h)).toHaveLength(1); // settling: not asked twice
  });

  it("a second unknown report keeps what the pool last showed of the episode", () => {
    const { h, d, unknown } = recorded();
    unknown(true);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], [uuidOf(d)]));
    expect(h.row(d.episodeKey)?.endUnknown?.lastSeen).toBe("running");
    unknown(false);
    expect(h.row(d.episodeKey)?.endUnknown?.lastSeen).toBe("running");
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], [])); // gone after it was seen held: recorded
    unknown(false);
    expect(h.row(d.episodeKey)?.endUnknown?.lastSeen).toBe("absent");
    h.advance(UNKNOWN_RECHECK_MS);
    expect(resendsOf(h)).toEqual([]); // the server let it go: a resend could only be refused
  });
});

describe("which server's record judges a claim", () => {
  it("an end of a two-server episode is not settled from one server's pool: the other's acceptance is not known", () => {
    const { h, d } = twoServers();
    h.claim(d, 1);
    h.outcome(d, { kind: "end", reward: 1 });
    seen(h, "ENGINE.ROLLING", 1, pool(1, [uuidOf(d)], []), "policy");
    expect(settlesOf(h)).toEqual([]);
    expect(h.row(d.episodeKey)?.status).toBe("reporting");
  });

  it("an unknown end of a claim on the second server is run again when THAT server's engine restarts, not the first's", () => {
    const { h, d } = twoServers();
    h.apply({ type: "episodeClaimed", episodeKey: d.episodeKey, attempt: 1, dispatchId: d.dispatchId, claims: [{ swarm: "judge", episodeUuid: "j-1", globalStep: 1 }] });
    h.outcome(d, { kind: "end", reward: 1 });
    h.apply({ type: "episodeReported", episodeKey: d.episodeKey, attempt: 1, result: "unknown", reached: true });
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], []), "policy"); // the first server knows nothing of it
    expect(settlesOf(h)).toEqual([]);
    seen(h, "ENGINE.OFFLINE", 1, undefined, "judge");
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], []), "judge"); // the judge restarted: its batch is gone
    expect(settlesOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: 1, result: "lost", cause: "lost:engineRestarted", reward: 1 }]);
  });

  it("the judge server's pool listing the claim as completed settles it ended", () => {
    const { h, d } = twoServers();
    h.apply({ type: "episodeClaimed", episodeKey: d.episodeKey, attempt: 1, dispatchId: d.dispatchId, claims: [{ swarm: "judge", episodeUuid: "j-1", globalStep: 1 }] });
    h.outcome(d, { kind: "end", reward: 1 });
    seen(h, "ENGINE.ROLLING", 1, pool(1, ["j-1"], []), "policy");
    expect(settlesOf(h)).toEqual([]);
    seen(h, "ENGINE.ROLLING", 1, pool(1, ["j-1"], []), "judge");
    expect(settlesOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: 1, result: "ended", reward: 1 }]);
  });
});

describe("the engine epoch a claim is judged by", () => {
  const restart = (h: Harness, swarm: string, step: number) => {
    seen(h, "ENGINE.OFFLINE", step, undefined, swarm);
    seen(h, "ENGINE.ROLLING", step, undefined, swarm);
  };

  it("a claim made after a restart is lost only when the engine restarts again, not for the restart it already followed", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 1, maxParallel: 1, maxSteps: 3 }));
    h.start();
    h.rolling(1);
    restart(h, "default", 1);
    expect(h.state.run.engines[0]!.restarts).toBe(1);
    const d = h.takeDispatches().at(-1)!;
    h.claim(d, 1);
    h.outcome(d, { kind: "end", reward: 1 });
    h.apply({ type: "episodeReported", episodeKey: d.episodeKey, attempt: d.attempt, result: "unknown", reached: true });
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], [uuidOf(d)])); // the epoch it was claimed in: held
    expect(settlesOf(h)).toEqual([]);
    restart(h, "default", 1);
    expect(settlesOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: d.attempt, result: "lost", cause: "lost:engineRestarted", reward: 1 }]);
  });

  it("a claim on the second server is judged by that server's epoch, not the first server's", () => {
    const { h, d } = twoServers();
    restart(h, "policy", 1);
    restart(h, "policy", 1);
    restart(h, "judge", 1);
    expect(h.state.run.engines.map((e) => e.restarts)).toEqual([2, 1]);
    const ref = h.row(d.episodeKey)!;
    h.apply({ type: "episodeClaimed", episodeKey: d.episodeKey, attempt: ref.attempt, dispatchId: ref.dispatchId, claims: [{ swarm: "judge", episodeUuid: "j-1", globalStep: 1 }] });
    h.outcome({ episodeKey: d.episodeKey, attempt: ref.attempt }, { kind: "end", reward: 1 });
    h.apply({ type: "episodeReported", episodeKey: d.episodeKey, attempt: ref.attempt, result: "unknown", reached: true });
    seen(h, "ENGINE.ROLLING", 1, pool(1, [], ["j-1"]), "judge"); // the judge, in the epoch of the claim: held
    expect(settlesOf(h)).toEqual([]);
    restart(h, "judge", 1);
    expect(settlesOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: ref.attempt, result: "lost", cause: "lost:engineRestarted", reward: 1 }]);
  });
});

describe("when the engine has closed the claim's batch", () => {
  it("the engine at a later step closed it: an end that reached the server is counted accepted", () => {
    const { h, d, unknown } = recorded();
    unknown(true);
    seen(h, "ENGINE.ROLLING", 2);
    expect(settlesOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: 1, result: "ended", reward: 0.5 }]);
  });

  it("a pool read while the engine is at another step than the pool's is no evidence", () => {
    const { h, unknown } = recorded();
    unknown(false);
    h.nowMs += UNKNOWN_RECHECK_MS * 3;
    seen(h, "ENGINE.ROLLING", 2, pool(1, [], [])); // the pool still describes step 1: not a reverted proof
    expect(settlesOf(h)).toEqual([]);
    // the engine moved on, so the batch closed without a record of it, and the send is not known to have reached
    expect(h.state.run.totals).toMatchObject({ endsUnknown: 1, episodesEnded: 0 });
  });

  it("a claim whose step is not known cannot be placed in a closed batch: nothing inferred", () => {
    const { h, d, unknown } = recorded({ kind: "end", reward: 0.5 }, null);
    expect(h.row(d.episodeKey)?.claims[0]?.globalStep ?? null).toBeNull();
    unknown(true);
    seen(h, "ENGINE.WEIGHT_SYNCING", 1);
    seen(h, "ENGINE.ROLLING", 2);
    expect(settlesOf(h)).toEqual([]);
    expect(h.state.run.totals.endsInferred ?? 0).toBe(0);
  });

  it("a pool that names no step describes no batch: no evidence for a claim whose step is not known either", () => {
    const { h, d, unknown } = recorded({ kind: "end", reward: 0.5 }, null);
    unknown(true);
    h.nowMs += UNKNOWN_RECHECK_MS * 3;
    seen(h, "ENGINE.ROLLING", null, pool(null, [uuidOf(d)], []));
    seen(h, "ENGINE.ROLLING", null, pool(null, [], []));
    expect(settlesOf(h)).toEqual([]);
  });
});

describe("rechecks and resends", () => {
  it("a resend carries the end as recorded (its claims and reward) and moves the next recheck later", () => {
    const { h, d, unknown } = recorded();
    unknown(false);
    h.advance(UNKNOWN_RECHECK_MS);
    expect(resendsOf(h)).toEqual([{ episodeKey: d.episodeKey, attempt: 1, claims: [{ swarm: "default", episodeUuid: uuidOf(d) }], reward: 0.5 }]);
    expect(h.row(d.episodeKey)).toMatchObject({ resolveRequestedAtMs: h.nowMs, deadlineAtMs: h.nowMs + UNKNOWN_RECHECK_MS });
  });

  it("a run that is not stopping never gives up on an unresolved end: it keeps resending past the stop grace", () => {
    const { h, d, unknown } = recorded();
    unknown(false);
    const end = h.nowMs + STOP_UNKNOWN_GRACE_MS * 2;
    while (h.nowMs < end) h.advance(UNKNOWN_RECHECK_MS);
    expect(h.row(d.episodeKey)).toMatchObject({ status: "reporting" });
    expect(h.state.run.totals.endsUnknown ?? 0).toBe(0);
    expect(resendsOf(h).length).toBeGreaterThanOrEqual((STOP_UNKNOWN_GRACE_MS * 2) / UNKNOWN_RECHECK_MS - 1);
  });

  it("an end left unknown is no longer unresolved: a sibling still running does not keep the run reading the pool at the recheck pace", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 2, maxParallel: 2, maxSteps: 3 }));
    h.start();
    h.rolling(1);
    const [a, b] = h.takeDispatches();
    h.claim(a!, 1);
    h.outcome(a!, { kind: "end", reward: 0.5 });
    h.apply({ type: "episodeReported", episodeKey: a!.episodeKey, attempt: 1, result: "unknown", reached: false });
    h.claim(b!, 1);
    seen(h, "ENGINE.WEIGHT_SYNCING", 1);
    seen(h, "ENGINE.ROLLING", 2);
    expect(h.state.run.totals.endsUnknown).toBe(1);
    expect(h.row(a!.episodeKey)?.status).toBe("aborted"); // kept until its group resolves: b still runs
    const from = polls(h).length;
    h.advance(30_000);
    const after = polls(h).slice(from);
    expect(after.length).toBeGreaterThan(0);
    for (const p of after) expect(p.withPool ?? []).toEqual([]);
    expect(h.state.run.nextPollAtMs! - h.nowMs).toBeGreaterThan(UNKNOWN_RECHECK_MS);
  });

  it("a recorded end that nobody reported unknown does not make the run read the pool or poll at the recheck pace", () => {
    const { h } = recorded();
    const from = polls(h).length;
    h.advance(60_000);
    const after = polls(h).slice(from);
    expect(after.length).toBeGreaterThan(0);
    for (const p of after) expect(p.withPool ?? []).toEqual([]);
    expect(h.state.run.nextPollAtMs! - h.nowMs).toBeGreaterThan(UNKNOWN_RECHECK_MS);
  });
});
