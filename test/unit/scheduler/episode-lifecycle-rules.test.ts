/**
 * Rules of one episode's transitions (scheduler/episode-lifecycle) that the lifecycle tests did not pin: what a
 * stopping run does with claims, claim failures and failed attempts; which events are refused for a row in the
 * wrong state; which reward an end counts with; how many attempts a repeat gets after a wipe or in an eval run.
 */
import { describe, expect, it } from "vitest";
import { isDispatchCurrent, reportedReward, type RunSpecInput } from "../../../src/scheduler/index.ts";
import { Harness, rollingRun, specInput } from "./harness.ts";

const started = (overrides: Partial<RunSpecInput> = {}) => rollingRun(specInput({ batchSize: 2, numRepeat: 2, ...overrides }));
const stop = (h: Harness) => h.apply({ type: "stopRequested", reason: "test stop" });

describe("a stopping run takes no new work", () => {
  it("a claim that arrives while the run drains is refused (the consumer aborts it) and the episode is dropped as stopped", () => {
    const { h, sent } = started({ batchSize: 1, numRepeat: 2, maxParallel: 2 });
    const [a, b] = sent;
    h.claim(a!, 1); // keeps the run draining (one episode in flight)
    stop(h);
    expect(h.state.run.phase).toBe("draining");
    const ack = h.claim(b!, 1).ack;
    expect(ack.status).toBe("stale");
    expect(h.row(b!.episodeKey)).toMatchObject({ status: "dropped", lastCause: "stopped", deadlineAtMs: null, claims: [] });
  });

  it("a claim failure while the run drains drops the episode instead of queuing it again", () => {
    const { h, sent } = started({ batchSize: 1, numRepeat: 2, maxParallel: 2 });
    const [a, b] = sent;
    h.claim(a!, 1);
    stop(h);
    expect(h.apply({ type: "claimFailed", episodeKey: b!.episodeKey, attempt: 1, dispatchId: b!.dispatchId, kind: "noEpisodes" }).ack.status).toBe("applied");
    expect(h.row(b!.episodeKey)).toMatchObject({ status: "dropped", lastCause: "stopped", attempt: 1 });
  });

  it("an attempt that fails while the run drains is closed as aborted, not retried", () => {
    const { h, sent } = started({ batchSize: 1, numRepeat: 2, maxParallel: 2 });
    const [a, b] = sent;
    h.claim(a!, 1);
    h.claim(b!, 1);
    stop(h);
    h.outcome(a!, { kind: "abort", cause: "no_llm_call" });
    h.report(a!, "aborted");
    expect(h.row(a!.episodeKey)).toMatchObject({ status: "aborted", attempt: 1, lastCause: "no_llm_call", deadlineAtMs: null });
    expect(h.state.run.totals.attemptsFailed).toBe(1);
  });

  it("after a run stopped on a function error, a recorded end is refused (abort, never end) but a recorded abort is taken", () => {
    const BUG = "TypeError: x is undefined @ run functions/f.ts:1:1";
    const { h, sent } = started({ batchSize: 2, numRepeat: 4, maxParallel: 6 });
    const [x, y] = [sent[4]!, sent[5]!];
    h.claim(x, 1);
    h.claim(y, 1);
    const failWith = (ref: { episodeKey: string; attempt: number; dispatchId: number }) => {
      h.claim(ref, 1);
      h.outcome(ref, { kind: "abort", cause: "function_error", detail: BUG });
      h.report(ref, "aborted");
    };
    failWith(sent[0]!);
    failWith(sent[1]!);
    failWith(h.takeDispatches().find((d) => d.attempt === 2)!); // the same error on a retry: a plain bug
    expect(h.state.run).toMatchObject({ phase: "draining", stopReason: "functionError" });
    const refused = h.outcome(x, { kind: "end", reward: 1 }).ack;
    expect(refused.status).toBe("stale");
    expect(h.row(x.episodeKey)).toMatchObject({ status: "aborted", lastCause: "run_stopped" });
    expect(h.outcome(y, { kind: "abort", cause: "no_llm_call" }).ack.status).toBe("applied");
    expect(h.row(y.episodeKey)).toMatchObject({ status: "reporting", outcome: { kind: "abort", cause: "no_llm_call" } });
  });

  it("after a plain stop, a recorded end is taken: its reward still trains", () => {
    const { h, sent } = started({ batchSize: 1, numRepeat: 2, maxParallel: 2 });
    const [a] = sent;
    h.claim(a!, 1);
    stop(h);
    expect(h.outcome(a!, { kind: "end", reward: 0.5 }).ack.status).toBe("applied");
    expect(h.row(a!.episodeKey)).toMatchObject({ status: "reporting", outcome: { kind: "end", reward: 0.5 } });
  });
});

describe("a failed attempt in a dropped group", () => {
  it("a repeat whose group was dropped meanwhile is closed as dropped, not retried", () => {
    const { h, sent } = started({ batchSize: 1, numRepeat: 2, maxParallel: 2 });
    const [a, b] = sent;
    h.claim(a!, 1);
    h.claim(b!, 1);
    h.outcome(a!, { kind: "abort", cause: "invalid_task" }); // a data error drops the group at once
    h.report(a!, "aborted");
    expect(h.row(b!.episodeKey)).toMatchObject({ status: "running", groupDropped: true });
    h.outcome(b!, { kind: "abort", cause: "no_llm_call" });
    h.report(b!, "aborted");
    // closed, not re-queued: the group had nothing left open, so it resolved and its rows are gone
    expect(h.row(b!.episodeKey)).toBeUndefined();
    expect(h.takeDispatches().filter((d) => d.episodeKey === b!.episodeKey)).toEqual([]);
    expect(h.state.run.totals.attemptsFailed).toBe(2);
  });
});

describe("events for a row in the wrong state are refused and change nothing", () => {
  it("a claim failure or an outcome for an episode the run does not know is answered unknown", () => {
    const { h } = started();
    const before = h.state;
    expect(h.apply({ type: "claimFailed", episodeKey: "nope/0/0#0", attempt: 1, dispatchId: 1, kind: "noEpisodes" }).ack.status).toBe("unknown");
    expect(h.outcome({ episodeKey: "nope/0/0#0", attempt: 1 }, { kind: "end", reward: 1 }).ack.status).toBe("unknown");
    expect(h.state).toBe(before);
  });

  it("a report for an episode queued again after a claim failure is stale: no claim was reported, no attempt is spent", () => {
    const { h, sent } = started({ maxParallel: 1 });
    const d = sent[0]!;
    h.apply({ type: "claimFailed", episodeKey: d.episodeKey, attempt: 1, dispatchId: d.dispatchId, kind: "noEpisodes" });
    expect(h.row(d.episodeKey)?.status).toBe("queued");
    const before = h.state;
    expect(h.report(d, "aborted").ack.status).toBe("stale");
    expect(h.state).toBe(before);
    expect(h.state.run.totals.attemptsFailed).toBe(0);
  });

  it("a second claim of a multi-swarm episode is a duplicate only when every uuid is the same, and a shorter one is stale", () => {
    const h = new Harness(specInput({
      swarms: [{ name: "policy", url: "http://127.0.0.1:10086" }, { name: "judge", url: "http://127.0.0.1:10087" }],
      batchSize: 1, numRepeat: 1, maxParallel: 1,
    }));
    h.start();
    h.rolling(1);
    const [d] = h.takeDispatches();
    const claims = [{ swarm: "policy", episodeUuid: "p-1", globalStep: 1 }, { swarm: "judge", episodeUuid: "j-1", globalStep: 1 }];
    const claim = (c: typeof claims) => h.apply({ type: "episodeClaimed", episodeKey: d!.episodeKey, attempt: 1, dispatchId: d!.dispatchId, claims: c }).ack.status;
    expect(claim(claims)).toBe("applied");
    expect(claim(claims)).toBe("duplicate");
    expect(claim([claims[0]!, { ...claims[1]!, episodeUuid: "j-2" }])).toBe("stale"); // same first uuid, another second
    expect(claim([claims[0]!])).toBe("stale"); // names fewer server episodes than the episode holds
    expect(h.row(d!.episodeKey)?.claims.map((c) => c.episodeUuid)).toEqual(["p-1", "j-1"]);
  });

  it("a claim failure names its engine status for its own swarm only; one without a swarm moves no engine's view", () => {
    const h = new Harness(specInput({
      swarms: [{ name: "policy", url: "http://127.0.0.1:10086" }, { name: "judge", url: "http://127.0.0.1:10087" }],
      batchSize: 1, numRepeat: 2, maxParallel: 2,
    }));
    h.start();
    h.rolling(1);
    const [a] = h.takeDispatches();
    const engines = h.state.run.engines;
    h.apply({ type: "claimFailed", episodeKey: a!.episodeKey, attempt: 1, dispatchId: a!.dispatchId, kind: "syncing", engineStatus: "ENGINE.WEIGHT_SYNCING" });
    expect(h.state.run.engines.map((e) => e.engineStatus)).toEqual(engines.map((e) => e.engineStatus));
    expect(h.row(a!.episodeKey)?.status).toBe("queued");
  });
});

describe("which reward an end counts with", () => {
  it("the recorded end's or score's reward wins; an abort carries none, so the report's is taken", () => {
    expect(reportedReward({ kind: "end", reward: 0.25 }, { reward: 1 })).toBe(0.25);
    expect(reportedReward({ kind: "score", reward: 0.5 }, { reward: 1 })).toBe(0.5);
    expect(reportedReward({ kind: "abort", cause: "no_llm_call" }, { reward: 0.75 })).toBe(0.75);
    expect(reportedReward(null, { reward: 0.75 })).toBe(0.75);
    expect(reportedReward({ kind: "abort", cause: "no_llm_call" }, {})).toBeUndefined();
  });

  it("an ended report without a recorded outcome and with a non-finite reward is refused: nothing ends without a real reward", () => {
    const { h, sent } = started();
    const d = sent[0]!;
    h.claim(d, 1);
    for (const reward of [Number.NaN, Number.POSITIVE_INFINITY]) {
      const before = h.state;
      expect(h.apply({ type: "episodeReported", episodeKey: d.episodeKey, attempt: 1, result: "ended", reward }).ack.status).toBe("stale");
      expect(h.state.run.totals.episodesEnded).toBe(0);
      expect(h.state.episodes).toBe(before.episodes);
    }
    expect(h.apply({ type: "episodeReported", episodeKey: d.episodeKey, attempt: 1, result: "ended", reward: 0.5 }).ack.status).toBe("applied");
    expect(h.state.run.totals).toMatchObject({ episodesEnded: 1, rewardSum: 0.5 });
  });

  it("an eval episode whose scored episode the server expired is retried, not scored: only the consumer's own abort delivers the score", () => {
    const e = new Harness(specInput({ episodeType: "eval", batchSize: 1, numRepeat: 1, maxParallel: 1 }), { gsm8k: 1 });
    e.start();
    e.rolling(1);
    const [x] = e.takeDispatches();
    e.claim(x!, 1);
    e.outcome(x!, { kind: "score", reward: 1 });
    e.report(x!, "expired");
    expect(e.row(x!.episodeKey)).toMatchObject({ attempt: 2, lastCause: "expired" });
    expect(e.state.run.totals.episodesEnded).toBe(0);
    expect(e.state.run.failuresByCause).toEqual({ expired: 1 });
  });

  it("an eval run keeps an abort outcome an abort (only an end reads as a score) and lands nothing in a training batch", () => {
    const e = new Harness(specInput({ episodeType: "eval", batchSize: 1, numRepeat: 2, maxParallel: 2 }), { gsm8k: 1 });
    e.start();
    e.rolling(1);
    const [x, y] = e.takeDispatches();
    e.claim(x!, 1);
    e.outcome(x!, { kind: "abort", cause: "no_llm_call" });
    expect(e.row(x!.episodeKey)?.outcome).toEqual({ kind: "abort", cause: "no_llm_call" });
    e.claim(y!, 1);
    e.outcome(y!, { kind: "end", reward: 1 });
    e.report(y!, "aborted");
    expect(e.row(y!.episodeKey)).toMatchObject({ status: "ended", reward: 1 });
    expect(Object.keys(e.state.batches)).toEqual([]);
  });

  it("an end refused on every server but reported with no accepted server lands nothing; an abort outcome never lands", () => {
    const h = new Harness(specInput({
      swarms: [{ name: "policy", url: "http://127.0.0.1:10086" }, { name: "judge", url: "http://127.0.0.1:10087" }],
      batchSize: 1, numRepeat: 2, maxParallel: 2, maxSteps: 1,
    }));
    h.start();
    h.rolling(1);
    const [a, b] = h.takeDispatches();
    h.claim(a!, 1);
    h.outcome(a!, { kind: "end", reward: 0.5 });
    h.apply({ type: "episodeReported", episodeKey: a!.episodeKey, attempt: 1, result: "lost", cause: "lost:engineNotRolling", endedSwarms: [] });
    h.claim(b!, 1);
    h.outcome(b!, { kind: "abort", cause: "no_llm_call" });
    h.apply({ type: "episodeReported", episodeKey: b!.episodeKey, attempt: 1, result: "aborted", endedSwarms: ["policy"] });
    const landed = Object.values(h.state.batches).reduce((n, batch) => n + batch.episodes.size, 0);
    expect(landed).toBe(0);
    expect(h.row(a!.episodeKey)).toMatchObject({ attempt: 2, lastCause: "lost:engineNotRolling" });
  });
});

describe("a report that names accepted servers without a recorded end", () => {
  it("is a plain failed attempt (nothing lands, nothing throws): only a recorded end has a reward to land", () => {
    const h = new Harness(specInput({
      swarms: [{ name: "policy", url: "http://127.0.0.1:10086" }, { name: "judge", url: "http://127.0.0.1:10087" }],
      batchSize: 1, numRepeat: 2, maxParallel: 2, maxSteps: 1,
    }));
    h.start();
    h.rolling(1);
    const [a] = h.takeDispatches();
    h.claim(a!, 1); // running: no outcome recorded
    const ack = h.apply({ type: "episodeReported", episodeKey: a!.episodeKey, attempt: 1, result: "lost", cause: "lost:engineNotRolling", endedSwarms: ["policy"] }).ack;
    expect(ack.status).toBe("applied");
    expect(Object.values(h.state.batches).reduce((n, b) => n + b.episodes.size, 0)).toBe(0);
    expect(h.row(a!.episodeKey)).toMatchObject({ attempt: 2, lastCause: "lost:engineNotRolling" });
  });
});

describe("attempts a repeat may use", () => {
  it("a wipe costs the repeat no attempt: a repeat run again after a wipe still gets maxAttempts tries", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 2, maxParallel: 2, maxAttempts: 2 }));
    h.start();
    h.rolling(2);
    const [a, b] = h.takeDispatches();
    h.finishEpisode(a!, 1, 2);
    h.claim(b!, 2);
    h.outcome(b!, { kind: "end", reward: 1 });
    h.engine("ENGINE.OFFLINE", 2); // batch 2 wiped: a is queued again (attempt 2, one wipe)
    h.report(b!, "ended");
    expect(h.row(a!.episodeKey)).toMatchObject({ status: "queued", attempt: 2, wipes: 1 });
    h.rolling(3);
    const again = h.takeDispatches().find((d) => d.episodeKey === a!.episodeKey)!;
    expect(again.attempt).toBe(2);
    h.claim(again, 3);
    h.outcome(again, { kind: "abort", cause: "no_llm_call" });
    h.report(again, "aborted");
    // its first real failure: one try of two is used, so it runs again
    expect(h.row(a!.episodeKey)).toMatchObject({ attempt: 3, lastCause: "no_llm_call", claims: [] });
    expect(h.row(a!.episodeKey)?.status === "queued" || h.row(a!.episodeKey)?.status === "dispatched").toBe(true);
  });

  it("an eval group with a scored repeat gets no extra attempts: the started-group allowance is for train batches only", () => {
    const e = new Harness(specInput({ episodeType: "eval", batchSize: 1, numRepeat: 2, maxParallel: 2, maxAttempts: 1 }), { gsm8k: 2 });
    e.start();
    e.rolling(1);
    const [x, y] = e.takeDispatches();
    e.claim(x!, 1);
    e.outcome(x!, { kind: "score", reward: 1 });
    e.report(x!, "aborted");
    expect(e.row(x!.episodeKey)?.status).toBe("ended");
    e.claim(y!, 1);
    e.outcome(y!, { kind: "abort", cause: "no_llm_call" });
    e.report(y!, "aborted");
    // failed at its one try: the group is dropped (resolved, its rows gone), the repeat is not tried again
    expect(e.row(y!.episodeKey)).toBeUndefined();
    expect(e.takeDispatches().filter((d) => d.episodeKey === y!.episodeKey)).toEqual([]);
  });

  it("a train group with an ended repeat gets more tries per repeat before it is dropped", () => {
    const { h, sent } = started({ batchSize: 1, numRepeat: 2, maxParallel: 2, maxAttempts: 1 });
    const [a, b] = sent;
    h.finishEpisode(a!, 1, 1);
    h.claim(b!, 1);
    h.outcome(b!, { kind: "abort", cause: "no_llm_call" });
    h.report(b!, "aborted");
    expect(h.row(b!.episodeKey)).toMatchObject({ attempt: 2, lastCause: "no_llm_call" });
  });
});

describe("isDispatchCurrent refuses what is not a live dispatch", () => {
  it("an unknown episode, another attempt, or a stopping run is never current", () => {
    const { h, sent } = started({ batchSize: 1, numRepeat: 2, maxParallel: 2 });
    const [a, b] = sent;
    expect(isDispatchCurrent(h.state, { ...a!, episodeKey: "nope/0/0#0" })).toBe(false);
    expect(isDispatchCurrent(h.state, { ...a!, attempt: a!.attempt + 1 })).toBe(false);
    expect(isDispatchCurrent(h.state, b!)).toBe(true);
    h.claim(a!, 1);
    stop(h);
    expect(h.row(b!.episodeKey)?.status).toBe("dispatched");
    expect(isDispatchCurrent(h.state, b!)).toBe(false);
  });
});
