/**
 * @module edge/swarm-server/engine-note — what crosses between a run's Durable Object and its swarm server's object
 * (edge/swarm-server/swarm-server): the subscription a run sends, the observation it gets pushed (the core's `engineStatusSeen`
 * fields plus a restart count and a note in plain terms). Types only, so Node code (the API views, tests) can use
 * them without the Workers runtime.
 */
import type { PoolSeen } from "../../scheduler/index.ts";

/** What a run tells its server's object when it subscribes (and on every heartbeat). */
export interface EngineSubscription {
  runId: string;
  /** the swarm's name in the run (pushed back with every observation) */
  swarm: string;
  url: string;
  /** the YAML `/sync_train_config` sends for this run (AgentJetJob.toYaml()) */
  yaml: string;
  batchSize: number;
  numRepeat: number;
  start: "if-offline" | "never";
  stopWhenDone: boolean;
  bootTimeoutSeconds: number;
  /**
   * gateway headers this run sends to the server (resolved from its secrets): the object keeps them in memory only,
   * never in storage, and uses them for its own calls to the server while the run is subscribed
   */
  headers?: Record<string, string>;
  /** watcher knobs of this run (the object uses the quickest / strictest of its runs) */
  pollQuickMs?: number;
  pollSlowMs?: number;
  maxPollsPerMinute?: number;
}

/**
 * What the object knows about the engine, for one run, in plain words:
 *  - `ok`: nothing to wait for on the engine's side.
 *  - `starting`: this object is syncing the config / calling `/start_engine`.
 *  - `booting`: the engine was started and boots (since `sinceMs`; the run fails at `timeoutAtMs`).
 *  - `waitingForStart`: OFFLINE and the run's policy is `start: "never"`: someone else must start it.
 *  - `stoppedElsewhere`: the engine went OFFLINE after it ran, and this object did not stop it.
 *  - `unreachable`: the last poll could not connect.
 *  - `failed`: the run cannot train on this server (`message` says why and the fix).
 */
export type EngineNote =
  | { kind: "ok" }
  | { kind: "starting"; sinceMs: number }
  | { kind: "booting"; sinceMs: number; timeoutAtMs: number }
  | { kind: "waitingForStart" }
  | { kind: "stoppedElsewhere"; atMs: number }
  | { kind: "unreachable"; error: string }
  | { kind: "failed"; message: string };

/** One observation as a run receives it: the core's `engineStatusSeen` fields plus the restart count and the note. */
export interface EngineObservation {
  swarm: string;
  engineStatus: string;
  globalStep: number | null;
  /** epoch ms of the poll; null before the first */
  seenAtMs: number | null;
  /** restarts this object has seen (status down after up, or `global_step` back); runs compare it with the last they saw */
  restarts: number;
  note: EngineNote;
  /**
   * the pool information, read right BEFORE this observation's status poll (only when the run asked `withPool`):
   * a batch the trainer consumed in between then shows in the status, never as "no longer listed" (batch truth)
   */
  pool?: PoolSeen;
  /** the answer to the run's top-up ask (edge/swarm-server/top-up-plan.ts): groups it may open for the batch at `step` */
  topUpGrant?: { step: number | null; groups: number };
}
