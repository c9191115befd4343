/**
 * @module client/engine-control — what a client does to the server's engine (spec §3.2–§3.5, §3.19, §4.5): sync the
 * training config and code, start, stop, bring it to ROLLING idempotently, read its verbose logs. Functions over a
 * {@link ClientCore} (the `SwarmClient`'s calls, clock and logger); `SwarmClient` exposes each as a method.
 */
import { ENGINE, type EngineStatus, type endpoints } from "../protocol/index.ts";
import { SwarmConnectionError, SwarmEngineStateError, SwarmInputError, SwarmOperationError } from "./errors.ts";
import { pause, type SwarmBackoff, type SwarmClock, type WaitOptions } from "./timing.ts";
import type { EndpointResponse, SwarmRequestOptions } from "./transport.ts";
import { isCannotConnect } from "./types.ts";
import type { AutoStartOptions, AutoStartResult, CannotConnectSnapshot, EngineStatusSnapshot, EngineWaitOptions, SwarmLogger, SyncableJob } from "./types.ts";

/** What the engine-control and agree functions need of their `SwarmClient`. */
export interface ClientCore {
  readonly clientUuid: string;
  readonly clock: SwarmClock;
  readonly backoff: SwarmBackoff;
  readonly logger: SwarmLogger;
  /** one call of endpoint `name` (the transport's typed errors) */
  call<N extends keyof typeof endpoints>(name: N, body: unknown, options?: SwarmRequestOptions): Promise<EndpointResponse<N>>;
  /** a call within a wait: none past its deadline, its timeout capped by the time left */
  callWithin<N extends keyof typeof endpoints>(name: N, body: unknown, wait: WaitOptions, timeoutMs?: number): Promise<EndpointResponse<N>>;
  getEngineStatus(options?: SwarmRequestOptions): Promise<EngineStatusSnapshot>;
  getEngineStatusOrCannotConnect(options?: SwarmRequestOptions): Promise<EngineStatusSnapshot | CannotConnectSnapshot>;
  waitForEngineStatus(awaited: EngineStatus | readonly EngineStatus[], options?: WaitOptions & { assumeStarted?: boolean }): Promise<EngineStatusSnapshot>;
  /** the job last synced (or given to the auto start); null for a raw YAML or none */
  job: SyncableJob | null;
}

/** See `SwarmClient.syncTrainConfig`. */
export async function syncTrainConfig(c: ClientCore, job: SyncableJob | string, options: SwarmRequestOptions = {}): Promise<void> {
  const { status } = await c.getEngineStatus({ signal: options.signal });
  if (status !== ENGINE.OFFLINE) {
    throw new SwarmEngineStateError(`Cannot sync train config when engine is NOT ENGINE.OFFLINE. (current status: ${status})`, status);
  }
  const yaml = typeof job === "string" ? job : job.toYaml();
  if (!yaml.trim()) throw new SwarmInputError("job", "the training YAML is empty; build it with AgentJetJob.toYaml()");
  const res = await c.call("syncTrainConfig", { yaml_as_string: yaml }, options);
  if (!res.success) throw new SwarmOperationError("syncTrainConfig", "Failed to sync train config", res.error ?? "");
  c.job = typeof job === "string" ? null : job;
  c.logger.info("Synced train config to Swarm server");
}

/** What `/sync_train_code` answered (spec §3.3). */
export interface SyncTrainCodeResult {
  /** where the server extracted the code (`<dir>/ajet`), used by the next `/start_engine`; null when not said */
  tempAjetCodePath: string | null;
  message: string;
}

/** See `SwarmClient.syncTrainCode`. */
export async function syncTrainCode(c: ClientCore, zip: Uint8Array, options: SwarmRequestOptions = {}): Promise<SyncTrainCodeResult> {
  if (zip.byteLength === 0) throw new SwarmInputError("zip", "the training code archive is empty; zip a directory holding ajet/");
  const { status } = await c.getEngineStatus({ signal: options.signal });
  if (status !== ENGINE.OFFLINE) {
    throw new SwarmEngineStateError(`Cannot sync train code when engine is NOT ENGINE.OFFLINE. (current status: ${status}); stop the engine first (--force-restart)`, status);
  }
  const res = await c.call("syncTrainCode", zip, options);
  if (!res.success) throw new SwarmOperationError("syncTrainCode", "Failed to sync train code", res.error ?? "");
  c.logger.info("Synced training code to Swarm server");
  return { tempAjetCodePath: res.temp_ajet_code_path ?? null, message: res.message ?? "" };
}

/** See `SwarmClient.startEngine`. */
export async function startEngine(c: ClientCore, options: EngineWaitOptions = {}): Promise<EngineStatusSnapshot> {
  await requestEngineStart(c, options);
  return c.waitForEngineStatus(ENGINE.ROLLING, { ...options, assumeStarted: true });
}

/** See `SwarmClient.requestEngineStart`. */
export async function requestEngineStart(c: ClientCore, options: EngineWaitOptions = {}): Promise<number | null> {
  const { status } = await c.getEngineStatus({ signal: options.signal });
  if (status !== ENGINE.OFFLINE) {
    throw new SwarmEngineStateError(`Cannot start engine when engine is NOT ENGINE.OFFLINE. (current status: ${status})`, status);
  }
  const res = await c.callWithin("startEngine", {}, options, options.timeoutMs);
  if (!res.success) throw new SwarmOperationError("startEngine", "Failed to start training engine", res.error ?? "");
  c.logger.info(`Started training engine (pid ${res.pid ?? "?"}); waiting for ENGINE.ROLLING`);
  return res.pid ?? null;
}

/** See `SwarmClient.stopEngine`. */
export async function stopEngine(c: ClientCore, options: EngineWaitOptions = {}): Promise<EngineStatusSnapshot> {
  const snap = await c.getEngineStatus({ signal: options.signal });
  if (snap.status === ENGINE.OFFLINE) return snap;
  const res = await c.callWithin("stopEngine", {}, options, options.timeoutMs);
  if (!res.success) throw new SwarmOperationError("stopEngine", "Failed to stop training engine", res.failure_reason);
  return c.waitForEngineStatus(ENGINE.OFFLINE, options);
}

/** See `SwarmClient.autoSyncTrainConfigAndStartEngine`. */
export async function autoSyncTrainConfigAndStartEngine(c: ClientCore, job: SyncableJob | string, options: AutoStartOptions = {}): Promise<AutoStartResult> {
  c.job = typeof job === "string" ? null : job;
  if (options.forceRestart) {
    c.logger.warn("Force restarting the engine...");
    await stopEngine(c, options);
    await pause(c.clock, c.backoff.restartGraceMs, options, "forceRestart");
  }
  const poll = () => c.getEngineStatusOrCannotConnect({ signal: options.signal });
  let snap = await poll();
  if (isCannotConnect(snap)) {
    await pause(c.clock, c.backoff.cannotConnectRetryMs, options, "autoSyncTrainConfigAndStartEngine");
    snap = await poll();
    if (isCannotConnect(snap)) {
      throw new SwarmConnectionError("getEngineStatus", "Unable to connect to swarm server.", snap.error);
    }
  }
  switch (snap.status) {
    case ENGINE.OFFLINE:
      await syncTrainConfig(c, job, { signal: options.signal });
      return { action: "started", engine: await startEngine(c, options) };
    case ENGINE.ROLLING:
    case ENGINE.ROLLING_POST:
      return { action: "alreadyRolling", engine: snap };
    case ENGINE.BOOTING:
    case ENGINE.WEIGHT_SYNCING:
      return { action: "waitedForRolling", engine: await c.waitForEngineStatus(ENGINE.ROLLING, { ...options, assumeStarted: true }) };
    default:
      throw new SwarmEngineStateError(`Cannot sync train config or start engine when engine is in status: ${snap.status}`, snap.status);
  }
}
