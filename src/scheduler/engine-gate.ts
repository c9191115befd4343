/**
 * @module scheduler/engine-gate — what the core knows about each swarm's engine (status, global step, ROLLING edges),
 * whether dispatch is allowed (every swarm ROLLING, BC-25), and whether the engine has moved past a window's step.
 */
import { ENGINE } from "../protocol/index.ts";

/** The last engine status seen for one swarm server of the run. */
export interface EngineView {
  /** the swarm's name in the run spec */
  swarm: string;
  /** last `engine_status` seen (a server status or a client-only pseudo status such as `ENGINE.CANNOT_CONNECT`) */
  engineStatus: string;
  /** last `global_step` seen (null until the trainer reports one, spec §4.4) */
  globalStep: number | null;
  /** epoch ms of the last observation, null before the first */
  seenAtMs: number | null;
  /** how many times the status entered `ENGINE.ROLLING` from another status (the edges, counted from 0) */
  rollingEdges: number;
  /**
   * how many times the engine stopped or restarted: the status entered OFFLINE or BOOTING from another seen status,
   * or the step went backwards without them (also the run's engine epoch: scheduler/batches)
   */
  restarts: number;
  /** the last non-null `global_step` seen (a failed poll reports none), to notice a step going backwards */
  lastGlobalStep?: number | null;
}

/** A window's position on the engine's timeline: the global step, ROLLING edges and restarts when it opened. */
export interface StepMark {
  globalStep: number | null;
  rollingEdges: number;
  restarts: number;
}

const DOWN = new Set<string>([ENGINE.OFFLINE, ENGINE.BOOTING]);

/** A swarm nobody has polled yet: status `unknown`, so the gate is closed. */
export function initialEngineView(swarm: string): EngineView {
  return { swarm, engineStatus: "unknown", globalStep: null, seenAtMs: null, rollingEdges: 0, restarts: 0 };
}

/**
 * Applies one observation.
 * @param globalStep the reported step, or `undefined` to keep the last one (a claim failure names a status, no step)
 * @returns the new view and whether this observation is an edge into ROLLING (the moment dispatch may resume)
 */
export function observeEngine(
  view: EngineView,
  engineStatus: string,
  globalStep: number | null | undefined,
  nowMs: number,
): { view: EngineView; enteredRolling: boolean } {
  const enteredRolling = engineStatus === ENGINE.ROLLING && view.engineStatus !== ENGINE.ROLLING;
  // a restart: OFFLINE or BOOTING entered from another seen status, or the step seen going backwards without them
  // (the engine stopped and came back between two polls, spec §4.3: every episode record was wiped)
  const lastStep = view.globalStep ?? view.lastGlobalStep ?? null;
  const stepWentBack = globalStep != null && lastStep !== null && globalStep < lastStep && !DOWN.has(engineStatus) && !DOWN.has(view.engineStatus);
  const restarted = view.seenAtMs !== null && ((DOWN.has(engineStatus) && !DOWN.has(view.engineStatus)) || stepWentBack);
  const nextStep = globalStep === undefined ? view.globalStep : globalStep;
  return {
    view: {
      swarm: view.swarm,
      engineStatus,
      globalStep: nextStep,
      lastGlobalStep: nextStep ?? lastStep,
      seenAtMs: nowMs,
      rollingEdges: view.rollingEdges + (enteredRolling ? 1 : 0),
      restarts: view.restarts + (restarted ? 1 : 0),
    },
    enteredRolling,
  };
}

/**
 * The engine gate: new episodes are dispatched only while EVERY swarm of the run is exactly `ENGINE.ROLLING`
 * (claims fail in every other state, spec §4.1; multi-swarm episodes need all their claims, issue 4 §4). BC-25.
 */
export function isGateOpen(engines: readonly EngineView[]): boolean {
  return engines.length > 0 && engines.every((e) => e.engineStatus === ENGINE.ROLLING);
}

/** The mark of a view now, stored when a window opens. */
export function stepMarkOf(view: EngineView): StepMark {
  return { globalStep: view.globalStep, rollingEdges: view.rollingEdges, restarts: view.restarts };
}

/**
 * True once the engine has moved past the step of `mark`: a higher `global_step` than the mark's (the trainer
 * consumed that batch, spec §4.2 step 6); or ROLLING again after a restart (OFFLINE/BOOTING wipes every episode
 * record, spec §4.3, so that batch is gone and waiting for it would stall the run, BC-28); or, when either step is
 * unknown, a later edge into ROLLING.
 */
export function hasMovedPast(view: EngineView, mark: StepMark): boolean {
  if (view.restarts > mark.restarts && view.engineStatus === ENGINE.ROLLING) return true;
  if (view.globalStep !== null && mark.globalStep !== null) return view.globalStep > mark.globalStep;
  return view.rollingEdges > mark.rollingEdges && view.engineStatus === ENGINE.ROLLING;
}

/** True when the engine process is gone (`ENGINE.OFFLINE`: stopped, finished all its steps, or crashed, spec §4.2). */
export function isOffline(view: EngineView): boolean {
  return view.engineStatus === ENGINE.OFFLINE;
}
