/**
 * The run in each sample-collection method (scheduler/sync-vote): the agree modes' vote (once the window is resolved
 * and nothing is in flight; retried after a refusal; a rejoin group when the server no longer lists the run; a
 * stopping run's leaving vote in the all mode), the non-dummy and episodes methods' counting of what a batch lacks,
 * and the run spec's refusals of a method a run cannot serve.
 */
import { describe, expect, it } from "vitest";
import { parseRunSpec, runStatus, type AgreeSyncWeight, type FinishRun } from "../../../src/scheduler/index.ts";
import { AGREE_RETRY_MS } from "../../../src/scheduler/sync-vote.ts";
import { jobMethod } from "../../../src/scheduler/collection-method.ts";
import { ServerText } from "../../../src/protocol/index.ts";
import { Harness, specInput } from "./harness.ts";

const ALL = "rollout_until_all_clients_agree_sync_weight";
const ANY = "rollout_until_any_client_agree_sync_weight";
const votesOf = (h: Harness) => h.commands.filter((c): c is AgreeSyncWeight => c.type === "agreeSyncWeight");
const finishOf = (h: Harness) => h.commands.find((c): c is FinishRun => c.type === "finishRun")?.summary;
const answer = (h: Harness, step: number, result: "agreed" | "refused" | "failed", reason = "") =>
  h.apply({ type: "syncVoteAnswered", swarm: "default", step, result, reason });

function agreeRun(method: string, overrides: Parameters<typeof specInput>[0] = {}) {
  const h = new Harness(specInput({ batchSize: 2, numRepeat: 2, maxParallel: 8, maxSteps: 2, job: { swarmModeSampleCollectionMethod: method }, ...overrides }));
  h.start();
  h.rolling(1);
  return h;
}

describe("agree modes: the run votes once its share of the batch is complete", () => {
  it("votes only after every group of its window ended and nothing is in flight; an agreed vote is not sent again; the next window opens on the sync", () => {
    const h = agreeRun(ALL);
    const sent = h.takeDispatches();
    expect(sent).toHaveLength(4);
    for (const d of sent.slice(0, 3)) h.finishEpisode(d, 1, 1);
    expect(votesOf(h)).toEqual([]); // one repeat still in flight
    h.finishEpisode(sent[3]!, 0, 1);
    expect(votesOf(h)).toEqual([{ type: "agreeSyncWeight", swarm: "default", step: 1 }]);
    expect(h.takeDispatches()).toEqual([]); // no top-up: the batch closes by the votes, not by a task count
    answer(h, 1, "agreed");
    h.advance(30_000);
    expect(votesOf(h)).toHaveLength(1);
    h.engine("ENGINE.ROLLING_POST", 1);
    h.engine("ENGINE.WEIGHT_SYNCING", 1);
    h.rolling(2);
    expect(h.takeDispatches()).toHaveLength(4); // window 2
    expect(h.state.batches["0:1"]?.state).toBe("closed");
  });

  it("a refused or failed vote is sent again after the retry delay, not before", () => {
    const h = agreeRun(ANY);
    h.serveAll(1);
    expect(votesOf(h)).toHaveLength(1);
    answer(h, 1, "failed", "connect ECONNREFUSED");
    h.advance(AGREE_RETRY_MS / 2);
    expect(votesOf(h)).toHaveLength(1);
    h.advance(AGREE_RETRY_MS);
    expect(votesOf(h)).toHaveLength(2);
    answer(h, 1, "agreed");
    expect(h.state.run.syncVotesAgreed).toBe(1);
  });

  it("refused as not in the active list (it fell off): one more group puts the run back, then it votes again", () => {
    const h = agreeRun(ALL, { maxSteps: 1 });
    h.serveAll(1);
    answer(h, 1, "refused", ServerText.notInActiveList("run-client"));
    h.advance(AGREE_RETRY_MS + 1);
    const rejoin = h.takeDispatches();
    expect(rejoin).toHaveLength(2); // one group of numRepeat episodes
    expect(votesOf(h)).toHaveLength(1);
    for (const d of rejoin) h.finishEpisode(d, 1, 1);
    expect(votesOf(h)).toHaveLength(2);
    answer(h, 1, "agreed");
    h.engine("ENGINE.ROLLING_POST", 1);
    h.rolling(2);
    expect(finishOf(h)).toMatchObject({ verdict: "trained", untrainedRewards: 0 });
  });

  it("the last window: the finishing run votes and finishes once the server trained its batch", () => {
    const h = agreeRun(ALL, { maxSteps: 1 });
    h.serveAll(1);
    expect(h.state.run.phase).toBe("finishing");
    expect(votesOf(h)).toHaveLength(1);
    answer(h, 1, "agreed");
    h.rolling(2);
    expect(finishOf(h)).toMatchObject({ verdict: "trained", untrainedRewards: 0, stopReason: "maxSteps" });
  });

  it("all mode: a run stopped mid-batch votes once nothing of it is in flight, and leaves on the answer (it never holds the others)", () => {
    const h = agreeRun(ALL, { maxParallel: 2 });
    const sent = h.takeDispatches();
    h.finishEpisode(sent[0]!, 1, 1);
    h.claim(sent[1]!, 1);
    h.apply({ type: "stopRequested" });
    expect(votesOf(h)).toEqual([]); // one episode still claimed
    h.outcome(sent[1]!, { kind: "abort", cause: "stopped" });
    h.report(sent[1]!, "aborted");
    h.advance(400_000); // the repeat dispatched into the freed slot never started: its lease puts it back
    expect(votesOf(h)).toHaveLength(1);
    expect(h.state.run.phase).toBe("draining");
    answer(h, 1, "agreed");
    h.advance(60_000);
    expect(h.state.run.phase).toBe("finished");
  });

  it("any mode: a stopping run does not vote (a silent client holds no one there)", () => {
    const h = agreeRun(ANY, { maxParallel: 1 });
    const sent = h.takeDispatches();
    h.finishEpisode(sent[0]!, 1, 1);
    h.apply({ type: "stopRequested" });
    h.advance(400_000);
    expect(votesOf(h)).toEqual([]);
    expect(h.state.run.phase).toBe("finished");
  });
});

describe("the server's method rules over the job's (scheduler/collection-method)", () => {
  const TASKS = "rollout_until_finish_enough_tasks";
  const seen = (h: Harness, method: string, swarm = "default") =>
    h.apply({ type: "engineStatusSeen", swarm, engineStatus: "ENGINE.ROLLING", globalStep: 1, pool: { globalStep: 1, episodeUuids: [], completedTasks: 0, completedTaskTarget: 2, method } });
  const warnings = (h: Harness) => h.commands.filter((c) => c.type === "log" && /the swarm server's engine collects samples by/.test(c.message));

  it("a tasks run on a server in the all-agree mode votes once its share is done (it never holds the others), and says so once", () => {
    const h = agreeRun(TASKS);
    expect(runStatus(h.state).batches.sampleCollectionMethod).toBe(TASKS);
    const sent = h.takeDispatches();
    expect(sent).toHaveLength(4);
    h.finishEpisode(sent[0]!, 1, 1);
    seen(h, ALL);
    expect(runStatus(h.state).batches.sampleCollectionMethod).toBe(ALL);
    seen(h, ALL);
    expect(h.state.run.serverMethod).toBe(ALL);
    expect(warnings(h)).toHaveLength(1);
    expect(warnings(h)[0]).toMatchObject({ level: "warn", fields: { server: ALL, job: TASKS } });
    expect((warnings(h)[0] as { message: string }).message).toMatch(/votes for each weight sync/);
    for (const d of sent.slice(1)) h.finishEpisode(d, 1, 1);
    expect(votesOf(h)).toEqual([{ type: "agreeSyncWeight", swarm: "default", step: 1 }]);
    expect(runStatus(h.state).batches.syncVotesAgreed).toBe(0);
    answer(h, 1, "agreed");
    expect(runStatus(h.state).batches.syncVotesAgreed).toBe(1);
    h.engine("ENGINE.ROLLING_POST", 1);
    h.rolling(2);
    expect(h.takeDispatches()).toHaveLength(4); // window 2
  });

  it("a tasks run seeing no method (an engine that has not pushed yet) or its own keeps its job's and logs nothing", () => {
    const h = agreeRun(TASKS);
    h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 1, pool: { globalStep: 1, episodeUuids: [], completedTasks: 0, completedTaskTarget: 0 } });
    expect(h.state.run.serverMethod).toBeUndefined();
    seen(h, TASKS);
    expect(h.state.run.serverMethod).toBe(TASKS);
    expect(warnings(h)).toEqual([]);
    h.serveAll(1);
    expect(votesOf(h)).toEqual([]);
  });

  it("an all-agree run on a server of the tasks method (or of an unknown one, which the engine treats as tasks) never votes: the vote would be answered 500", () => {
    for (const raw of [TASKS, "rollout_until_something_new"]) {
      const h = agreeRun(ALL, { maxSteps: 1 });
      seen(h, raw);
      expect(h.state.run.serverMethod).toBe(TASKS);
      expect((warnings(h)[0] as { message: string }).message).toBe(
        `the swarm server's engine collects samples by ${TASKS}, not by ${ALL} as this run's job.swarmModeSampleCollectionMethod says: the run follows the server (set job.swarmModeSampleCollectionMethod to ${TASKS} to match it)`,
      );
      h.serveAll(1);
      expect(votesOf(h), raw).toEqual([]);
      h.rolling(2);
      expect(finishOf(h)).toMatchObject({ verdict: "trained", untrainedRewards: 0 });
    }
  });

  it("the server's method changes (another engine started): the run follows the new one", () => {
    const h = agreeRun(TASKS);
    seen(h, ANY);
    seen(h, TASKS);
    expect(h.state.run.serverMethod).toBe(TASKS);
    expect(warnings(h)).toHaveLength(1);
  });

  it("a config stored before the field is in the tasks method", () => {
    expect(jobMethod({})).toBe(TASKS);
    expect(jobMethod({ sampleCollectionMethod: ANY })).toBe(ANY);
  });

  it("eval runs and multi-server runs keep their job's method", () => {
    const ev = new Harness(specInput({ episodeType: "eval", batchSize: 2, numRepeat: 2 }));
    ev.start();
    seen(ev, ALL);
    expect(ev.state.run.serverMethod).toBeUndefined();
    const multi = new Harness(specInput({ swarms: [{ name: "policy", url: "http://a:1" }, { name: "judge", url: "http://b:1" }], batchSize: 2, numRepeat: 2 }));
    multi.start();
    seen(multi, ALL, "policy");
    expect(multi.state.run.serverMethod).toBeUndefined();
    expect(warnings(multi)).toEqual([]);
  });
});

describe("non-dummy and episodes methods: what a batch lacks is counted as the server counts it", () => {
  it("non-dummy: groups whose repeats share one reward do not count; the run keeps opening groups (past one batch's worth) until enough differ", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 2, maxParallel: 8, maxSteps: 1, job: { swarmModeSampleCollectionMethod: "rollout_until_finish_enough_non_dummy_tasks" } }), { gsm8k: 50 });
    h.start();
    h.rolling(1);
    const sent = h.takeDispatches();
    const g0 = sent[0]!.groupKey;
    for (const d of sent) h.finishEpisode(d, d.groupKey === g0 && d.repeat === 0 ? 0 : 1, 1); // one non-dummy group of two
    expect(h.state.run.phase).toBe("finishing");
    // three top-ups whose groups all share one reward (dummy), then one that differs
    for (let round = 0; round < 4; round++) {
      h.advance(3_000);
      h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 1, topUpGrant: { step: 1, groups: 1 } });
      const more = h.takeDispatches();
      expect(more, `round ${round}`).toHaveLength(2);
      for (const d of more) h.finishEpisode(d, round === 3 && d.repeat === 0 ? 0 : 1, 1);
    }
    expect(h.state.steps["0"]?.topUpGroups).toBe(4); // past one batch's worth (2)
    h.advance(3_000);
    h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 1, topUpGrant: { step: 1, groups: 1 } });
    expect(h.takeDispatches()).toEqual([]); // two non-dummy groups: the batch closes by itself
    h.rolling(2);
    expect(finishOf(h)).toMatchObject({ verdict: "trained", untrainedRewards: 0 });
  });

  it("episodes: task ids do not matter, only B × R kept episodes (other clients' count)", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 2, maxParallel: 8, maxSteps: 1, job: { swarmModeSampleCollectionMethod: "rollout_until_finish_enough_episodes" } }), { gsm8k: 50 });
    h.start();
    h.rolling(1);
    const sent = h.takeDispatches();
    const uuids = sent.map((d) => `uuid-${d.episodeKey}-${d.attempt}`);
    h.finishEpisode(sent[0]!, 1, 1);
    h.finishEpisode(sent[1]!, 1, 1);
    // the pool lists two episodes of another client (of two different, incomplete tasks)
    h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 1, pool: { globalStep: 1, episodeUuids: [...uuids.slice(0, 2), "x1", "x2"], completedTasks: 1, completedTaskTarget: 2, taskEpisodes: { a: uuids.slice(0, 2), o1: ["x1"], o2: ["x2"] } } });
    for (const d of sent.slice(2)) h.finishEpisode(d, 1, 1);
    expect(h.state.batches["0:1"]?.foreignEpisodes).toBe(2);
    h.advance(3_000);
    h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 1, topUpGrant: { step: 1, groups: 1 } });
    expect(h.takeDispatches()).toEqual([]); // 4 of ours + 2 of theirs ≥ B × R: nothing lacks
  });
});

describe("the run spec refuses a method the run cannot serve, with the reason", () => {
  const issues = (input: Parameters<typeof specInput>[0]) => {
    const r = parseRunSpec(specInput(input));
    return r.success ? [] : r.issues.map((i) => `${i.path}: ${i.message}`);
  };
  it("accepts all five methods on a one-swarm train run", () => {
    for (const m of ["rollout_until_finish_enough_tasks", "rollout_until_finish_enough_episodes", "rollout_until_finish_enough_non_dummy_tasks", ANY, ALL]) {
      expect(issues({ job: { swarmModeSampleCollectionMethod: m } }), m).toEqual([]);
    }
  });
  it("refuses agree modes for eval runs and multi-swarm runs, and the non-dummy method with one episode per group", () => {
    expect(issues({ episodeType: "eval", job: { swarmModeSampleCollectionMethod: ALL } }).join()).toMatch(/needs a train run/);
    expect(issues({ numRepeat: 1, job: { swarmModeSampleCollectionMethod: "rollout_until_finish_enough_non_dummy_tasks" } }).join()).toMatch(/needs numRepeat ≥ 2 \(got 1\)/);
  });
});

describe("weight-sync hooks: once per server step", () => {
  const hooks = (h: Harness) => h.commands.filter((c) => c.type === "weightSyncHook").map((c) => (c.type === "weightSyncHook" ? c.step : -1));
  it("on WEIGHT_SYNCING, or on the next ROLLING when the sync fell between two polls; never twice, never for steps before the run", () => {
    const h = new Harness(specInput({ batchSize: 2, numRepeat: 1, maxParallel: 2, maxSteps: 3 }));
    h.start();
    h.rolling(4); // steps 1-3 trained before the run: not hooked
    h.serveAll(4);
    h.engine("ENGINE.ROLLING_POST", 4);
    h.engine("ENGINE.WEIGHT_SYNCING", 4);
    h.engine("ENGINE.WEIGHT_SYNCING", 4);
    h.rolling(5);
    h.serveAll(5);
    h.rolling(6); // the sync of step 5 fell between two polls
    h.engine("ENGINE.ROLLING_POST", 6);
    expect(hooks(h)).toEqual([4, 5]);
    const c = h.commands.find((x) => x.type === "weightSyncHook");
    expect(c).toMatchObject({ step: 4, metrics: { episodes: 2, meanReward: 1, otherClientsEpisodes: 0 } });
  });
});
