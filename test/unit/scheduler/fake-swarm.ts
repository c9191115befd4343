/**
 * @module test/unit/scheduler/fake-swarm — a fake swarm server and fake consumers around the pure core (1 s clock
 * steps), faithful to the one rule that matters for batch windows: the engine closes a batch only when `batchSize`
 * DISTINCT task ids have ≥ `numRepeat` ended episodes each (spec §7.3 `rollout_until_finish_enough_tasks`), and two
 * groups of one task id count as ONE task. Task ids are `<source>:train:<row>` (BC-30: the same in every epoch).
 */
import { nextWakeAtMs, type EpisodeDispatch } from "../../../src/scheduler/index.ts";
import type { Harness } from "./harness.ts";

/** How the fake consumers behave. */
export interface FakeSwarmOptions {
  /** episode run time in ms (default 5–11 s by task) */
  durationMs?: (d: EpisodeDispatch) => number;
  /** true → the consumer records an abort (`function_error`) instead of an end */
  fails?: (d: EpisodeDispatch) => boolean;
  /** the reward of an ended episode (default 1) */
  reward?: (d: EpisodeDispatch) => number;
  /** weight sync time in ms (default 20 s) */
  trainMs?: number;
  /** clock steps at most before giving up (a stall) */
  maxSteps?: number;
  /**
   * another client stops and restarts the engine once, when the open batch holds this many ended episodes: the
   * batch and every claimed record are wiped (spec §4.3), the engine boots for `bootMs` and rolls again at step 1
   */
  restart?: { whenBatchHolds: number; bootMs: number };
  /** another client's episodes: this many complete foreign tasks join every batch as soon as it opens */
  foreignTasksPerBatch?: number;
}

/** What the fake server saw. */
export interface FakeSwarmRun {
  /** one per closed batch: task id → the rewards of its ended episodes */
  batches: Map<string, number[]>[];
  /** the batch still open when the run finished (a partial last window never closes) */
  openBatch: Map<string, number[]>;
  /** batches wiped by the restart, with what they held */
  wiped: Map<string, number[]>[];
  /** ended episodes the server refused (their record was wiped under them) */
  refusedEnds: number;
  /** every dispatch, in order */
  dispatched: EpisodeDispatch[];
  /** per window: the instant its first episode was dispatched (epoch ms) */
  firstDispatchAtMs: number[];
  /** per window: the instant the core first saw the engine ROLLING again after training it (epoch ms) */
  rolledAtMs: number[];
  /** clock steps taken */
  steps: number;
}

/** The server's task id of a dispatch (`<source>:train:<row>`). */
export const taskIdOf = (d: Pick<EpisodeDispatch, "source" | "taskIndex">): string => `${d.source}:train:${d.taskIndex}`;

/**
 * Runs a started-or-not harness against the fake server until the run finishes or `maxSteps` clock steps pass.
 * The engine boots at the 3rd step, then ROLLING → ROLLING_POST (batch full) → WEIGHT_SYNCING (nothing running) →
 * ROLLING at step + 1.
 */
export function runWithFakeSwarm(h: Harness, options: FakeSwarmOptions = {}): FakeSwarmRun {
  const { batchSize, numRepeat } = h.state.run.config;
  const durationMs = options.durationMs ?? ((d: EpisodeDispatch) => (5 + (d.taskIndex % 7)) * 1000);
  const server = { status: "ENGINE.BOOTING", step: 1, batch: new Map<string, number[]>(), trainUntilMs: 0, generation: 0, bootUntilMs: 0, restarted: false };
  const out: FakeSwarmRun = { batches: [], openBatch: server.batch, wiped: [], refusedEnds: 0, dispatched: [], firstDispatchAtMs: [], rolledAtMs: [], steps: 0 };
  const inbox: EpisodeDispatch[] = [];
  const running: { d: EpisodeDispatch; doneAtMs: number; generation: number }[] = [];
  const foreign = (batch: Map<string, number[]>) => {
    for (let i = 0; i < (options.foreignTasksPerBatch ?? 0); i++) batch.set(`other-client:${server.step}:${i}`, Array(numRepeat).fill(0.5));
  };
  let handled = h.commands.length;

  const execute = () => {
    for (; handled < h.commands.length; handled++) {
      const c = h.commands[handled];
      if (c?.type === "pollEngineStatus") {
        h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: server.status, globalStep: server.step });
        if (server.status === "ENGINE.ROLLING" && out.rolledAtMs.length < server.step - 1) out.rolledAtMs.push(h.nowMs);
      }
      if (c?.type === "dispatchEpisodes") {
        for (const d of c.episodes) out.firstDispatchAtMs[d.windowIndex ?? 0] ??= h.nowMs;
        inbox.push(...c.episodes);
        out.dispatched.push(...c.episodes);
      }
    }
  };
  const full = () => completeTasks(server.batch, numRepeat) >= batchSize;

  if (h.state.run.phase === "created") h.start();
  execute();
  for (; out.steps < (options.maxSteps ?? 5000) && h.state.run.phase !== "finished"; out.steps++) {
    h.nowMs += 1000;
    if (server.status === "ENGINE.BOOTING" && out.steps === 2 && !server.restarted) {
      server.status = "ENGINE.ROLLING";
      foreign(server.batch);
    }
    if (server.status === "ENGINE.BOOTING" && server.restarted && h.nowMs >= server.bootUntilMs) {
      server.status = "ENGINE.ROLLING";
      foreign(server.batch);
    }
    const holds = [...server.batch.values()].reduce((n, r) => n + r.length, 0);
    if (options.restart && !server.restarted && server.status === "ENGINE.ROLLING" && holds >= options.restart.whenBatchHolds) {
      // another client: stop_engine + start_engine — every record is wiped, the new engine starts at step 1
      server.restarted = true;
      server.generation++;
      out.wiped.push(server.batch);
      server.batch = new Map();
      out.openBatch = server.batch;
      server.status = "ENGINE.BOOTING";
      server.step = 1;
      server.bootUntilMs = h.nowMs + options.restart.bootMs;
    }
    if (server.status === "ENGINE.ROLLING" && full()) server.status = "ENGINE.ROLLING_POST";
    else if (server.status === "ENGINE.ROLLING_POST" && running.length === 0) {
      server.status = "ENGINE.WEIGHT_SYNCING";
      server.trainUntilMs = h.nowMs + (options.trainMs ?? 20_000);
      out.batches.push(server.batch);
      server.batch = new Map();
      out.openBatch = server.batch;
    } else if (server.status === "ENGINE.WEIGHT_SYNCING" && h.nowMs >= server.trainUntilMs) {
      server.status = "ENGINE.ROLLING";
      server.step++;
      foreign(server.batch);
    }
    for (const d of inbox.splice(0)) {
      if (server.status !== "ENGINE.ROLLING") {
        h.apply({ type: "claimFailed", episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, kind: "notReady" });
      } else if (h.claim(d, server.step, `uuid-${server.generation}-${d.episodeKey}-${d.attempt}`).ack.status === "applied") {
        running.push({ d, doneAtMs: h.nowMs + durationMs(d), generation: server.generation });
      }
    }
    // a repeat cut by over-provisioning hears it on its held heartbeat: it stops and gives its claim back at once
    for (const r of running.filter((x) => h.row(x.d.episodeKey)?.cut === true && h.row(x.d.episodeKey)?.status === "running")) {
      running.splice(running.indexOf(r), 1);
      h.outcome(r.d, { kind: "abort", cause: "batch_closed" });
      h.report(r.d, "aborted");
    }
    for (const r of running.filter((x) => x.doneAtMs <= h.nowMs)) {
      running.splice(running.indexOf(r), 1);
      if (options.fails?.(r.d)) {
        h.outcome(r.d, { kind: "abort", cause: "function_error" });
        h.report(r.d, "aborted");
        continue;
      }
      const reward = options.reward?.(r.d) ?? 1;
      const recorded = h.outcome(r.d, { kind: "end", reward }).ack.status;
      if (recorded === "stale" || recorded === "unknown") continue; // the run refused the end: the claim is given back
      if (r.generation !== server.generation || server.status === "ENGINE.BOOTING") {
        out.refusedEnds++; // its record was wiped by the restart: the server refuses the end (spec §11.1)
        h.report(r.d, "lost");
        continue;
      }
      server.batch.set(taskIdOf(r.d), [...(server.batch.get(taskIdOf(r.d)) ?? []), reward]);
      h.report(r.d, "ended");
    }
    execute();
    const wake = nextWakeAtMs(h.state);
    if (wake !== null && h.nowMs >= wake) {
      h.apply({ type: "tick" });
      execute();
    }
  }
  return out;
}

/** Distinct task ids of a closed batch that reached `numRepeat` episodes. */
export function completeTasks(batch: ReadonlyMap<string, readonly number[]>, numRepeat: number): number {
  return [...batch.values()].filter((rewards) => rewards.length >= numRepeat).length;
}

/** Group keys per window, from the dispatches (`groupKey` is `{source}/{epoch}/{taskIndex}`). */
export function groupsByWindow(dispatched: readonly EpisodeDispatch[]): Map<number, Map<string, EpisodeDispatch>> {
  const windows = new Map<number, Map<string, EpisodeDispatch>>();
  for (const d of dispatched) {
    if (d.windowIndex === null) continue;
    const groups = windows.get(d.windowIndex) ?? new Map<string, EpisodeDispatch>();
    groups.set(d.groupKey, d);
    windows.set(d.windowIndex, groups);
  }
  return windows;
}
