/**
 * @module test/unit/scheduler/harness — drives the pure scheduler core in tests: a fake clock, the DO's persistence
 * step (rows upserted/deleted exactly as `changes` says, then checked against the returned state), and shortcuts
 * for the consumer's reports.
 */
import { expect } from "vitest";
import {
  RunSpec,
  decide,
  episodeIndex,
  initialState,
  storedBatchRow,
  stateFromRows,
  type Decision,
  type EpisodeDispatch,
  type EpisodeOutcome,
  type LandedRow,
  type StoredBatchRow,
  type EpisodeRow,
  type EvalTaskRow,
  type RunRow,
  type RunSpecInput,
  type SchedulerCommand,
  type SchedulerEvent,
  type SchedulerState,
  type WindowRow,
} from "../../../src/scheduler/index.ts";

/** A minimal valid run spec input; override any field. */
export function specInput(overrides: Partial<RunSpecInput> = {}): RunSpecInput {
  return {
    swarms: [{ url: "http://127.0.0.1:10086" }],
    datasets: [{ name: "gsm8k" }],
    function: "math-agent",
    batchSize: 8,
    numRepeat: 4,
    ...overrides,
  };
}

/** Freezes an object graph in place (so any mutation of a decide input throws in strict-mode ESM). */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** A started run whose engine is ROLLING at step 1, and the episodes it dispatched right away. */
export function rollingRun(input: RunSpecInput, taskCounts: Record<string, number> = { gsm8k: 100 }): { h: Harness; sent: EpisodeDispatch[] } {
  const h = new Harness(input, taskCounts);
  h.start();
  h.rolling(1);
  return { h, sent: h.takeDispatches() };
}

/** Test driver: owns the state, the clock (epoch ms) and a row store fed only by `changes`. */
export class Harness {
  state: SchedulerState;
  nowMs = 1_000_000;
  readonly commands: SchedulerCommand[] = [];
  /** answer each top-up ask with a grant of all of it, as the server's object of a run alone on it does */
  answerTopUps = true;
  /** every attempt the core closed on a lease expiry, as the decisions' `changes` listed them */
  readonly closedAttempts: NonNullable<Decision["changes"]["closedAttempts"]> = [];
  private readonly store = {
    run: null as RunRow | null, episodes: new Map<string, EpisodeRow>(), steps: new Map<string, WindowRow>(), evalTasks: new Map<string, EvalTaskRow>(),
    batches: new Map<string, StoredBatchRow>(), landed: new Map<string, LandedRow>(),
  };

  constructor(input: RunSpecInput = specInput(), taskCounts: Record<string, number> = { gsm8k: 100 }, readonly checkRows = true) {
    this.state = initialState(RunSpec.parse(input), taskCounts);
    this.store.run = this.state.run;
  }

  /** Applies one event at the current clock; checks that persisting `changes` reproduces the new state. */
  apply(event: SchedulerEvent): Decision {
    const decision = decide(deepFreeze(this.state), event, this.nowMs); // decide must never mutate its input
    this.state = decision.state;
    this.commands.push(...decision.commands);
    this.closedAttempts.push(...(decision.changes.closedAttempts ?? []));
    if (this.checkRows) this.persist(decision);
    // the server's object of a run alone on it grants every top-up ask at once (edge/swarm-server/top-up-plan)
    const ask = this.answerTopUps ? decision.commands.find((c) => c.type === "pollEngineStatus" && c.plan?.ask) : undefined;
    if (ask?.type === "pollEngineStatus" && ask.plan?.ask) {
      const view = this.state.run.engines[0]!;
      this.apply({ type: "engineStatusSeen", swarm: ask.plan.swarm, engineStatus: view.engineStatus, globalStep: view.globalStep, topUpGrant: { ...ask.plan.ask } });
    }
    return decision;
  }

  private persist({ changes, state }: Decision): void {
    if (changes.run) this.store.run = changes.run;
    for (const row of changes.episodes) this.store.episodes.set(row.episodeKey, row);
    for (const key of changes.deletedEpisodeKeys) this.store.episodes.delete(key);
    for (const row of changes.steps) this.store.steps.set(String(row.windowIndex), row);
    for (const row of changes.evalTasks) this.store.evalTasks.set(row.groupKey, row);
    for (const row of changes.batches) this.store.batches.set(row.batchKey, storedBatchRow(row));
    for (const l of changes.landed) {
      const key = `${l.batchKey}\u0000${l.uuid}`;
      if (l.episode) this.store.landed.set(key, { batchKey: l.batchKey, uuid: l.uuid, episode: l.episode });
      else this.store.landed.delete(key);
    }
    const loaded = stateFromRows({
      run: this.store.run ?? state.run,
      episodes: [...this.store.episodes.values()],
      steps: [...this.store.steps.values()],
      evalTasks: [...this.store.evalTasks.values()],
      batches: [...this.store.batches.values()],
      landed: [...this.store.landed.values()],
    });
    expect(loaded).toEqual(state);
    // the index decide kept row by row equals the one computed from the rows; its bound is never later than the truth
    const kept = episodeIndex(state.episodes);
    const fresh = episodeIndex(loaded.episodes);
    expect({ counts: kept.counts, backedOff: kept.backedOff }).toEqual({ counts: fresh.counts, backedOff: fresh.backedOff });
    expect(kept.earliestMs).toBeLessThanOrEqual(fresh.earliestMs);
  }

  start(): Decision {
    return this.apply({ type: "runStarted" });
  }

  /** Every swarm of the run reports `engineStatus` at `globalStep`. */
  engine(engineStatus: string, globalStep: number | null): Decision[] {
    return this.state.run.config.swarms.map((swarm) => this.apply({ type: "engineStatusSeen", swarm, engineStatus, globalStep }));
  }

  rolling(globalStep: number): Decision[] {
    return this.engine("ENGINE.ROLLING", globalStep);
  }

  /** Moves the clock forward and ticks. */
  advance(ms: number): Decision {
    this.nowMs += ms;
    return this.apply({ type: "tick" });
  }

  /** The dispatches of the given decisions (or of every decision so far). */
  dispatched(decisions?: Decision[]): EpisodeDispatch[] {
    const commands = decisions ? decisions.flatMap((d) => d.commands) : this.commands;
    return commands.flatMap((c) => (c.type === "dispatchEpisodes" ? c.episodes : []));
  }

  claim(ref: { episodeKey: string; attempt: number; dispatchId: number }, globalStep: number | null = null, uuid = `uuid-${ref.episodeKey}-${ref.attempt}`): Decision {
    const claims = this.state.run.config.swarms.map((swarm, i) => ({ swarm, episodeUuid: i === 0 ? uuid : `${uuid}-${swarm}`, globalStep }));
    return this.apply({ type: "episodeClaimed", episodeKey: ref.episodeKey, attempt: ref.attempt, dispatchId: ref.dispatchId, claims });
  }

  outcome(ref: { episodeKey: string; attempt: number }, outcome: EpisodeOutcome): Decision {
    return this.apply({ type: "episodeOutcomeRecorded", episodeKey: ref.episodeKey, attempt: ref.attempt, outcome });
  }

  /** The happy path of one train episode after dispatch: claim, record `end`, report `ended`. */
  finishEpisode(ref: { episodeKey: string; attempt: number; dispatchId: number }, reward: number, globalStep: number | null = null): Decision[] {
    return [this.claim(ref, globalStep), this.outcome(ref, { kind: "end", reward }), this.report(ref, "ended")];
  }

  report(ref: { episodeKey: string; attempt: number }, result: "ended" | "aborted" | "expired" | "lost", cause?: string): Decision {
    return this.apply({ type: "episodeReported", episodeKey: ref.episodeKey, attempt: ref.attempt, result, ...(cause ? { cause } : {}) });
  }

  private taken = 0;

  /** Dispatches emitted since the last call (what the queue would deliver next). */
  takeDispatches(): EpisodeDispatch[] {
    const fresh = this.commands.slice(this.taken);
    this.taken = this.commands.length;
    return fresh.flatMap((c) => (c.type === "dispatchEpisodes" ? c.episodes : []));
  }

  /** Runs every dispatched episode to `ended` (and those dispatched meanwhile) until nothing new is dispatched. */
  serveAll(globalStep: number | null, reward: (d: EpisodeDispatch) => number = () => 1): number {
    let served = 0;
    for (let batch = this.takeDispatches(); batch.length > 0; batch = this.takeDispatches()) {
      for (const d of batch) {
        this.finishEpisode(d, reward(d), globalStep);
        served++;
      }
    }
    return served;
  }

  row(episodeKey: string): EpisodeRow | undefined {
    return this.state.episodes.get(episodeKey);
  }

  inFlight(): number {
    return [...this.state.episodes.values()].filter((r) => ["dispatched", "running", "reporting"].includes(r.status)).length;
  }
}
