import { describe, expect, it } from "vitest";
import { batchKeyOf, runStatus, serverOfBatchKey, stepOfBatchKey } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

/** A train run on two swarm servers ("policy" first, "judge" second): one group of 2 repeats, one step. */
function twoServers(overrides = {}) {
  const h = new Harness(specInput({
    swarms: [{ name: "policy", url: "http://127.0.0.1:10086" }, { name: "judge", url: "http://127.0.0.1:10087" }],
    batchSize: 1, numRepeat: 2, maxParallel: 2, maxSteps: 1, ...overrides,
  }));
  h.start();
  h.rolling(1);
  return h;
}
const seen = (h: Harness, swarm: string, engineStatus: string, globalStep: number | null, pool?: { globalStep: number; completedTasks: number; completedTaskTarget: number; episodeUuids: string[] }) =>
  h.apply({ type: "engineStatusSeen", swarm, engineStatus, globalStep, ...(pool ? { pool } : {}) });

describe("batch truth on every swarm server of a run", () => {
  it("batch keys name the server for all but the first, and still carry the global step", () => {
    expect(batchKeyOf(0, 1)).toBe("0:1");
    expect(batchKeyOf(2, 7, "judge:v2")).toBe("judge:v2@2:7");
    expect(stepOfBatchKey("judge:v2@2:7")).toBe(7);
    expect(serverOfBatchKey("judge:v2@2:7")).toBe("judge:v2");
    expect(serverOfBatchKey("0:1")).toBeNull();
  });

  it("each claim's reward lands in its own server's batch; the run finishes only once both servers trained them", () => {
    const h = twoServers();
    h.serveAll(1);
    expect(Object.keys(h.state.batches).sort()).toEqual(["0:1", "judge@0:1"]);
    expect(Object.values(h.state.batches).map((b) => [b.batchKey, b.server ?? null, b.episodes.size])).toEqual(
      expect.arrayContaining([["0:1", null, 2], ["judge@0:1", "judge", 2]]),
    );
    expect(h.state.run.phase).toBe("finishing");
    seen(h, "policy", "ENGINE.ROLLING", 2);
    expect(h.state.batches["0:1"]?.state).toBe("closed");
    expect(h.state.run.phase).toBe("finishing"); // the judge's batch is complete and will close: waited for
    expect(runStatus(h.state).batches.open.map((b) => [b.batchKey, b.server])).toEqual([["judge@0:1", "judge"]]);
    seen(h, "judge", "ENGINE.ROLLING", 2);
    expect(h.state.batches["judge@0:1"]?.state).toBe("closed");
    expect(h.state.run).toMatchObject({ phase: "finished", untrainedRewards: 0 });
    expect(h.state.run.totals.episodesEnded).toBe(2);
  });

  it("a wipe on one server re-runs the group once; its copy on the other server stays tracked, neither counted nor re-run twice", () => {
    const h = twoServers();
    h.serveAll(1);
    seen(h, "judge", "ENGINE.OFFLINE", 0); // the judge's engine restarted before training step 1
    expect(h.state.batches["judge@0:1"]?.state).toBe("wiped");
    expect(h.state.run.totals).toMatchObject({ episodesEnded: 0, episodesWiped: 2, groupsRerun: 1 });
    const policy = [...h.state.batches["0:1"]!.episodes.values()];
    expect(policy.map((e) => e.rerunElsewhere)).toEqual([true, true]); // the rewards are still on the policy server
    expect(h.state.steps["0"]?.landed ?? {}).toEqual({});
    // the policy server loses its batch too: nothing more to uncount or re-run
    seen(h, "policy", "ENGINE.OFFLINE", 0);
    expect(h.state.run.totals).toMatchObject({ episodesEnded: 0, episodesWiped: 2, groupsRerun: 1 });
  });

  it("after a one-server wipe the re-run lands on both servers and the run finishes with every reward trained", () => {
    const h = twoServers();
    h.serveAll(1);
    seen(h, "judge", "ENGINE.OFFLINE", 0);
    expect(h.takeDispatches()).toEqual([]); // the gate is closed while the judge is down
    seen(h, "judge", "ENGINE.ROLLING", 1); // back, a new engine epoch
    expect(h.serveAll(1)).toBe(2);
    expect(h.state.batches["0:1"]!.episodes.size).toBe(4); // the first copy and the re-run, one task id
    expect(h.state.batches["judge@1:1"]!.episodes.size).toBe(2);
    seen(h, "policy", "ENGINE.ROLLING", 2);
    seen(h, "judge", "ENGINE.ROLLING", 2);
    expect(h.state.run).toMatchObject({ phase: "finished", untrainedRewards: 0 });
    expect(h.state.run.totals).toMatchObject({ episodesEnded: 2, episodesWiped: 2, groupsRerun: 1 });
    expect(h.state.steps["0"]?.landed).toEqual({ "0:1": 2 });
  });

  it("another server's batch that lacks tasks while its engine collects it is not waited for: the run finishes and reports those rewards untrained", () => {
    const h = twoServers();
    h.serveAll(1);
    const judgeUuids = [...h.state.batches["judge@0:1"]!.episodes.keys()];
    // the judge's server trains batches of 2 tasks: ours is 1 of them
    seen(h, "judge", "ENGINE.ROLLING", 1, { globalStep: 1, completedTasks: 1, completedTaskTarget: 2, episodeUuids: judgeUuids });
    expect(h.state.run.phase).toBe("finishing");
    seen(h, "policy", "ENGINE.ROLLING", 2);
    expect(h.state.run).toMatchObject({ phase: "finished", untrainedRewards: 2 });
    expect(h.commands.some((c) => c.type === "log" && c.message.startsWith("another server's batch holds this run's rewards"))).toBe(true);
  });

  it("the pool information is read for every server whose batch holds the run's rewards", () => {
    const h = twoServers();
    h.serveAll(1);
    h.advance(5_000);
    const polls = h.commands.filter((c) => c.type === "pollEngineStatus");
    expect(polls.at(-1)).toMatchObject({ swarms: ["policy", "judge"], withPool: ["policy", "judge"] });
  });

  it("an end accepted on one server and lost on the other: the repeat runs again, and the accepted reward stays tracked in its server's batch without counting", () => {
    const h = twoServers();
    const [a, b] = h.takeDispatches();
    h.finishEpisode(a!, 1, 1);
    h.claim(b!, 1);
    h.outcome(b!, { kind: "end", reward: 0.5 });
    h.apply({ type: "episodeReported", episodeKey: b!.episodeKey, attempt: 1, result: "lost", cause: "lost:engineNotRolling", endedSwarms: ["policy"] });
    expect(h.row(b!.episodeKey)).toMatchObject({ attempt: 2, lastCause: "lost:engineNotRolling" });
    expect(h.state.run.totals.episodesEnded).toBe(1);
    const onPolicy = [...h.state.batches["0:1"]!.episodes.values()];
    expect(onPolicy.map((e) => [e.episodeKey, e.rerunElsewhere ?? false])).toEqual([[a!.episodeKey, false], [b!.episodeKey, true]]);
    expect(h.state.batches["judge@0:1"]!.episodes.size).toBe(1);
  });
});
