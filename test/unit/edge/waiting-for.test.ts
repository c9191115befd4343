/**
 * What a run waits for, in plain words (edge/run/waiting-for, `GET /runs/:id` → `waitingFor`): the engine booting,
 * someone else to start it, a weight sync, nothing to claim, the drain — and nothing while episodes run.
 */
import { describe, expect, it } from "vitest";
import { waitingFor } from "../../../src/edge/run/waiting-for.ts";
import { ENGINE } from "../../../src/protocol/index.ts";

const URL = "http://gpu:10086";
const urls = { default: URL };
type Status = Parameters<typeof waitingFor>[0];
const status = (o: Partial<Status> & { engineStatus?: string; inFlight?: number; queued?: number } = {}): Status => ({
  phase: o.phase ?? "running",
  stopReason: o.stopReason ?? null,
  engines: [{ swarm: "default", engineStatus: o.engineStatus ?? ENGINE.ROLLING, globalStep: 3, seenAtMs: 1 }],
  gateOpen: (o.engineStatus ?? ENGINE.ROLLING) === ENGINE.ROLLING,
  currentWindow: o.currentWindow ?? null,
  episodes: { queued: o.queued ?? 0, dispatched: 0, running: o.inFlight ?? 0, reporting: 0, ended: 0, failed: 0, aborted: 0, dropped: 0, inFlight: o.inFlight ?? 0, maxParallel: 8 },
});

describe("waitingFor", () => {
  it("names the engine boot with its age and when the run gives up", () => {
    const line = waitingFor(status({ engineStatus: ENGINE.BOOTING }), { default: { kind: "booting", sinceMs: 0, timeoutAtMs: 1_800_000 } }, urls, null, 65_000);
    expect(line).toBe(`engine booting on ${URL} for 65 s (the run fails if it is not ROLLING 1800 s after the start)`);
  });

  it('says who must start an OFFLINE engine under start: "never", and an engine stopped by another client', () => {
    expect(waitingFor(status({ engineStatus: ENGINE.OFFLINE }), { default: { kind: "waitingForStart" } }, urls, null, 0)).toContain('engine policy is start: "never": start it on the server');
    expect(waitingFor(status({ engineStatus: ENGINE.OFFLINE }), { default: { kind: "stoppedElsewhere", atMs: 0 } }, urls, null, 0)).toBe(
      `the engine on ${URL} was stopped by another client (or its training process exited): start it again, or stop this run`,
    );
  });

  it("names a weight sync with the step being trained, and a complete window waiting for it", () => {
    expect(waitingFor(status({ engineStatus: ENGINE.WEIGHT_SYNCING }), {}, urls, null, 0)).toBe(`weight sync on ${URL}: the engine trains step 3; the next window opens when it is ROLLING again`);
    const window = { windowIndex: 0, globalStep: 3, groupsOpened: 2, groupsResolved: 2, episodesEnded: 8, meanReward: 0.5, waitingForEngine: true };
    expect(waitingFor(status({ currentWindow: window }), {}, urls, null, 0)).toContain("every episode of the window is resolved");
  });

  it("says nothing to claim when episodes wait and none is in flight; null while episodes run", () => {
    expect(waitingFor(status({ queued: 4 }), {}, urls, null, 0)).toContain("nothing to claim");
    expect(waitingFor(status({ inFlight: 4, queued: 4 }), {}, urls, null, 0)).toBeNull();
  });

  it("says the drain and why (stopped, or failed with the reason); null once finished", () => {
    expect(waitingFor(status({ phase: "draining", stopReason: "stopRequested", inFlight: 2 }), {}, urls, null, 0)).toBe("the run was stopped: waiting for 2 in-flight episodes to finish or be aborted");
    expect(waitingFor(status({ phase: "draining", stopReason: "failed", inFlight: 1 }), {}, urls, "batch size 4 ≠ 8", 0)).toBe("the run failed (batch size 4 ≠ 8): waiting for 1 in-flight episode to finish or be aborted");
    expect(waitingFor(status({ phase: "finished" }), {}, urls, null, 0)).toBeNull();
  });
});
