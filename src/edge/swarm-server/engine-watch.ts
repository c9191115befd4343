/**
 * @module edge/swarm-server/engine-watch — the pure core of a swarm server's object (`SwarmServer`, issue 8 §1, issue
 * 11 §3, issue 17): what it knows (the runs on the server, the engine as last seen, its bootstrap, the batch settings
 * the server runs with) and the rules over it, as state + event → state + commands. No storage, no clock (every
 * instant is an input), no I/O: the object loads the state, feeds one event, stores the new state and carries out the
 * commands (polls, pool reads, the engine's start and stop, its alarm), feeding what they learn back as events.
 *  - subscriptions: a run's subscribe is also its heartbeat; a run not heard from for {@link SUBSCRIBER_TTL_MS} is
 *    dropped (a deleted run never unsubscribes); a run that left is not taken back by a late subscribe; the last run
 *    that asked for `stopWhenDone` stops the engine.
 *  - restart detection ({@link seePoll}): a status down after up, or `global_step` back while running, is a restart;
 *    an OFFLINE after running that this object did not cause is "stopped elsewhere".
 *  - the batch-size check ({@link checkBatching}): a run whose batch settings differ from the server's fails at once.
 *  - the boot state machine: edge/swarm-server/engine-boot.ts.
 */
import { normalizeServerUrl } from "../../client/index.ts";
import { ENGINE } from "../../protocol/index.ts";
import type { EngineSubscription } from "./engine-note.ts";
import { bootAnswered, bootDue, type BootAnswer } from "./engine-boot.ts";
import { batchMismatchMessage, DOWN, INITIAL_BOOT, isRunning, type Batching, type Seen, type Subscriber, type WatchCommand, type WatchState } from "./engine-state.ts";
import { watchTimingOf } from "./engine-notes.ts";

export * from "./engine-state.ts";
export type { BootAnswer };

/** How long an `expectEdge` keeps the watcher quick (it is also cleared by the next change), ms. */
export const EXPECT_EDGE_MS = 120_000;
/** A run not heard from (subscribe is its heartbeat) for this long is dropped, ms: a deleted run must not keep the watcher alive. */
export const SUBSCRIBER_TTL_MS = 30 * 60_000;

/** One status poll's answer: the server's status and step, or the client-only pseudo status of a failed connection. */
export type PollSnapshot = { kind: "status"; engineStatus: string; globalStep: number | null } | { kind: "unreachable"; engineStatus: string; error: string };

/** What happens to the object. Instants are epoch ms. */
export type WatchEvent =
  /** a run subscribed (or its heartbeat) */
  | { type: "subscribed"; sub: Omit<EngineSubscription, "headers">; nowMs: number }
  /** after a subscribe's reads: `isNew` when the run was not subscribed before */
  | { type: "joined"; runId: string; isNew: boolean; nowMs: number }
  | { type: "unsubscribed"; runId: string; nowMs: number }
  /** a run's window is complete: the edge to ROLLING_POST is due */
  | { type: "edgeExpected"; runId: string; nowMs: number }
  /** the alarm: one watch step begins */
  | { type: "stepBegan"; nowMs: number }
  /** the object's own `/stop_engine` answered (`error` when it failed) */
  | { type: "engineStopped"; nowMs: number; error: string | null }
  | { type: "polled"; snapshot: PollSnapshot; nowMs: number }
  /** the pool information read for the batch settings (`null`: unreadable, `error` says why) */
  | { type: "poolRead"; pool: { batchSize: number; numRepeat: number } | null; error?: string }
  /** the watch step polled: bootstrap or wait */
  | { type: "bootDue"; nowMs: number }
  | { type: "bootAnswered"; answer: BootAnswer; nowMs: number };

/** The state before the first event. */
export function initialWatchState(): WatchState {
  return { url: null, subs: {}, left: {}, seen: { engineStatus: "unknown", globalStep: null, seenAtMs: null, changedAtMs: null, restarts: 0, lastError: null, stoppedElsewhereAtMs: null }, boot: { ...INITIAL_BOOT }, batching: null, stopPending: null, stoppingSinceMs: null };
}

/** The one entry: state + event → state + commands. Never mutates `state`. */
export function watch(state: WatchState, event: WatchEvent): { state: WatchState; commands: WatchCommand[] } {
  switch (event.type) {
    case "subscribed":
      return subscribed(state, event.sub, event.nowMs);
    case "joined":
      return joined(state, event.runId, event.isNew, event.nowMs);
    case "unsubscribed":
      return unsubscribed(state, event.runId, event.nowMs);
    case "edgeExpected":
      return edgeExpected(state, event.runId, event.nowMs);
    case "stepBegan":
      return stepBegan(state, event.nowMs);
    case "engineStopped":
      return engineStopped(state, event.nowMs, event.error);
    case "polled":
      return polled(state, event.snapshot, event.nowMs);
    case "poolRead":
      return poolRead(state, event.pool, event.error);
    case "bootDue": {
      // a start checks the runs once it answered (against the settings it synced), not before
      const due = bootDue(state, event.nowMs);
      return due.commands.some((c) => c.type === "startEngine") ? due : withBatchCheck(due);
    }
    case "bootAnswered":
      return withBatchCheck(bootAnswered(state, event.answer, event.nowMs));
  }
}

/**
 * A subscribe: the run is remembered (what the object learnt about it kept: seen ROLLING, failed), heard from now. A
 * poll is asked for when nobody polled lately (a new or sleeping watcher), so the run starts from a real status (the
 * object skips it when the run's pool read brought a fresh poll).
 */
function subscribed(state: WatchState, sub: Omit<EngineSubscription, "headers">, nowMs: number) {
  if (state.left[sub.runId] !== undefined) return { state, commands: [] }; // a run that left does not come back
  const url = normalizeServerUrl(sub.url);
  const known = state.subs[sub.runId];
  const next: Subscriber = {
    ...sub, url,
    subscribedAtMs: known?.subscribedAtMs ?? nowMs, sawRolling: known?.sawRolling ?? false, failed: known?.failed ?? null,
    expectEdgeUntilMs: known?.expectEdgeUntilMs ?? null, heardAtMs: nowMs,
  };
  const subs = { ...state.subs, [sub.runId]: next };
  const stale = state.seen.seenAtMs === null || nowMs - state.seen.seenAtMs > 2 * watchTimingOf(Object.values(subs)).slowMs;
  return { state: { ...state, url, subs }, commands: stale ? [{ type: "poll" } as const] : [] };
}

/** After a subscribe's reads: a new run is checked against the server's batch settings and wakes the watcher at once. */
function joined(state: WatchState, runId: string, isNew: boolean, nowMs: number) {
  if (state.left[runId] !== undefined) return { state, commands: [] };
  if (!isNew) return { state, commands: [{ type: "alarm", atMs: nowMs, mode: "ifNone" } as const] };
  const checked = checkBatching(state, [runId]);
  return { state: checked.state, commands: [...checked.commands, { type: "alarm", atMs: nowMs, mode: "set" } as const] };
}

/** A finished run leaves; the last one that asked for `stopWhenDone` (and did not fail) has the engine stopped at the next step. */
function unsubscribed(state: WatchState, runId: string, nowMs: number) {
  const left = { ...state.left, [runId]: nowMs };
  const leaving = state.subs[runId];
  if (!leaving) return { state: { ...state, left }, commands: [] };
  const { [runId]: _gone, ...subs } = state.subs;
  const others = Object.values(subs).filter((s) => s.failed === null);
  if (others.length === 0 && leaving.stopWhenDone && leaving.failed === null) {
    return { state: { ...state, subs, left, stopPending: { byRunId: runId, atMs: nowMs } }, commands: [{ type: "alarm", atMs: nowMs, mode: "set" } as const] };
  }
  return { state: { ...state, subs, left }, commands: [] };
}

/** A run's window is complete: quick polls for {@link EXPECT_EDGE_MS} (or until the next change), the alarm brought forward. */
function edgeExpected(state: WatchState, runId: string, nowMs: number) {
  const sub = state.subs[runId];
  if (!sub) return { state, commands: [] };
  const subs = { ...state.subs, [runId]: { ...sub, expectEdgeUntilMs: nowMs + EXPECT_EDGE_MS } };
  const soon = nowMs + watchTimingOf(Object.values(subs)).quickMs;
  return { state: { ...state, subs }, commands: [{ type: "alarm", atMs: soon, mode: "ifLater" } as const] };
}

/**
 * One watch step begins: runs not heard from for {@link SUBSCRIBER_TTL_MS} are dropped; the stop a leaving run asked
 * for is carried out when no run is left (a new run cancels it: it needs the engine); with runs left, a poll.
 */
function stepBegan(state: WatchState, nowMs: number) {
  if (!state.url) return { state, commands: [] };
  const subs = Object.fromEntries(Object.entries(state.subs).filter(([, s]) => nowMs - s.heardAtMs <= SUBSCRIBER_TTL_MS));
  const left = Object.fromEntries(Object.entries(state.left).filter(([, atMs]) => nowMs - atMs <= SUBSCRIBER_TTL_MS));
  const active = Object.values(subs).some((s) => s.failed === null);
  if (state.stopPending && !active) {
    return { state: { ...state, subs, left, stoppingSinceMs: nowMs }, commands: [{ type: "stopEngine", byRunId: state.stopPending.byRunId } as const] };
  }
  return { state: { ...state, subs, left, stopPending: null }, commands: active ? [{ type: "poll" } as const] : [] };
}

/** The object's own stop answered: no bootstrap, no batch settings, and the OFFLINE it caused is not "stopped elsewhere". */
function engineStopped(state: WatchState, nowMs: number, error: string | null) {
  const { seen } = state;
  const log: WatchCommand = error === null
    ? { type: "log", level: "info", message: "stopped the engine: the last run that asked for it (stopWhenDone) is done", fields: { url: state.url, byRun: state.stopPending?.byRunId ?? null } }
    : { type: "log", level: "warn", message: "could not stop the engine (stopWhenDone)", fields: { url: state.url, error } };
  return {
    state: {
      ...state, stopPending: null, stoppingSinceMs: null, boot: { ...INITIAL_BOOT }, batching: null,
      seen: { ...seen, engineStatus: ENGINE.OFFLINE, changedAtMs: nowMs, restarts: seen.restarts + (DOWN.has(seen.engineStatus) ? 0 : 1), stoppedElsewhereAtMs: null },
    },
    commands: [log],
  };
}

/**
 * One poll, as the engine was last seen ({@link seePoll}), and what it teaches: runs that saw ROLLING, expected edges
 * that came, the pool's batch settings forgotten on a restart and read again once ROLLING, mismatching runs.
 */
function polled(state: WatchState, snapshot: PollSnapshot, nowMs: number) {
  const seen = seePoll(state, snapshot, nowMs);
  const subs = Object.fromEntries(
    Object.entries(state.subs).map(([id, s]) => [
      id,
      { ...s, sawRolling: s.sawRolling || seen.engineStatus === ENGINE.ROLLING, expectEdgeUntilMs: seen.changedAtMs === nowMs ? null : s.expectEdgeUntilMs },
    ]),
  );
  const restarted = seen.restarts !== state.seen.restarts || seen.engineStatus === ENGINE.OFFLINE;
  const batching = restarted && state.batching?.source === "pool" ? null : state.batching;
  const next = { ...state, seen, subs, batching };
  // the batch settings the server really uses: read once per engine run while it rolls (then checked with them)
  if (seen.engineStatus === ENGINE.ROLLING && batching?.source !== "pool") return { state: next, commands: [{ type: "readPool" } as const] };
  return checkBatching(next);
}

/**
 * The engine as one poll shows it: a status that changed (an unreachable server is not an edge: its step is kept), a
 * restart when it went down after running or its step went back while running, and when an OFFLINE after running came
 * from elsewhere (not this object's start or stop).
 */
export function seePoll(state: Pick<WatchState, "seen" | "boot" | "stoppingSinceMs">, snapshot: PollSnapshot, nowMs: number): Seen {
  const before = state.seen;
  if (snapshot.kind === "unreachable") return { ...before, engineStatus: snapshot.engineStatus, seenAtMs: nowMs, lastError: snapshot.error };
  const { engineStatus, globalStep } = snapshot;
  const changed = (engineStatus !== before.engineStatus && before.engineStatus !== "ENGINE.CANNOT_CONNECT") || globalStep !== before.globalStep;
  const wentDown = DOWN.has(engineStatus) && !DOWN.has(before.engineStatus) && before.seenAtMs !== null && before.engineStatus !== "unknown";
  // global_step back (0 from the exit hook, or a fresh 1) while running, without a down status seen in between
  const stepBack = !wentDown && isRunning(engineStatus) && globalStep !== null && before.globalStep !== null && globalStep < before.globalStep;
  const ours = state.boot.phase !== "idle" || state.stoppingSinceMs !== null;
  const statusChanged = engineStatus !== before.engineStatus;
  const since = before.statusSinceMs ?? null;
  // how long the status that just ended lasted (running statuses only: the watcher paces itself by them)
  const learnt = statusChanged && since !== null && isRunning(before.engineStatus) && !wentDown ? { [before.engineStatus]: nowMs - since } : {};
  return {
    engineStatus,
    globalStep,
    seenAtMs: nowMs,
    statusSinceMs: statusChanged ? nowMs : since,
    dwellMs: { ...before.dwellMs, ...learnt },
    changedAtMs: changed ? nowMs : before.changedAtMs,
    restarts: before.restarts + (wentDown || stepBack ? 1 : 0),
    lastError: null,
    stoppedElsewhereAtMs: engineStatus === ENGINE.OFFLINE ? (isRunning(before.engineStatus) && !ours ? nowMs : before.stoppedElsewhereAtMs) : null,
  };
}

/** The pool's batch settings (`completed_task_target`, `task_expected_num_repeat`), then every run checked against them. */
function poolRead(state: WatchState, pool: { batchSize: number; numRepeat: number } | null, error?: string) {
  const learnt: Batching | null = pool && pool.batchSize > 0 && pool.numRepeat > 0 ? { ...pool, source: "pool" } : null;
  const next = learnt ? { ...state, batching: learnt } : state;
  const checked = checkBatching(next);
  if (error === undefined) return checked;
  return { state: checked.state, commands: [{ type: "log", level: "warn", message: "could not read the pool information; batch settings checked later", fields: { error } } as const, ...checked.commands] };
}

/**
 * Fails the runs (all, or `runIds`) whose batch settings differ from the server's, when those are known and the
 * engine runs (or boots, or this object starts it): one message names both values and the fix.
 */
export function checkBatching(state: WatchState, runIds?: readonly string[]): { state: WatchState; commands: WatchCommand[] } {
  const batching = state.batching;
  const engineUp = isRunning(state.seen.engineStatus) || state.seen.engineStatus === ENGINE.BOOTING || state.boot.phase !== "idle";
  if (!batching || !engineUp) return { state, commands: [] };
  const commands: WatchCommand[] = [];
  const subs = { ...state.subs };
  for (const s of Object.values(state.subs)) {
    if (s.failed !== null || (runIds && !runIds.includes(s.runId))) continue;
    if (batching.batchSize === s.batchSize && batching.numRepeat === s.numRepeat) continue;
    subs[s.runId] = { ...s, failed: batchMismatchMessage(s.url, batching, s) };
    commands.push({ type: "log", level: "warn", message: "run refused: batch settings differ from the server's", fields: { runId: s.runId, server: `${batching.batchSize}x${batching.numRepeat}`, run: `${s.batchSize}x${s.numRepeat}` } });
  }
  return { state: { ...state, subs }, commands };
}

/** A decision followed by the batch check (every run), as the watch step does after its bootstrap. */
function withBatchCheck(decided: { state: WatchState; commands: WatchCommand[] }): { state: WatchState; commands: WatchCommand[] } {
  const checked = checkBatching(decided.state);
  return { state: checked.state, commands: [...decided.commands, ...checked.commands] };
}

