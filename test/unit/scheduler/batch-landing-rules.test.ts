/**
 * Batch truth rules (scheduler/batches) the batch tests did not pin: where an end lands when its claim names a swarm
 * the run lacks or no step; a landing is unconfirmed until the pool lists it; a late end in a trained batch only adds
 * to its counts; a landing the pool lists at another step moves there (with its window's count); which observations
 * close a batch or change its last status; what the pool says about other clients (and when it says nothing); a wipe
 * on one server of a multi-server episode.
 */
import { describe, expect, it } from "vitest";
import type { PoolSeen } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

const uuidOf = (ref: { episodeKey: string; attempt: number }) => `uuid-${ref.episodeKey}-${ref.attempt}`;
const seen = (h: Harness, engineStatus: string, globalStep: number | null, pool?: PoolSeen, swarm = "default") =>
  h.apply({ type: "engineStatusSeen", swarm, engineStatus, globalStep, ...(pool ? { pool } : {}) });
const pool = (globalStep: number | null, episodeUuids: string[], extra: Partial<PoolSeen> = {}): PoolSeen => ({
  globalStep, episodeUuids, completedTasks: 0, completedTaskTarget: 0, ...extra,
});

function oneServer(overrides = {}) {
  const h = new Harness(specInput({ batchSize: 1, numRepeat: 2, maxParallel: 2, maxSteps: 3, ...overrides }));
  h.start();
  h.rolling(1);
  return { h, sent: h.takeDispatches() };
}

function twoServers(overrides = {}) {
  const h = new Harness(specInput({
    swarms: [{ name: "policy", url: "http://127.0.0.1:10086" }, { name: "judge", url: "http://127.0.0.1:10087" }],
    batchSize: 1, numRepeat: 2, maxParallel: 2, maxSteps: 3, ...overrides,
  }));
  h.start();
  h.rolling(1);
  return { h, sent: h.takeDispatches() };
}

const claimWith = (h: Harness, d: { episodeKey: string; attempt: number; dispatchId: number }, claims: { swarm: string; episodeUuid: string; globalStep: number | null }[]) =>
  h.apply({ type: "episodeClaimed", episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, claims });
const endWith = (h: Harness, d: { episodeKey: string; attempt: number }, reward: number) => {
  h.outcome(d, { kind: "end", reward });
  return h.report(d, "ended");
};

describe("where an accepted end lands", () => {
  it("a claim on a swarm the run lacks lands under the episode's key in the first server's batch of its step, and the window counts it", () => {
    const { h, sent } = oneServer();
    const d = sent[0]!;
    claimWith(h, d, [{ swarm: "ghost", episodeUuid: "g-1", globalStep: 1 }]);
    endWith(h, d, 0.5);
    const batch = h.state.batches["0:1"]!;
    expect([...batch.episodes.keys()]).toEqual([d.episodeKey]);
    expect(batch).toMatchObject({ episodesLanded: 1, rewardSum: 0.5, state: "open" });
    expect(h.state.steps["0"]?.landed).toEqual({ "0:1": 1 });
  });

  it("with no step on the row, such an end lands in the batch of the step the first server is at", () => {
    const { h, sent } = oneServer();
    const d = sent[0]!;
    claimWith(h, d, [{ swarm: "ghost", episodeUuid: "g-1", globalStep: null }]);
    endWith(h, d, 1);
    expect(Object.keys(h.state.batches)).toEqual(["0:1"]);
  });

  it("the row's own step wins over the step the engine is at when the end arrives", () => {
    const { h, sent } = oneServer();
    const d = sent[0]!;
    claimWith(h, d, [{ swarm: "ghost", episodeUuid: "g-1", globalStep: 1 }]);
    seen(h, "ENGINE.ROLLING", 2);
    endWith(h, d, 1);
    expect(Object.keys(h.state.batches)).toEqual(["0:1"]);
  });

  it("the window counts the first server's batch whatever the order the claims were reported in", () => {
    const { h, sent } = twoServers();
    const d = sent[0]!;
    claimWith(h, d, [{ swarm: "judge", episodeUuid: "j-1", globalStep: 1 }, { swarm: "policy", episodeUuid: "p-1", globalStep: 1 }]);
    endWith(h, d, 1);
    expect(h.state.steps["0"]?.landed).toEqual({ "0:1": 1 });
    expect(Object.keys(h.state.batches).sort()).toEqual(["0:1", "judge@0:1"]);
  });

  it("an end claimed on the second server only lands in that server's batch; the window counts no first-server landing", () => {
    const { h, sent } = twoServers();
    const d = sent[0]!;
    claimWith(h, d, [{ swarm: "judge", episodeUuid: "j-1", globalStep: 1 }]);
    expect(endWith(h, d, 1).ack.status).toBe("applied");
    expect(Object.keys(h.state.batches)).toEqual(["judge@0:1"]);
    expect([...h.state.batches["judge@0:1"]!.episodes.keys()]).toEqual(["j-1"]);
    expect(h.state.steps["0"]?.landed ?? {}).toEqual({});
  });

  it("a fresh landing is unconfirmed: a pool of its step that does not list it yet (the push lags) wipes nothing", () => {
    const { h, sent } = oneServer();
    const d = sent[0]!;
    h.finishEpisode(d, 1, 1);
    expect(h.state.batches["0:1"]!.episodes.get(uuidOf(d))?.confirmed).toBe(false);
    seen(h, "ENGINE.ROLLING", 1, pool(1, []));
    expect(h.state.batches["0:1"]!.state).toBe("open");
    seen(h, "ENGINE.ROLLING", 1, pool(1, [uuidOf(d)]));
    expect(h.state.batches["0:1"]!.episodes.get(uuidOf(d))?.confirmed).toBe(true);
  });

  it("a late end in a batch already trained adds to its counts but keeps no episode list", () => {
    const { h, sent } = oneServer();
    const [a, b] = sent;
    h.finishEpisode(a!, 1, 1);
    h.claim(b!, 1);
    h.outcome(b!, { kind: "end", reward: 0.5 });
    seen(h, "ENGINE.ROLLING", 2); // batch 1 trained
    expect(h.state.batches["0:1"]!.state).toBe("closed");
    h.report(b!, "ended");
    expect(h.state.batches["0:1"]).toMatchObject({ state: "closed", episodesLanded: 2, rewardSum: 1.5 });
    expect(h.state.batches["0:1"]!.episodes.size).toBe(0);
  });
});

describe("a landing the pool lists at another step", () => {
  it("moves to the batch the pool names, with its reward, and the window's count follows it", () => {
    const { h, sent } = oneServer();
    const d = sent[0]!;
    h.finishEpisode(d, 0.75, 2); // the step read after the claim said 2; the engine still collects step 1
    expect(Object.keys(h.state.batches)).toEqual(["0:2"]);
    expect(h.state.steps["0"]?.landed).toEqual({ "0:2": 1 });
    seen(h, "ENGINE.ROLLING", 1, pool(1, [uuidOf(d)]));
    expect(h.state.batches["0:2"]).toMatchObject({ episodesLanded: 0, rewardSum: 0 });
    expect(h.state.batches["0:2"]!.episodes.size).toBe(0);
    const to = h.state.batches["0:1"]!;
    expect(to).toMatchObject({ state: "open", episodesLanded: 1, rewardSum: 0.75, engineEpoch: 0, globalStep: 1 });
    expect(to.server).toBeUndefined();
    expect([...to.episodes.keys()]).toEqual([uuidOf(d)]);
    expect(h.state.steps["0"]?.landed).toEqual({ "0:1": 1 });
  });

  it("on the second server the moved landing's batch names that server, and the window's first-server count stays", () => {
    const { h, sent } = twoServers();
    const d = sent[0]!;
    claimWith(h, d, [{ swarm: "policy", episodeUuid: "p-1", globalStep: 1 }, { swarm: "judge", episodeUuid: "j-1", globalStep: 2 }]);
    endWith(h, d, 1);
    expect(Object.keys(h.state.batches).sort()).toEqual(["0:1", "judge@0:2"]);
    seen(h, "ENGINE.ROLLING", 1, pool(1, ["j-1"]), "judge");
    expect(h.state.batches["judge@0:1"]).toMatchObject({ server: "judge", episodesLanded: 1, rewardSum: 1, state: "open" });
    expect(h.state.batches["judge@0:2"]!.episodes.size).toBe(0);
    expect(h.state.steps["0"]?.landed).toEqual({ "0:1": 1 });
  });

  it("a landing the pool does not list stays where it is", () => {
    const { h, sent } = oneServer();
    const [a, b] = sent;
    h.finishEpisode(a!, 1, 2);
    h.finishEpisode(b!, 1, 2);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [uuidOf(a!)]));
    expect([...h.state.batches["0:2"]!.episodes.keys()]).toEqual([uuidOf(b!)]);
    expect(h.state.batches["0:2"]).toMatchObject({ episodesLanded: 1, rewardSum: 1 });
    expect([...h.state.batches["0:1"]!.episodes.keys()]).toEqual([uuidOf(a!)]);
    expect(h.state.steps["0"]?.landed).toEqual({ "0:2": 1, "0:1": 1 });
  });
});

describe("what an observation does to an open batch", () => {
  it("a batch whose step is not known is closed by a later edge into ROLLING, not by a step number", () => {
    const { h, sent } = oneServer();
    const d = sent[0]!;
    seen(h, "ENGINE.ROLLING", null);
    h.finishEpisode(d, 1, null);
    expect(Object.keys(h.state.batches)).toEqual(["0:?"]);
    seen(h, "ENGINE.ROLLING", 3); // a step appears, still the same ROLLING
    expect(h.state.batches["0:?"]!.state).toBe("open");
    seen(h, "ENGINE.WEIGHT_SYNCING", 3);
    seen(h, "ENGINE.ROLLING", 4);
    expect(h.state.batches["0:?"]!.state).toBe("closed");
  });

  it("a batch whose step is known is not closed by an edge into ROLLING that names no step", () => {
    const { h, sent } = oneServer();
    h.finishEpisode(sent[0]!, 1, 1);
    seen(h, "ENGINE.WEIGHT_SYNCING", null);
    seen(h, "ENGINE.ROLLING", null);
    expect(h.state.batches["0:1"]!.state).toBe("open");
  });

  it("a weight sync at an earlier step is not this batch's training: a clean exit afterwards wipes it", () => {
    const { h, sent } = oneServer();
    h.finishEpisode(sent[0]!, 1, 2); // batch 2, while the engine is still at step 1
    seen(h, "ENGINE.WEIGHT_SYNCING", 1);
    expect(h.state.batches["0:2"]!.lastStatus).toBe("ENGINE.ROLLING");
    seen(h, "ENGINE.OFFLINE", 0);
    expect(h.state.batches["0:2"]!.state).toBe("wiped");
  });

  it("a clean exit after training closes it, a BOOTING at step 0 wipes it; the wipe says why", () => {
    const a = oneServer();
    a.h.finishEpisode(a.sent[0]!, 1, 1);
    seen(a.h, "ENGINE.ROLLING_POST", 1);
    seen(a.h, "ENGINE.OFFLINE", 0);
    expect(a.h.state.batches["0:1"]!.state).toBe("closed");

    const b = oneServer();
    b.h.finishEpisode(b.sent[0]!, 1, 1);
    seen(b.h, "ENGINE.ROLLING_POST", 1);
    seen(b.h, "ENGINE.BOOTING", 0);
    expect(b.h.state.batches["0:1"]).toMatchObject({ state: "wiped", wipedWhy: "the engine stopped or restarted before training it" });
  });

  it("seeing the status a batch already has writes no batch row", () => {
    const { h, sent } = oneServer();
    h.finishEpisode(sent[0]!, 1, 1);
    seen(h, "ENGINE.ROLLING_POST", 1);
    expect(h.state.batches["0:1"]!.lastStatus).toBe("ENGINE.ROLLING_POST");
    expect(seen(h, "ENGINE.ROLLING_POST", 1).changes.batches).toEqual([]);
  });
});

describe("the epoch and step a landing is filed under", () => {
  it("an end claimed before a restart lands in its claim's engine epoch, never in the new engine's batch", () => {
    const { h, sent } = oneServer();
    const d = sent[0]!;
    seen(h, "ENGINE.OFFLINE", 1);
    seen(h, "ENGINE.ROLLING", 1); // epoch 1
    h.claim(d, 1);
    h.outcome(d, { kind: "end", reward: 1 });
    seen(h, "ENGINE.OFFLINE", 1);
    seen(h, "ENGINE.ROLLING", 1); // epoch 2: the claim's batch is gone
    h.report(d, "ended");
    expect(h.state.batches["2:1"]).toBeUndefined();
    expect(Object.keys(h.state.batches)).toContain("1:1");
  });

  it("a second server's claim is filed under its own step, or that server's engine step when it names none", () => {
    const { h, sent } = twoServers();
    const [a, b] = sent;
    seen(h, "ENGINE.ROLLING", 2, undefined, "judge");
    claimWith(h, a!, [{ swarm: "policy", episodeUuid: "p-a", globalStep: 1 }, { swarm: "judge", episodeUuid: "j-a", globalStep: null }]);
    endWith(h, a!, 1);
    claimWith(h, b!, [{ swarm: "policy", episodeUuid: "p-b", globalStep: 1 }, { swarm: "judge", episodeUuid: "j-b", globalStep: 3 }]);
    endWith(h, b!, 1);
    expect([...h.state.batches["judge@0:2"]!.episodes.keys()]).toEqual(["j-a"]);
    expect([...h.state.batches["judge@0:3"]!.episodes.keys()]).toEqual(["j-b"]);
  });
});

describe("what a wipe takes back", () => {
  it("a wiped batch's landings no longer count in their window", () => {
    const { h, sent } = oneServer();
    h.finishEpisode(sent[0]!, 1, 1);
    expect(h.state.steps["0"]?.landed).toEqual({ "0:1": 1 });
    seen(h, "ENGINE.BOOTING", 1);
    expect(h.state.batches["0:1"]!.state).toBe("wiped");
    expect(h.state.steps["0"]?.landed ?? {}).toEqual({});
  });

  it("a second server's wipe takes back the window's count of the same episode on the first server", () => {
    const { h, sent } = twoServers();
    h.finishEpisode(sent[0]!, 1, 1);
    expect(h.state.steps["0"]?.landed).toEqual({ "0:1": 1 });
    seen(h, "ENGINE.OFFLINE", 1, undefined, "judge");
    expect(h.state.batches["judge@0:1"]!.state).toBe("wiped");
    expect(h.state.steps["0"]?.landed ?? {}).toEqual({});
  });

  it("each episode a second server's wipe takes back is uncounted from the first server's batch that holds THAT episode", () => {
    const { h, sent } = twoServers();
    const [c, a] = sent;
    claimWith(h, c!, [{ swarm: "policy", episodeUuid: "p-c", globalStep: 1 }, { swarm: "judge", episodeUuid: "j-c", globalStep: 1 }]);
    endWith(h, c!, 1);
    claimWith(h, a!, [{ swarm: "policy", episodeUuid: "p-a", globalStep: 2 }, { swarm: "judge", episodeUuid: "j-a", globalStep: 2 }]);
    endWith(h, a!, 1);
    expect(h.state.steps["0"]?.landed).toEqual({ "0:1": 1, "0:2": 1 });
    seen(h, "ENGINE.OFFLINE", 1, undefined, "judge"); // both judge batches wiped
    expect(h.state.steps["0"]?.landed ?? {}).toEqual({});
  });

  it("a wipe of a landing only the second server holds runs the repeat again", () => {
    const { h, sent } = twoServers();
    const d = sent[0]!;
    claimWith(h, d, [{ swarm: "judge", episodeUuid: "j-1", globalStep: 1 }]);
    endWith(h, d, 1);
    seen(h, "ENGINE.OFFLINE", 1, undefined, "judge");
    expect(h.state.batches["judge@0:1"]!.state).toBe("wiped");
    expect(h.state.run.totals).toMatchObject({ episodesEnded: 0, episodesWiped: 1 });
  });

  it("a pool that no longer lists a confirmed landing wipes the batch and says why", () => {
    const { h, sent } = oneServer();
    const d = sent[0]!;
    h.finishEpisode(d, 1, 1);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [uuidOf(d)]));
    seen(h, "ENGINE.ROLLING", 1, pool(1, []));
    expect(h.state.batches["0:1"]).toMatchObject({ state: "wiped", wipedWhy: "the pool information no longer lists episodes it listed for this step" });
  });

  it("a status that says nothing of the batch (WEIGHT_EXPORTING) leaves its last status: a clean exit after ROLLING_POST still trained it", () => {
    const { h, sent } = oneServer();
    h.finishEpisode(sent[0]!, 1, 1);
    seen(h, "ENGINE.ROLLING_POST", 1);
    seen(h, "ENGINE.WEIGHT_EXPORTING", 1);
    expect(h.state.batches["0:1"]!.lastStatus).toBe("ENGINE.ROLLING_POST");
    seen(h, "ENGINE.OFFLINE", 0);
    expect(h.state.batches["0:1"]!.state).toBe("closed");
  });

  it("a batch whose sync was seen when the run finishes is closed as trained", () => {
    const h = new Harness(specInput({ batchSize: 1, numRepeat: 1, maxParallel: 1, maxSteps: 2 }));
    h.start();
    h.rolling(1);
    const [d] = h.takeDispatches();
    h.finishEpisode(d!, 1, 1);
    h.engine("ENGINE.WEIGHT_SYNCING", 1);
    h.apply({ type: "stopRequested" });
    expect(h.state.run.phase).toBe("finished");
    expect(h.state.batches["0:1"]).toMatchObject({ state: "closed", closedAtMs: h.nowMs });
  });
});

describe("more of what a pool moves, opens and marks", () => {
  it("a pool of an older step listing our landing moves nothing, and a pool of a step we have no landing in opens no batch", () => {
    const { h, sent } = oneServer();
    const d = sent[0]!;
    h.finishEpisode(d, 1, 2);
    seen(h, "ENGINE.ROLLING", 1, pool(0, [uuidOf(d)]));
    expect(Object.keys(h.state.batches)).toEqual(["0:2"]);
    seen(h, "ENGINE.ROLLING", 1, pool(1, ["other-1"]));
    expect(Object.keys(h.state.batches)).toEqual(["0:2"]);
    expect([...h.state.batches["0:2"]!.episodes.keys()]).toEqual([uuidOf(d)]);
  });

  it("an end claimed after a restart with no known server lands in the claim's epoch, not the epoch at the report", () => {
    const { h, sent } = oneServer();
    const d = sent[0]!;
    seen(h, "ENGINE.OFFLINE", 1);
    seen(h, "ENGINE.ROLLING", 1); // epoch 1
    claimWith(h, d, [{ swarm: "ghost", episodeUuid: "g-1", globalStep: 1 }]);
    h.outcome(d, { kind: "end", reward: 1 });
    seen(h, "ENGINE.OFFLINE", 1);
    seen(h, "ENGINE.ROLLING", 1); // epoch 2
    h.report(d, "ended");
    expect(Object.keys(h.state.batches)).toEqual(["1:1"]);
  });

  it("a partial end keeps its window, and is not added to a batch the server already trained", () => {
    const two = twoServers({ numRepeat: 1, maxParallel: 1 });
    two.h.finishEpisode(two.sent[0]!, 1, 1);
    seen(two.h, "ENGINE.ROLLING", 2, undefined, "policy");
    seen(two.h, "ENGINE.ROLLING", 2, undefined, "judge");
    const [w1] = two.h.takeDispatches();
    expect(two.h.row(w1!.episodeKey)?.windowIndex).toBe(1);
    two.h.claim(w1!, 2);
    two.h.outcome(w1!, { kind: "end", reward: 0.5 });
    two.h.apply({ type: "episodeReported", episodeKey: w1!.episodeKey, attempt: 1, result: "lost", cause: "lost:engineNotRolling", endedSwarms: ["judge"] });
    expect(two.h.state.batches["judge@0:2"]!.episodes.get(`${uuidOf(w1!)}-judge`)?.windowIndex).toBe(1);

    const { h, sent } = twoServers();
    const [a, b] = sent;
    h.finishEpisode(a!, 1, 1);
    h.claim(b!, 1);
    h.outcome(b!, { kind: "end", reward: 0.5 });
    seen(h, "ENGINE.ROLLING", 2, undefined, "judge"); // judge@0:1 trained
    expect(h.state.batches["judge@0:1"]!.state).toBe("closed");
    h.apply({ type: "episodeReported", episodeKey: b!.episodeKey, attempt: 1, result: "lost", cause: "lost:engineNotRolling", endedSwarms: ["judge"] });
    expect(h.state.batches["judge@0:1"]!.episodes.size).toBe(0);
  });

  it("a wipe marks as run-again-elsewhere only the landings of the episodes it takes, on the other servers", () => {
    const { h, sent } = twoServers();
    const [a, c] = sent;
    claimWith(h, a!, [{ swarm: "policy", episodeUuid: "p-a", globalStep: 1 }, { swarm: "judge", episodeUuid: "j-a", globalStep: 1 }]);
    endWith(h, a!, 1);
    claimWith(h, c!, [{ swarm: "policy", episodeUuid: "p-c", globalStep: 1 }, { swarm: "judge", episodeUuid: "j-c", globalStep: 2 }]);
    endWith(h, c!, 1);
    seen(h, "ENGINE.ROLLING", 1, pool(1, ["j-a"]), "judge"); // confirms j-a
    seen(h, "ENGINE.ROLLING", 1, pool(1, []), "judge"); // j-a no longer listed: judge@0:1 wiped
    expect(h.state.batches["judge@0:1"]!.state).toBe("wiped");
    const policy = h.state.batches["0:1"]!;
    expect(policy.episodes.get("p-a")?.rerunElsewhere).toBe(true);
    expect(policy.episodes.get("p-c")?.rerunElsewhere ?? false).toBe(false);
  });
});

describe("what the pool says", () => {
  it("is read only while the engine collects the pool's step: at a sync, at another step or with no step it records nothing", () => {
    const { h, sent } = oneServer();
    h.finishEpisode(sent[0]!, 1, 1);
    const before = h.state.batches["0:1"]!;
    seen(h, "ENGINE.WEIGHT_SYNCING", 1, pool(1, ["other-1"], { completedTasks: 3, completedTaskTarget: 8 }));
    seen(h, "ENGINE.ROLLING", 1, pool(0, ["other-2"], { completedTasks: 3, completedTaskTarget: 8 }));
    expect(h.state.batches["0:1"]).toMatchObject({ foreignEpisodes: before.foreignEpisodes, poolCompletedTasks: null, poolTaskTarget: null });

    const n = oneServer();
    seen(n.h, "ENGINE.ROLLING", null);
    n.h.finishEpisode(n.sent[0]!, 1, null);
    seen(n.h, "ENGINE.ROLLING", null, pool(null, ["other-1"], { completedTasks: 3, completedTaskTarget: 8 }));
    expect(n.h.state.batches["0:?"]).toMatchObject({ foreignEpisodes: 0, poolCompletedTasks: null });
  });

  it("our own running episode listed by the pool is not another client's; a target of 0 keeps the last known target", () => {
    const { h, sent } = oneServer();
    const [a, b] = sent;
    h.finishEpisode(a!, 1, 1);
    h.claim(b!, 1); // running, its uuid on this server
    seen(h, "ENGINE.ROLLING", 1, pool(1, [uuidOf(a!), uuidOf(b!), "other-1"], { completedTasks: 1, completedTaskTarget: 8 }));
    expect(h.state.batches["0:1"]).toMatchObject({ foreignEpisodes: 1, poolCompletedTasks: 1, poolTaskTarget: 8 });
    seen(h, "ENGINE.ROLLING", 1, pool(1, [uuidOf(a!), uuidOf(b!), "other-1"], { completedTasks: 2, completedTaskTarget: 0 }));
    expect(h.state.batches["0:1"]).toMatchObject({ poolCompletedTasks: 2, poolTaskTarget: 8 });
  });

  it("an episode of ours given up before its end (aborted at a stop) that the pool still lists counts as another client's", () => {
    const { h, sent } = oneServer({ numRepeat: 3, maxParallel: 3 });
    const [a, b, c] = sent;
    h.finishEpisode(a!, 1, 1); // landed
    h.claim(b!, 1); // still running: ours
    h.claim(c!, 1);
    h.apply({ type: "stopRequested" });
    h.report(c!, "aborted"); // will never land in our batch
    expect(h.row(c!.episodeKey)?.status).toBe("aborted");
    seen(h, "ENGINE.ROLLING", 1, pool(1, [uuidOf(a!), uuidOf(b!), uuidOf(c!), "other-1"]));
    expect(h.state.batches["0:1"]!.foreignEpisodes).toBe(2);
  });

  it("counts other clients' complete non-dummy tasks from the per-task rewards, never a task holding one of ours", () => {
    const { h, sent } = oneServer();
    const [a] = sent;
    h.finishEpisode(a!, 1, 1);
    seen(h, "ENGINE.ROLLING", 1, pool(1, [uuidOf(a!), "o1", "o2", "o3", "o4", "o5", "o6"], {
      taskEpisodes: { ours: [uuidOf(a!), "o5"], t1: ["o1", "o2"], t2: ["o3", "o4"], t3: ["o6"] },
      taskRewards: { ours: [1, 0], t1: [1, 0], t2: [1, 1], t3: [0] },
    }));
    // t1: complete (2 = numRepeat) with different rewards; t2: all the same (a dummy task); t3: incomplete; ours: ours
    expect(h.state.batches["0:1"]!.poolForeignNonDummyTasks).toBe(1);
  });
});

describe("a wipe on one server of a multi-server episode", () => {
  it("an end accepted on both servers whose second server's batch was already wiped runs again, not counted", () => {
    const { h, sent } = twoServers();
    const [a, b] = sent;
    h.finishEpisode(a!, 1, 1); // lands in 0:1 and judge@0:1
    h.claim(b!, 1);
    h.outcome(b!, { kind: "end", reward: 1 });
    seen(h, "ENGINE.OFFLINE", 1, undefined, "judge");
    seen(h, "ENGINE.ROLLING", 1, undefined, "judge");
    expect(h.state.batches["judge@0:1"]!.state).toBe("wiped");
    // the landing of a on the first server stays there, marked as run again elsewhere (never re-run or uncounted twice)
    expect(h.state.batches["0:1"]!.episodes.get(uuidOf(a!))?.rerunElsewhere).toBe(true);
    h.report(b!, "ended");
    expect(h.row(b!.episodeKey)).toMatchObject({ attempt: 2, lastCause: "wiped" });
    expect(h.state.run.totals.episodesEnded).toBe(0);
  });

  it("a partial end accepted on the second server only lands there, unconfirmed, and nowhere else", () => {
    const { h, sent } = twoServers();
    const [a] = sent;
    h.claim(a!, 1);
    h.outcome(a!, { kind: "end", reward: 0.5 });
    h.apply({ type: "episodeReported", episodeKey: a!.episodeKey, attempt: 1, result: "lost", cause: "lost:engineNotRolling", endedSwarms: ["judge"] });
    expect(Object.keys(h.state.batches)).toEqual(["judge@0:1"]);
    const landed = h.state.batches["judge@0:1"]!.episodes.get(`${uuidOf(a!)}-judge`);
    expect(landed).toMatchObject({ episodeKey: a!.episodeKey, confirmed: false, rerunElsewhere: true, windowIndex: 0 });
  });
});
