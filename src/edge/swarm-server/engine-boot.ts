/**
 * @module edge/swarm-server/engine-boot — the boot state machine of a swarm server's object, pure (part of
 * edge/swarm-server/engine-watch.ts): `idle → starting → booting → idle`.
 *  - OFFLINE with a run whose policy is `start: "if-offline"` and that has not seen the engine run: ONE sync + ONE
 *    start, by the run that subscribed first (BC-28: every run and Worker racing on one OFFLINE server reaches this one
 *    object; it is marked `starting` before the first request). `ENGINE.CANNOT_CONNECT` or an unknown status never
 *    starts anything.
 *  - BOOTING past a run's `bootTimeoutSeconds`: that run fails (it waits no longer).
 *  - A refused start (not a race with another client's) is retried after {@link BOOT_RETRY_MS}; after
 *    {@link MAX_BOOT_FAILURES} in a row the runs that wait for it fail, with the error and the fix.
 *  - Running again: the bootstrap is over.
 */
import { ENGINE } from "../../protocol/index.ts";
import { INITIAL_BOOT, isRunning, type Boot, type WatchCommand, type WatchState } from "./engine-state.ts";

/** Bootstrap attempts that may fail (sync or start refused for another reason than "already started") before runs fail. */
export const MAX_BOOT_FAILURES = 3;
/** Pause after a failed bootstrap attempt, and before a start is tried again while the server has not flipped, ms. */
export const BOOT_RETRY_MS = 5_000;

/**
 * How the object's sync + start answered: started (with the starter's batch settings, now the server's), raced
 * (another client synced or started first: a 400), or failed.
 */
export type BootAnswer = { kind: "started"; byRunId: string; batchSize: number; numRepeat: number } | { kind: "raced"; message: string } | { kind: "failed"; message: string };

type Decision = { state: WatchState; commands: WatchCommand[] };

/** After a watch step's poll: the bootstrap ends, waits, times out, or starts (a `startEngine` command). */
export function bootDue(state: WatchState, nowMs: number): Decision {
  const { boot, seen } = state;
  if (isRunning(seen.engineStatus)) return { state: boot.phase === "idle" ? state : { ...state, boot: { ...INITIAL_BOOT } }, commands: [] };
  if (boot.phase === "booting" && seen.engineStatus === ENGINE.BOOTING) return { state: bootTimeouts(state, nowMs), commands: [] };
  if (seen.engineStatus !== ENGINE.OFFLINE) return { state, commands: [] }; // CANNOT_CONNECT / unknown never bootstraps (BC-28)
  if (boot.phase === "booting" && boot.sinceMs !== null && nowMs - boot.sinceMs < BOOT_RETRY_MS) return { state, commands: [] }; // the server has not flipped yet
  const starter = waitingForStart(state).sort((a, b) => a.subscribedAtMs - b.subscribedAtMs)[0];
  if (!starter) return { state, commands: [] };
  if (boot.failures > 0 && boot.sinceMs !== null && nowMs - boot.sinceMs < BOOT_RETRY_MS) return { state, commands: [] };
  // marked before the first request: nothing else in this object starts while it runs (BC-28)
  const starting: Boot = { phase: "starting", byRunId: starter.runId, sinceMs: nowMs, failures: boot.failures, lastError: boot.lastError };
  return {
    state: { ...state, boot: starting },
    commands: [{ type: "startEngine", byRunId: starter.runId, yaml: starter.yaml, batchSize: starter.batchSize, numRepeat: starter.numRepeat }],
  };
}

/** The sync + start answered: booting with the starter's batch settings, idle after a race, or one more failure. */
export function bootAnswered(state: WatchState, answer: BootAnswer, nowMs: number): Decision {
  if (answer.kind === "started") {
    const { byRunId, batchSize, numRepeat } = answer;
    return {
      state: { ...state, batching: { batchSize, numRepeat, source: "synced" }, boot: { phase: "booting", byRunId, sinceMs: nowMs, failures: 0, lastError: null } },
      commands: [{ type: "log", level: "info", message: "synced the train config and started the engine", fields: { url: state.url, byRun: byRunId, batchSize, numRepeat } }],
    };
  }
  if (answer.kind === "raced") {
    return { state: { ...state, boot: { ...INITIAL_BOOT } }, commands: [{ type: "log", level: "info", message: "the engine was started by another client in between; waiting for it", fields: { url: state.url, error: answer.message } }] };
  }
  const failures = state.boot.failures + 1;
  const commands: WatchCommand[] = [{ type: "log", level: "warn", message: "could not start the engine; retrying", fields: { url: state.url, error: answer.message, failures } }];
  const next: WatchState = { ...state, boot: { phase: "idle", byRunId: null, sinceMs: nowMs, failures, lastError: answer.message } };
  if (failures < MAX_BOOT_FAILURES) return { state: next, commands };
  const failed = `could not start the engine of ${state.url} (${failures} tries): ${answer.message}. Check the swarm server, or start its engine yourself and set engine.start "never"`;
  const subs = { ...next.subs };
  for (const s of waitingForStart(next)) subs[s.runId] = { ...s, failed };
  return { state: { ...next, subs }, commands };
}

/** The runs that may start the engine: not failed, policy `if-offline`, and the engine never seen ROLLING while they were here. */
function waitingForStart(state: WatchState) {
  return Object.values(state.subs).filter((s) => s.failed === null && s.start === "if-offline" && !s.sawRolling);
}

/** BOOTING for longer than a waiting run's `bootTimeoutSeconds`: that run fails, with how long and the fix. */
function bootTimeouts(state: WatchState, nowMs: number): WatchState {
  const since = state.boot.sinceMs ?? nowMs;
  const subs = { ...state.subs };
  for (const s of Object.values(state.subs)) {
    if (s.failed !== null || s.sawRolling || nowMs - since <= s.bootTimeoutSeconds * 1000) continue;
    subs[s.runId] = {
      ...s,
      failed: `the engine of ${state.url} was started ${Math.round((nowMs - since) / 1000)} s ago and is still BOOTING (engine.bootTimeoutSeconds ${s.bootTimeoutSeconds}); check the swarm server's logs, or raise engine.bootTimeoutSeconds`,
    };
  }
  return { ...state, subs };
}
