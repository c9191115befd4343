import { describe, expect, it } from "vitest";
import { Draft } from "../../../src/scheduler/draft.ts";
import { RunSpec, decide, initialState } from "../../../src/scheduler/index.ts";
import { deepFreeze, specInput } from "./harness.ts";

function rolling() {
  let state = initialState(RunSpec.parse(specInput({ batchSize: 1, numRepeat: 2 })), { gsm8k: 10 });
  state = decide(state, { type: "runStarted" }, 0).state;
  return decide(state, { type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 1 }, 0).state;
}

describe("Draft (copy-on-write working state)", () => {
  it("never mutates the base and reports exactly the rows it touched", () => {
    const base = deepFreeze(rolling());
    const [key, other] = [...base.episodes.keys()];
    const d = new Draft(base, 5);
    d.patchEpisode(key!, { claimFailures: 3 });
    d.count(d.run.failuresByCause, "expired");
    d.log("info", "hello", { n: 1 });
    const out = d.done({ status: "applied" });
    expect(base.episodes.get(key!)?.claimFailures).toBe(0);
    expect(out.changes.episodes.map((r) => r.episodeKey)).toEqual([key]);
    expect(out.changes.episodes[0]).toMatchObject({ claimFailures: 3, updatedAtMs: 5 });
    expect(out.state.episodes.get(other!)).toBe(base.episodes.get(other!)); // untouched rows are shared
    expect(out.changes.run?.failuresByCause).toEqual({ expired: 1 });
    expect(out.commands).toEqual([{ type: "log", level: "info", message: "hello", fields: { n: 1 } }]);
  });

  it("returns the very same state and no changes when nothing changed", () => {
    const base = deepFreeze(rolling());
    const out = new Draft(base, 5).done({ status: "duplicate" });
    expect(out.state).toBe(base);
    expect(out.changes).toEqual({ run: null, episodes: [], deletedEpisodeKeys: [], steps: [], evalTasks: [], batches: [], landed: [] });
  });

  it("reports a deleted row only if it was stored before (a row created and deleted in one decision is neither)", () => {
    const base = deepFreeze(rolling());
    const [key] = [...base.episodes.keys()];
    const d = new Draft(base, 5);
    d.deleteEpisode(key!);
    d.putEpisode({ ...base.episodes.get(key!)!, episodeKey: "temp#0" });
    d.deleteEpisode("temp#0");
    expect(d.done({ status: "applied" }).changes).toMatchObject({ episodes: [], deletedEpisodeKeys: [key] });
  });
});
