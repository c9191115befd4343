/**
 * @module bench/scheduler.bench — the pure core's cost per event, over a whole run: batch 32 × numRepeat 8 for
 * 10 training steps (2,560 episodes, ~7,700 episode events plus ticks and status events), with a fake server that
 * claims and ends every dispatched episode at once. Also the state's size in memory at the end. And the same with
 * every episode in flight at once (issue 11: batch 500 × 4 = 2,000 claimed before the first ends), timed per event:
 * the cost of one event must not grow with the number of live episodes.
 */
import { performance } from "node:perf_hooks";
import { RunSpec, decide, initialState, runStatus, type SchedulerCommand, type SchedulerEvent, type SchedulerState } from "../src/scheduler/index.ts";
import { summarize, type BenchResult } from "./harness.ts";

interface RunOutcome {
  events: number;
  ms: number;
  episodes: number;
  stateBytes: number;
}

/** Drives one whole run through `decide` and counts the events. */
function driveRun(batchSize: number, numRepeat: number, steps: number): RunOutcome {
  const spec = RunSpec.parse({
    swarms: [{ url: "http://127.0.0.1:10086" }],
    datasets: [{ name: "bench", weight: 1 }],
    function: "countdown",
    batchSize,
    numRepeat,
    maxEnvWorker: batchSize * numRepeat,
    maxSteps: steps,
  });
  let state: SchedulerState = initialState(spec, { bench: batchSize * (steps + 2) });
  let nowMs = 1_000_000;
  let events = 0;
  let episodes = 0;
  let step = 1;
  const queue: SchedulerCommand[] = [];
  const apply = (e: SchedulerEvent) => {
    const d = decide(state, e, nowMs);
    state = d.state;
    queue.push(...d.commands);
    events++;
  };
  const t0 = performance.now();
  apply({ type: "runStarted" });
  apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: step });
  for (let guard = 0; guard < 100_000 && state.run.phase !== "finished"; guard++) {
    const c = queue.shift();
    if (!c) {
      // every dispatched episode of the window has ended: the server trains and rolls the next step
      nowMs += 1000;
      step++;
      apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.WEIGHT_SYNCING", globalStep: step - 1 });
      apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: step });
      apply({ type: "tick" });
      continue;
    }
    if (c.type === "pollEngineStatus") apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: step });
    if (c.type !== "dispatchEpisodes") continue;
    for (const d of c.episodes) {
      nowMs += 1;
      apply({ type: "episodeClaimed", episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, claims: [{ swarm: "default", episodeUuid: `${d.episodeKey}@${d.attempt}`, globalStep: step }] });
      apply({ type: "episodeOutcomeRecorded", episodeKey: d.episodeKey, attempt: d.attempt, outcome: { kind: "end", reward: (d.taskIndex + d.repeat) % 2 } });
      apply({ type: "episodeReported", episodeKey: d.episodeKey, attempt: d.attempt, result: "ended" });
      episodes++;
    }
  }
  const ms = performance.now() - t0;
  return { events, ms, episodes, stateBytes: JSON.stringify(state).length };
}

/**
 * Drives `steps` windows of `batchSize` × 4 with every episode of a window in flight together: all claimed, then
 * all outcomes recorded, then all reported. Returns each event's `decide` time (ms).
 */
function driveAllInFlight(batchSize: number, steps: number): { times: number[]; statusMs: number[]; peakStateBytes: number } {
  const numRepeat = 4;
  const spec = RunSpec.parse({
    swarms: [{ url: "http://127.0.0.1:10086" }], datasets: [{ name: "bench", weight: 1 }], function: "countdown",
    batchSize, numRepeat, maxEnvWorker: batchSize * numRepeat, maxSteps: steps,
  });
  let state: SchedulerState = initialState(spec, { bench: batchSize * (steps + 2) });
  let nowMs = 1_000_000;
  let step = 1;
  const times: number[] = [];
  const statusMs: number[] = [];
  let peakStateBytes = 0;
  const apply = (e: SchedulerEvent): SchedulerCommand[] => {
    const t0 = performance.now();
    const d = decide(state, e, nowMs);
    times.push(performance.now() - t0);
    state = d.state;
    return d.commands;
  };
  let commands = [...apply({ type: "runStarted" }), ...apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: step })];
  for (let s = 0; s < steps && state.run.phase !== "finished"; s++) {
    const sent = commands.flatMap((c) => (c.type === "dispatchEpisodes" ? c.episodes : []));
    for (const d of sent) {
      nowMs++;
      apply({ type: "episodeClaimed", episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, claims: [{ swarm: "default", episodeUuid: `${d.episodeKey}@${d.attempt}`, globalStep: step }] });
      if (nowMs % 20 === 0) {
        // the status view (GET /runs/:id) as the object builds it, every 20th event while the window is claimed
        const t0 = performance.now();
        runStatus(state);
        statusMs.push(performance.now() - t0);
      }
    }
    peakStateBytes = Math.max(peakStateBytes, JSON.stringify(state).length);
    for (const d of sent) {
      nowMs++;
      apply({ type: "episodeOutcomeRecorded", episodeKey: d.episodeKey, attempt: d.attempt, outcome: { kind: "end", reward: (d.taskIndex + d.repeat) % 2 } });
    }
    for (const d of sent) {
      nowMs++;
      apply({ type: "episodeReported", episodeKey: d.episodeKey, attempt: d.attempt, result: "ended" });
    }
    nowMs += 1000;
    step++;
    apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.WEIGHT_SYNCING", globalStep: step - 1 });
    commands = [...apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: step }), ...apply({ type: "tick" })];
  }
  return { times, statusMs, peakStateBytes };
}

/** Runs the scheduler benchmark (three runs; the median is reported). */
export async function schedulerBenchmarks(): Promise<BenchResult[]> {
  const runs = [driveRun(32, 8, 10), driveRun(32, 8, 10), driveRun(32, 8, 10)].sort((a, b) => a.ms - b.ms);
  const r = runs[1]!;
  const perEventMs = r.ms / r.events;
  return [
    {
      name: `scheduler: decide per event (batch 32 × R 8, 10 steps, ${r.episodes} episodes)`,
      calls: r.events,
      meanMs: perEventMs,
      p50Ms: perEventMs,
      p99Ms: perEventMs,
      maxMs: perEventMs,
      opsPerSec: (r.events / r.ms) * 1000,
      note: `whole run ${r.ms.toFixed(0)} ms; final state ${(r.stateBytes / 1024).toFixed(0)} KiB as JSON`,
    },
    ...[100, 500].flatMap((batch) => {
      const run = driveAllInFlight(batch, 3);
      return [
        summarize(`scheduler: decide per event, ${batch * 4} in flight (batch ${batch} × R 4, 3 steps)`, run.times, {
          note: `all of a window claimed before the first ends; the window-opening event (creates and dispatches every row) is the max; state with every episode in flight ${(run.peakStateBytes / 1024).toFixed(0)} KiB as JSON`,
        }),
        summarize(`scheduler: status view (runStatus), ${batch * 4} in flight`, run.statusMs),
      ];
    }),
  ];
}
