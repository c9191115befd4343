/**
 * @module edge/run/engine-link — a run's side of its swarm servers' objects (`SwarmServer`, issue 8 §1): it subscribes
 * the run (job, batch settings, engine policy), turns each observation into the core's `engineStatusSeen` events
 * (a restart the server's watcher counted becomes an OFFLINE observation first, so the core's restart logic sees it
 * even when the run missed the down status), fails the run (once) on a `failed` note, keeps the latest note per swarm
 * and the run's failure for its status, tells the watcher when a window is complete (an edge is due), and
 * unsubscribes the run when it is finished.
 */
import { currentStep, type EngineStatusSeen, type RunSpec, type SchedulerEvent, type SchedulerState, type TopUpPlanRequest } from "../../scheduler/index.ts";
import { ENGINE } from "../../protocol/index.ts";
import type { Env } from "../ground/env.ts";
import { normalizeServerUrl } from "../../client/index.ts";
import { runJob } from "../ground/run-job.ts";
import type { EngineNote, EngineObservation, EngineSubscription } from "../swarm-server/engine-note.ts";
import { callObject } from "../ground/do-call.ts";
import type { TopUpPlanInput } from "../swarm-server/top-up-plan.ts";

/** The object of the swarm server at `url` (one per normalised URL). @throws SwarmInputError for a non-http(s) URL */
export function swarmServerStub(env: Env, url: string) {
  return env.SWARM_SERVERS.get(env.SWARM_SERVERS.idFromName(normalizeServerUrl(url)));
}

/** What the run's object needs to know of the run. */
export interface LinkedRun {
  runId: string;
  spec: RunSpec;
  /** the YAML `/sync_train_config` sends for this run (built once at create) */
  jobYaml: string;
}

/** The KV key of the run's failure (a `failed` note's message), kept across resets. */
const FAILURE_KEY = "failure";

/** The run's links to its swarm servers' objects. Restart counts and the run's failure persist in the run object's KV storage. */
export class EngineLink {
  readonly #notes = new Map<string, EngineNote>();
  #lastExpectedWindow: number | null = null;
  /** the run left its servers' objects (finished): nothing subscribes it again */
  #left = false;

  /** @param gatewayHeaders the resolved gateway headers of a run swarm (`{}` when none): sent with each subscription */
  constructor(
    private readonly env: Env,
    private readonly kv: SyncKvStorage,
    private readonly run: LinkedRun,
    private readonly gatewayHeaders: (swarm: string) => Record<string, string> = () => ({}),
  ) {}

  /**
   * The link of a stored run (its `jobYaml`, absent in runs created before it was stored, is built from the spec).
   * @param gatewayHeaders as for the constructor
   */
  static of(env: Env, kv: SyncKvStorage, meta: { runId: string; spec: RunSpec; jobYaml?: string | undefined }, gatewayHeaders: (swarm: string) => Record<string, string>): EngineLink {
    return new EngineLink(env, kv, { runId: meta.runId, spec: meta.spec, jobYaml: meta.jobYaml ?? runJob(meta.spec).toYaml() }, gatewayHeaders);
  }

  /** The subscription of the run on swarm `name`. @throws Error when the run has no such swarm */
  subscription(name: string): EngineSubscription {
    const s = this.run.spec.swarms.find((x) => x.name === name);
    if (!s) throw new Error(`swarm "${name}" is not part of run ${this.run.runId}`);
    return {
      runId: this.run.runId,
      swarm: s.name,
      url: s.url,
      yaml: this.run.jobYaml,
      batchSize: this.run.spec.batchSize,
      numRepeat: this.run.spec.numRepeat,
      start: s.engine.start,
      stopWhenDone: s.engine.stopWhenDone,
      bootTimeoutSeconds: s.engine.bootTimeoutSeconds,
      headers: this.gatewayHeaders(name),
      ...(s.engine.pollQuickMs !== undefined ? { pollQuickMs: s.engine.pollQuickMs } : {}),
      ...(s.engine.pollSlowMs !== undefined ? { pollSlowMs: s.engine.pollSlowMs } : {}),
      ...(s.engine.maxPollsPerMinute !== undefined ? { maxPollsPerMinute: s.engine.maxPollsPerMinute } : {}),
    };
  }

  /**
   * Subscribes (or heartbeats) on swarm `name` and returns its current observation (the run's pull).
   * @returns null once the run left its servers' objects (a poll decided before the run finished, run after it)
   * @throws when the object cannot be reached
   */
  async observe(name: string, withPool = false, plan?: TopUpPlanRequest): Promise<EngineObservation | null> {
    const s = this.run.spec.swarms.find((x) => x.name === name);
    if (!s) throw new Error(`swarm "${name}" is not part of run ${this.run.runId}`);
    if (this.#left) return null;
    const input: TopUpPlanInput | undefined = plan ? { pendingGroups: plan.pendingGroups, ...(plan.ask ? { ask: plan.ask } : {}) } : undefined;
    return swarmServerStub(this.env, s.url).subscribe(this.subscription(name), { withPool, ...(input ? { plan: input } : {}) });
  }

  /**
   * The core events one observation means, in order: an OFFLINE first when the watcher counted a restart this run
   * has not seen (global_step back, or a down status between two polls), then the observation itself. Records the
   * note and the restart count.
   */
  eventsFor(obs: EngineObservation): EngineStatusSeen[] {
    this.#notes.set(obs.swarm, obs.note);
    const key = `restarts:${obs.swarm}`;
    const last = this.kv.get<number>(key);
    this.kv.put(key, obs.restarts);
    const events: EngineStatusSeen[] = [];
    if (last !== undefined && obs.restarts > last && obs.engineStatus !== ENGINE.OFFLINE && obs.engineStatus !== ENGINE.BOOTING) {
      events.push({ type: "engineStatusSeen", swarm: obs.swarm, engineStatus: ENGINE.OFFLINE, globalStep: 0 });
    }
    if (obs.seenAtMs !== null) {
      events.push({
        type: "engineStatusSeen", swarm: obs.swarm, engineStatus: obs.engineStatus, globalStep: obs.globalStep,
        ...(obs.pool ? { pool: obs.pool } : {}), ...(obs.topUpGrant ? { topUpGrant: obs.topUpGrant } : {}),
      });
    }
    return events;
  }

  /**
   * The core events of one observation: a `failed` note first fails a run that is not finished (once: its message is
   * kept as the run's {@link failure}; a ROLLING status that comes with it must not open the gate for one dispatch),
   * then {@link eventsFor}. Lazy: each event is made once the one before it was applied.
   */
  *observed(obs: EngineObservation, finished: boolean): Generator<SchedulerEvent> {
    if (obs.note.kind === "failed" && this.failure() === null && !finished) {
      this.kv.put(FAILURE_KEY, obs.note.message);
      yield { type: "stopRequested", reason: obs.note.message, failed: true };
    }
    yield* this.eventsFor(obs);
  }

  /**
   * Records why the run cannot go on (the first reason is kept; a dataset changed under the run, edge/run/command-runner).
   * @returns the `stopRequested` (failed) event to apply, or null when a failure was recorded before
   */
  fail(reason: string): SchedulerEvent | null {
    if (this.failure() !== null) return null;
    this.kv.put(FAILURE_KEY, reason);
    return { type: "stopRequested", reason, failed: true };
  }

  /** Why the run failed (a swarm server's object said so, or a dataset changed under it), null unless it did. */
  failure(): string | null {
    return this.kv.get<string>(FAILURE_KEY) ?? null;
  }

  /** The last note per swarm (empty before the first observation; lost on a reset until the next one). */
  notes(): Record<string, EngineNote> {
    return Object.fromEntries(this.#notes);
  }

  /** After each decision: a complete window of a run not finished means the engine's edge is due ({@link windowComplete}). */
  decided(state: SchedulerState): void {
    const step = currentStep(state);
    if (step && step.resolvedAtMs !== null && step.closedAtMs === null && state.run.phase !== "finished") this.windowComplete(step.windowIndex);
  }

  /** The window `windowIndex` is complete: tell the first swarm's watcher an edge is due (once per window; fire and forget). */
  windowComplete(windowIndex: number): void {
    if (this.#lastExpectedWindow === windowIndex) return;
    this.#lastExpectedWindow = windowIndex;
    const first = this.run.spec.swarms[0];
    if (first) void swarmServerStub(this.env, first.url).expectEdge(this.run.runId).catch(() => {});
  }

  /** The run is finished: it leaves every server's object (the last with `stopWhenDone` stops that engine). */
  async leave(): Promise<void> {
    this.#left = true;
    await Promise.allSettled(this.run.spec.swarms.map((s) => callObject(() => swarmServerStub(this.env, s.url).unsubscribe(this.run.runId))));
  }
}
