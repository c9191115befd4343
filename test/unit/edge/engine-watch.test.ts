/**
 * The pure core of a swarm server's object (edge/swarm-server/engine-watch, issue 17), in Node: every rule the
 * workerd tests of the SwarmServer (test/edge/swarm-server.test.ts) exercise through a real object — one start of an
 * OFFLINE engine, stopWhenDone, an engine stopped by another client, the batch-size check — and the branches around
 * them: the boot state machine, restart detection, subscriber expiry, the notes runs read. Time is an input.
 */
import { describe, expect, it } from "vitest";
import { ENGINE } from "../../../src/protocol/index.ts";
import type { EngineSubscription } from "../../../src/edge/swarm-server/engine-note.ts";
import { BOOT_RETRY_MS, MAX_BOOT_FAILURES } from "../../../src/edge/swarm-server/engine-boot.ts";
import { changedRuns, nextWatchAtMs, observationFor } from "../../../src/edge/swarm-server/engine-notes.ts";
import {
  batchMismatchMessage,
  EXPECT_EDGE_MS,
  initialWatchState,
  SUBSCRIBER_TTL_MS,
  watch,
  type PollSnapshot,
  type WatchCommand,
  type WatchEvent,
  type WatchState,
} from "../../../src/edge/swarm-server/engine-watch.ts";
import { DEFAULT_WATCH_TIMING } from "../../../src/edge/swarm-server/swarm-watch.ts";

const URL = "http://gpu.test:10086";
const T0 = 1_000_000;

function sub(runId: string, o: Partial<EngineSubscription> = {}): Omit<EngineSubscription, "headers"> {
  return { runId, swarm: "default", url: URL, yaml: `job of ${runId}`, batchSize: 2, numRepeat: 2, start: "if-offline", stopWhenDone: false, bootTimeoutSeconds: 60, ...o };
}

/** Feeds events in order; @returns the last state and every command. */
function run(events: WatchEvent[], from: WatchState = initialWatchState()): { state: WatchState; commands: WatchCommand[] } {
  let state = from;
  const commands: WatchCommand[] = [];
  for (const e of events) {
    const d = watch(state, e);
    state = d.state;
    commands.push(...d.commands);
  }
  return { state, commands };
}

const status = (engineStatus: string, globalStep: number | null = null): PollSnapshot => ({ kind: "status", engineStatus, globalStep });
const polled = (engineStatus: string, globalStep: number | null, nowMs: number): WatchEvent => ({ type: "polled", snapshot: status(engineStatus, globalStep), nowMs });
const join = (s: Omit<EngineSubscription, "headers">, nowMs: number): WatchEvent[] => [{ type: "subscribed", sub: s, nowMs }, { type: "joined", runId: s.runId, isNew: true, nowMs }];
const kinds = (commands: readonly WatchCommand[]) => commands.map((c) => c.type);

describe("subscriptions", () => {
  it("a first subscribe asks for a poll (nobody polled) and sets the alarm now; a fresh status needs no poll", () => {
    const first = run(join(sub("a"), T0));
    expect(kinds(first.commands)).toEqual(["poll", "alarm"]);
    expect(first.commands[1]).toEqual({ type: "alarm", atMs: T0, mode: "set" });
    expect(first.state.url).toBe(URL);
    const seen = run([polled(ENGINE.ROLLING, 3, T0), { type: "subscribed", sub: sub("a"), nowMs: T0 + 1000 }, { type: "joined", runId: "a", isNew: false, nowMs: T0 + 1000 }], first.state);
    expect(seen.commands.filter((c) => c.type === "poll")).toEqual([]);
    expect(seen.commands.at(-1)).toEqual({ type: "alarm", atMs: T0 + 1000, mode: "ifNone" });
    const stale = watch(seen.state, { type: "subscribed", sub: sub("a"), nowMs: T0 + 2 * DEFAULT_WATCH_TIMING.slowMs + 1 });
    expect(kinds(stale.commands)).toEqual(["poll"]);
  });

  it("keeps what it learnt about a run across its heartbeats (seen ROLLING, failed, first subscribe)", () => {
    const { state } = run([...join(sub("a"), T0), polled(ENGINE.ROLLING, 1, T0), { type: "subscribed", sub: sub("a"), nowMs: T0 + 500 }]);
    expect(state.subs["a"]).toMatchObject({ sawRolling: true, subscribedAtMs: T0, heardAtMs: T0 + 500, failed: null });
  });

  it("drops a run not heard from for the TTL at the next step; one heard from within it stays", () => {
    const { state } = run([...join(sub("gone"), T0), ...join(sub("here"), T0), polled(ENGINE.ROLLING, 1, T0), { type: "subscribed", sub: sub("here"), nowMs: T0 + SUBSCRIBER_TTL_MS }]);
    const step = watch(state, { type: "stepBegan", nowMs: T0 + SUBSCRIBER_TTL_MS + 1 });
    expect(Object.keys(step.state.subs)).toEqual(["here"]);
    expect(kinds(step.commands)).toEqual(["poll"]);
    const none = watch(step.state, { type: "stepBegan", nowMs: T0 + 3 * SUBSCRIBER_TTL_MS });
    expect(none.state.subs).toEqual({});
    expect(none.commands).toEqual([]); // nobody to watch for: the watcher sleeps
  });

  it("an expected edge makes the watcher quick for a while and brings the alarm forward; the next change ends it", () => {
    const { state } = run([...join(sub("a", { pollQuickMs: 100 }), T0), polled(ENGINE.ROLLING, 1, T0)]);
    const d = watch(state, { type: "edgeExpected", runId: "a", nowMs: T0 + 10 });
    expect(d.state.subs["a"]!.expectEdgeUntilMs).toBe(T0 + 10 + EXPECT_EDGE_MS);
    expect(d.commands).toEqual([{ type: "alarm", atMs: T0 + 110, mode: "ifLater" }]);
    const edge = watch(d.state, polled(ENGINE.ROLLING_POST, 1, T0 + 200));
    expect(edge.state.subs["a"]!.expectEdgeUntilMs).toBeNull();
    expect(watch(state, { type: "edgeExpected", runId: "nobody", nowMs: T0 }).commands).toEqual([]);
  });
});

describe("the boot state machine (BC-28: one sync and one start for every run racing on an OFFLINE server)", () => {
  const offline = () => run([...join(sub("b"), T0 + 1), ...join(sub("a"), T0), polled(ENGINE.OFFLINE, null, T0 + 2)]);

  it("OFFLINE with runs that may start it: the first subscriber's job is synced and started, marked before any request", () => {
    const d = watch(offline().state, { type: "bootDue", nowMs: T0 + 3 });
    expect(d.commands).toEqual([{ type: "startEngine", byRunId: "a", yaml: "job of a", batchSize: 2, numRepeat: 2 }]);
    expect(d.state.boot).toMatchObject({ phase: "starting", byRunId: "a", sinceMs: T0 + 3 });
    // the runs read that it starts; a poll meanwhile (a subscribe's) takes an OFFLINE → BOOTING as this object's own
    expect(observationFor(d.state, d.state.subs["b"]!, T0 + 4).note).toEqual({ kind: "starting", sinceMs: T0 + 3 });
    expect(watch(d.state, polled(ENGINE.BOOTING, null, T0 + 4)).state.seen.restarts).toBe(0);
    const started = watch(d.state, { type: "bootAnswered", answer: { kind: "started", byRunId: "a", batchSize: 2, numRepeat: 2 }, nowMs: T0 + 50 });
    expect(started.state.boot).toEqual({ phase: "booting", byRunId: "a", sinceMs: T0 + 50, failures: 0, lastError: null });
    expect(started.state.batching).toEqual({ batchSize: 2, numRepeat: 2, source: "synced" });
    // still OFFLINE right after the start (the server has not flipped yet): no second start within the retry pause
    expect(watch(started.state, { type: "bootDue", nowMs: T0 + 50 + BOOT_RETRY_MS - 1 }).commands).toEqual([]);
    // ROLLING: the bootstrap is over
    const rolling = run([polled(ENGINE.ROLLING, 1, T0 + 100), { type: "bootDue", nowMs: T0 + 100 }], started.state);
    expect(rolling.state.boot.phase).toBe("idle");
    expect(rolling.commands.filter((c) => c.type === "startEngine")).toEqual([]);
  });

  it("an unreachable server, an unknown status, or runs with start \"never\" start nothing", () => {
    const unreachable = run([...join(sub("a"), T0), { type: "polled", snapshot: { kind: "unreachable", engineStatus: "ENGINE.CANNOT_CONNECT", error: "refused" }, nowMs: T0 }, { type: "bootDue", nowMs: T0 }]);
    expect(unreachable.commands.filter((c) => c.type === "startEngine")).toEqual([]);
    expect(run([...join(sub("a"), T0), { type: "bootDue", nowMs: T0 }]).commands.filter((c) => c.type === "startEngine")).toEqual([]);
    const never = run([...join(sub("a", { start: "never" }), T0), polled(ENGINE.OFFLINE, null, T0), { type: "bootDue", nowMs: T0 }]);
    expect(never.commands.filter((c) => c.type === "startEngine")).toEqual([]);
    expect(observationFor(never.state, never.state.subs["a"]!, T0).note).toEqual({ kind: "waitingForStart" });
  });

  it("an engine stopped by another client is not started again: the run's note says it stopped elsewhere", () => {
    const { state } = run([...join(sub("a"), T0), polled(ENGINE.ROLLING, 4, T0), polled(ENGINE.OFFLINE, 0, T0 + 1000), { type: "bootDue", nowMs: T0 + 1000 }]);
    expect(state.boot.phase).toBe("idle");
    expect(state.seen.stoppedElsewhereAtMs).toBe(T0 + 1000);
    expect(watch(state, { type: "bootDue", nowMs: T0 + 60_000 }).commands).toEqual([]);
    expect(observationFor(state, state.subs["a"]!, T0 + 1000).note).toEqual({ kind: "stoppedElsewhere", atMs: T0 + 1000 });
  });

  it("a start another client won (a 400) goes back to idle without counting a failure", () => {
    const d = run([{ type: "bootDue", nowMs: T0 + 3 }, { type: "bootAnswered", answer: { kind: "raced", message: "already started" }, nowMs: T0 + 4 }], offline().state);
    expect(d.state.boot).toEqual({ phase: "idle", byRunId: null, sinceMs: null, failures: 0, lastError: null });
  });

  it(`a refused start is retried after ${BOOT_RETRY_MS} ms; after ${MAX_BOOT_FAILURES} in a row the runs that wait for it fail with the error and the fix`, () => {
    let state = offline().state;
    let at = T0 + 10;
    for (let i = 1; i <= MAX_BOOT_FAILURES; i++) {
      const due = watch(state, { type: "bootDue", nowMs: at });
      expect(kinds(due.commands), `try ${i}`).toEqual(["startEngine"]);
      state = watch(due.state, { type: "bootAnswered", answer: { kind: "failed", message: "HTTP 500" }, nowMs: at }).state;
      expect(state.boot).toMatchObject({ phase: "idle", failures: i, lastError: "HTTP 500" });
      expect(watch(state, { type: "bootDue", nowMs: at + BOOT_RETRY_MS - 1 }).commands).toEqual([]);
      at += BOOT_RETRY_MS;
    }
    for (const id of ["a", "b"]) expect(state.subs[id]!.failed).toBe(`could not start the engine of ${URL} (3 tries): HTTP 500. Check the swarm server, or start its engine yourself and set engine.start "never"`);
    expect(watch(state, { type: "bootDue", nowMs: at }).commands).toEqual([]);
  });

  it("BOOTING past a run's bootTimeoutSeconds fails that run; a run with a longer timeout waits on", () => {
    const { state } = run([
      ...join(sub("short", { bootTimeoutSeconds: 10 }), T0),
      ...join(sub("long", { bootTimeoutSeconds: 100 }), T0),
      polled(ENGINE.OFFLINE, null, T0),
      { type: "bootDue", nowMs: T0 },
      { type: "bootAnswered", answer: { kind: "started", byRunId: "short", batchSize: 2, numRepeat: 2 }, nowMs: T0 },
      polled(ENGINE.BOOTING, null, T0 + 5_000),
      { type: "bootDue", nowMs: T0 + 10_000 },
    ]);
    expect(state.subs["short"]!.failed).toBeNull(); // exactly at its timeout: still waiting
    const late = watch(state, { type: "bootDue", nowMs: T0 + 11_000 }).state;
    expect(late.subs["short"]!.failed).toContain("was started 11 s ago and is still BOOTING (engine.bootTimeoutSeconds 10)");
    expect(late.subs["long"]!.failed).toBeNull();
    expect(observationFor(late, late.subs["long"]!, T0 + 11_000).note).toEqual({ kind: "booting", sinceMs: T0, timeoutAtMs: T0 + 100_000 });
  });
});

describe("stopWhenDone", () => {
  const rolling = () => run([...join(sub("a", { stopWhenDone: true }), T0), polled(ENGINE.ROLLING, 2, T0)]).state;

  it("the last run that asked for it leaves: the next step stops the engine, and the OFFLINE it causes is not 'stopped elsewhere'", () => {
    const left = watch(rolling(), { type: "unsubscribed", runId: "a", nowMs: T0 + 100 });
    expect(left.state.stopPending).toEqual({ byRunId: "a", atMs: T0 + 100 });
    expect(left.commands).toEqual([{ type: "alarm", atMs: T0 + 100, mode: "set" }]);
    const step = watch(left.state, { type: "stepBegan", nowMs: T0 + 200 });
    expect(step.commands).toEqual([{ type: "stopEngine", byRunId: "a" }]);
    expect(step.state.stoppingSinceMs).toBe(T0 + 200);
    // a poll while our stop is under way: the OFFLINE is ours
    expect(watch(step.state, polled(ENGINE.OFFLINE, 0, T0 + 250)).state.seen.stoppedElsewhereAtMs).toBeNull();
    const stopped = watch(step.state, { type: "engineStopped", nowMs: T0 + 300, error: null });
    expect(stopped.state).toMatchObject({ stopPending: null, stoppingSinceMs: null, batching: null, boot: { phase: "idle" } });
    expect(stopped.state.seen).toMatchObject({ engineStatus: ENGINE.OFFLINE, restarts: 1, stoppedElsewhereAtMs: null, changedAtMs: T0 + 300 });
  });

  it("a late subscribe of the run that left (sent before it finished) does not take it back: the stop goes ahead", () => {
    const left = watch(rolling(), { type: "unsubscribed", runId: "a", nowMs: T0 + 100 }).state;
    const late = run([...join(sub("a", { stopWhenDone: true }), T0 + 150), { type: "stepBegan", nowMs: T0 + 200 }], left);
    expect(late.state.subs).toEqual({});
    expect(late.commands).toEqual([{ type: "stopEngine", byRunId: "a" }]);
    // the run is forgotten once the TTL passed (a run id never comes back in practice)
    expect(watch(late.state, { type: "stepBegan", nowMs: T0 + 100 + SUBSCRIBER_TTL_MS + 1 }).state.left).toEqual({});
  });

  it("a run that arrives before the step cancels the stop (it needs the engine); a run that did not ask never stops it", () => {
    const left = watch(rolling(), { type: "unsubscribed", runId: "a", nowMs: T0 + 100 }).state;
    const joined = run([...join(sub("b"), T0 + 150), { type: "stepBegan", nowMs: T0 + 200 }], left);
    expect(joined.commands.filter((c) => c.type === "stopEngine")).toEqual([]);
    expect(joined.state.stopPending).toBeNull();
    const other = run([...join(sub("c"), T0), { type: "unsubscribed", runId: "c", nowMs: T0 + 1 }]);
    expect(other.state.stopPending).toBeNull();
  });
});

describe("restart detection", () => {
  const at = (events: WatchEvent[]) => run([...join(sub("a"), T0), ...events]).state;

  it("a down status after a running one is a restart; a first poll or BOOTING → ROLLING is not", () => {
    expect(at([polled(ENGINE.OFFLINE, null, T0)]).seen.restarts).toBe(0);
    expect(at([polled(ENGINE.BOOTING, null, T0), polled(ENGINE.ROLLING, 1, T0 + 1)]).seen.restarts).toBe(0);
    expect(at([polled(ENGINE.ROLLING, 3, T0), polled(ENGINE.BOOTING, null, T0 + 1)]).seen.restarts).toBe(1);
    expect(at([polled(ENGINE.WEIGHT_SYNCING, 3, T0), polled(ENGINE.OFFLINE, 0, T0 + 1)]).seen.restarts).toBe(1);
  });

  it("global_step back while running (the engine came back between two polls) is a restart", () => {
    const s = at([polled(ENGINE.ROLLING, 5, T0), polled(ENGINE.ROLLING, 1, T0 + 1)]);
    expect(s.seen).toMatchObject({ restarts: 1, globalStep: 1, changedAtMs: T0 + 1 });
    expect(at([polled(ENGINE.ROLLING, 5, T0), polled(ENGINE.ROLLING, 6, T0 + 1)]).seen.restarts).toBe(0);
  });

  it("an unreachable server keeps the step, is no edge, and the runs read it in their note", () => {
    const s = at([polled(ENGINE.ROLLING, 5, T0), { type: "polled", snapshot: { kind: "unreachable", engineStatus: "ENGINE.CANNOT_CONNECT", error: "refused" }, nowMs: T0 + 10 }]);
    expect(s.seen).toMatchObject({ engineStatus: "ENGINE.CANNOT_CONNECT", globalStep: 5, seenAtMs: T0 + 10, changedAtMs: T0, lastError: "refused", restarts: 0 });
    expect(observationFor(s, s.subs["a"]!, T0 + 10).note).toEqual({ kind: "unreachable", error: "refused" });
    // the answer after it is compared with the last real status: same status and step, no change
    expect(watch(s, polled(ENGINE.ROLLING, 5, T0 + 20)).state.seen).toMatchObject({ changedAtMs: T0, lastError: null });
  });
});

describe("the batch-size check", () => {
  const rollingWith = (runs: Array<Omit<EngineSubscription, "headers">>) => run([...runs.flatMap((r) => join(r, T0)), polled(ENGINE.ROLLING, 1, T0)]);

  it("ROLLING with unknown batch settings: the pool is read once per engine run; a run that differs fails with both values and the fix", () => {
    const r = rollingWith([sub("same"), sub("other", { batchSize: 4 })]);
    expect(kinds(r.commands).filter((k) => k === "readPool")).toEqual(["readPool"]);
    const read = watch(r.state, { type: "poolRead", pool: { batchSize: 2, numRepeat: 2 } });
    expect(read.state.batching).toEqual({ batchSize: 2, numRepeat: 2, source: "pool" });
    expect(read.state.subs["same"]!.failed).toBeNull();
    expect(read.state.subs["other"]!.failed).toBe(batchMismatchMessage(URL, { batchSize: 2, numRepeat: 2, source: "pool" }, { batchSize: 4, numRepeat: 2 }));
    expect(read.state.subs["other"]!.failed).toContain("(its pool information (completed_task_target, task_expected_num_repeat))");
    expect(observationFor(read.state, read.state.subs["other"]!, T0).note).toMatchObject({ kind: "failed" });
    // known from the pool: not read again while it runs; forgotten on a restart, read again once ROLLING
    expect(kinds(watch(read.state, polled(ENGINE.ROLLING, 2, T0 + 1)).commands)).not.toContain("readPool");
    const restarted = run([polled(ENGINE.OFFLINE, 0, T0 + 2)], read.state);
    expect(restarted.state.batching).toBeNull();
  });

  it("a new run on a server whose settings are known fails as it joins; settings this object synced are named as such", () => {
    const started = run([
      ...join(sub("a", { batchSize: 8 }), T0),
      polled(ENGINE.OFFLINE, null, T0),
      { type: "bootDue", nowMs: T0 },
      { type: "bootAnswered", answer: { kind: "started", byRunId: "a", batchSize: 8, numRepeat: 2 }, nowMs: T0 },
    ]);
    const late = run(join(sub("late", { batchSize: 2 }), T0 + 5), started.state);
    expect(late.state.subs["late"]!.failed).toContain("(the config synced to it)");
    expect(late.commands.find((c) => c.type === "log")).toMatchObject({ level: "warn", fields: { runId: "late", server: "8x2", run: "2x2" } });
  });

  it("an engine that does not run (OFFLINE, unknown) fails nobody; an unreadable pool is logged and checked later", () => {
    const offline = run([...join(sub("a", { batchSize: 4 }), T0), polled(ENGINE.OFFLINE, null, T0), { type: "poolRead", pool: { batchSize: 2, numRepeat: 2 } }]);
    expect(offline.state.subs["a"]!.failed).toBeNull();
    const unreadable = watch(rollingWith([sub("a")]).state, { type: "poolRead", pool: null, error: "timeout" });
    expect(unreadable.state.batching).toBeNull();
    expect(unreadable.commands[0]).toMatchObject({ type: "log", level: "warn", message: "could not read the pool information; batch settings checked later" });
  });
});

describe("what the runs hear", () => {
  it("a status change goes to every run but the one whose poll saw it; otherwise only a run whose note changed", () => {
    const before = run([...join(sub("a"), T0), ...join(sub("b"), T0), polled(ENGINE.ROLLING, 1, T0)]).state;
    const first = changedRuns(before.seen, before, {}, null, T0);
    expect(first.runIds).toEqual(["a", "b"]); // nothing heard yet
    const after = watch(before, polled(ENGINE.ROLLING_POST, 1, T0 + 1)).state;
    expect(changedRuns(before.seen, after, first.notes, "a", T0 + 1).runIds).toEqual(["b"]);
    expect(changedRuns(after.seen, after, first.notes, null, T0 + 1).runIds).toEqual([]);
    const failed = { ...after, subs: { ...after.subs, b: { ...after.subs["b"]!, failed: "no" } } };
    expect(changedRuns(after.seen, failed, first.notes, null, T0 + 1).runIds).toEqual(["b"]);
  });

  it("the watcher sleeps when no live run is left, and paces itself by the runs' settings otherwise", () => {
    const { state } = run([...join(sub("a", { pollSlowMs: 2_000 }), T0), polled(ENGINE.ROLLING, 1, T0 - 60_000)]);
    expect(nextWatchAtMs(state, null, T0)).toBe(T0 + 2_000);
    expect(nextWatchAtMs({ ...state, subs: { a: { ...state.subs["a"]!, failed: "x" } } }, null, T0)).toBeNull();
  });

  it("learns how long each running status lasted (not a step change within it) and waits for the next end of a weight sync at the paced interval", () => {
    const t = T0;
    const { state } = run([
      ...join(sub("a"), t),
      polled(ENGINE.ROLLING, 1, t),
      polled(ENGINE.ROLLING_POST, 1, t + 4_000),
      polled(ENGINE.WEIGHT_SYNCING, null, t + 4_300),
      polled(ENGINE.WEIGHT_SYNCING, 1, t + 4_600), // the trainer's second post, with the step: the status did not change
      polled(ENGINE.ROLLING, 2, t + 9_300),
      polled(ENGINE.ROLLING_POST, 2, t + 13_300),
      polled(ENGINE.WEIGHT_SYNCING, 2, t + 13_600),
    ]);
    expect(state.seen.dwellMs).toEqual({ [ENGINE.ROLLING]: 4_000, [ENGINE.ROLLING_POST]: 300, [ENGINE.WEIGHT_SYNCING]: 5_000 });
    expect(state.seen.statusSinceMs).toBe(t + 13_600);
    // the next ROLLING is expected 5 s after this sync began: paced polls until 1 s before, then quick
    expect(nextWatchAtMs(state, null, t + 13_600)).toBe(t + 13_600 + DEFAULT_WATCH_TIMING.pacedMaxMs);
    expect(nextWatchAtMs(state, null, t + 17_700)).toBe(t + 17_700 + DEFAULT_WATCH_TIMING.quickMs);
  });
});
