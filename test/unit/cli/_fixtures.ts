/** @module test/unit/cli/_fixtures — status views and step rows for the dev command's pure renderers and checks. */
import type { RunView } from "../../../src/cli/dev/runs-api.ts";
import type { WindowSummary } from "../../../src/scheduler/index.ts";

/** One step row: 8 groups opened and completed; `wallTimeMs` null while the engine has not moved past it. */
export function step(windowIndex: number, episodesEnded: number, meanReward: number | null, wallTimeMs: number | null): WindowSummary {
  return {
    windowIndex, globalStep: windowIndex + 1, episodesEnded, meanReward, wallTimeMs, groupsOpened: 8, groupsCompleted: 8,
    groupsDropped: 0, groupsAbandoned: 0, replacementGroups: 0, droppedGroupKeys: [], sourceGroups: { countdown: 8 }, partial: false, episodesOffStep: 0,
    globalSteps: [windowIndex + 1], openedAtGlobalStep: windowIndex + 1, topUpGroups: 0, rerunGroups: 0, episodesWiped: 0, extraGroups: 0, groupsCut: 0,
  };
}

/** A status view in the middle of step 2 of 3: step 1 trained (reward 0.25), 20 of 32 episodes of step 2 ended. */
export function midRun(over: Partial<RunView> = {}): RunView {
  return {
    runId: "run-1", createdAtMs: 0, finishedAtMs: null, function: "countdown", swarms: [], datasets: {}, phase: "running", stopReason: null, episodeType: "train", gateOpen: true,
    engines: [{ swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 2, seenAtMs: 0 }],
    globalStep: 2,
    currentWindow: { windowIndex: 1, globalStep: 2, groupsOpened: 8, groupsResolved: 5, episodesEnded: 20, meanReward: 0.45, waitingForEngine: false },
    episodes: { queued: 0, dispatched: 4, running: 8, reporting: 0, ended: 20, failed: 0, aborted: 0, dropped: 0, inFlight: 12, maxParallel: 32 },
    steps: [step(0, 32, 0.25, 2100), step(1, 20, 0.45, null)],
    totals: { windows: 2, episodesEnded: 52, groupsOpened: 16, groupsCompleted: 13, groupsDropped: 0, groupsAbandoned: 0, attemptsFailed: 0, claimFailures: 0, dispatches: 52, reconciles: 0, episodesWiped: 0, groupsRerun: 0, groupsToppedUp: 0, endsUnresolved: 0, endsInferred: 0, endsUnknown: 0, groupsCut: 0, episodesCut: 0, meanReward: 0.33 },
    failuresByCause: {}, claimFailuresByKind: {}, firstFailure: null, sources: [], nextWakeAtMs: null, log: [], waitingFor: null, failure: null, engineNotes: {},
    batches: { open: [], trained: 1, wiped: 0, episodesTrained: 32, episodesUntrained: 20, episodesWiped: 0, groupsRerun: 0, groupsToppedUp: 0, exactMix: true, note: null },
    ...over,
  };
}
