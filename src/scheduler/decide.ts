/**
 * @module scheduler/decide — the core: `decide(state, event, nowMs) → { state, commands, changes, ack }` and
 * `nextWakeAtMs(state)`. Pure and deterministic: no clock, no I/O, randomness from the seeded state. After applying
 * the event it runs one "pump": leases (BC-51), back-offs, windows or eval groups, dispatch (BC-25, BC-47), stop
 * conditions, and the engine status poll schedule.
 */
import type { Decision } from "./commands.ts";
import { Draft } from "./draft.ts";
import { AbortCause, type EventAck } from "../port/index.ts";
import type { DispatchFailed, EngineStatusSeen, SchedulerEvent } from "./events.ts";
import { isGateOpen, observeEngine } from "./engine-gate.ts";
import { closeSyncedBatch, observeBatches, openBatches, rewardsInOpenBatches } from "./batches.ts";
import { batchesToWaitFor, currentOpenBatch, groupsNeeded } from "./batch-needs.ts";
import { isRow, lookupDispatch, onClaimFailed, onEpisodeClaimed, onOutcomeRecorded, onReported, requeueAfterClaimFailure } from "./episode-lifecycle.ts";
import { dispatchReady, freeSlots, releaseBackoffs } from "./dispatch.ts";
import { expireLeases } from "./leases.ts";
import { onEpisodeHeartbeat } from "./heartbeats.ts";
import { askTopUp, isMidRunRefused, isSharedBatch, isTopUpStarved, onTopUpGrant, planRequest, topUpRoom } from "./top-up-ask.ts";
import { BATCH_EFFECTS, openEvalGroups, openWindow, resolveGroupIfDone } from "./task-groups.ts";
import { currentStep, type SchedulerState, type StopReason } from "./state.ts";
import { DETERMINISTIC_FAILURE_ATTEMPTS, isDeterministicFailure } from "./failure-streak.ts";
import { runSummary } from "./summary.ts";
import { hasUnresolvedEnds, reconcileEnds, STOP_UNKNOWN_GRACE_MS, UNKNOWN_RECHECK_MS } from "./unknown-ends.ts";
import { ENGINE } from "../protocol/index.ts";
import { episodeIndex, inFlightCount } from "./episode-index.ts";
import { isAgreeMode, learnServerMethod } from "./collection-method.ts";
import { leavingVote, onSyncVoteAnswered, voteForSync } from "./sync-vote.ts";
import { cutClosingWindow } from "./over-provision.ts";

const APPLIED: EventAck = { status: "applied" };

/**
 * Applies one event at instant `nowMs` (epoch ms) and decides what to do next.
 * @returns the new state (the input is not mutated; the same object when nothing changed), the commands to carry
 * out in order, the rows to persist (`changes`: upsert `run` if non-null, `episodes`, `steps`, `evalTasks`; delete
 * `deletedEpisodeKeys`), and the event's {@link EventAck}. Never throws for well-typed input.
 */
export function decide(state: SchedulerState, event: SchedulerEvent, nowMs: number): Decision {
  const d = new Draft(state, nowMs);
  const ack = applyEvent(d, event);
  // the same function error on the first attempts: a bug, not bad luck; stop instead of retrying every task
  if (d.run.phase === "running" && isDeterministicFailure(d.run, d.rows().some((r) => r.status === "ended" || r.outcome?.kind === "end"))) {
    const detail = d.run.firstFailure?.detail ?? d.run.failureStreak?.detail ?? null;
    d.log("error", `the function failed the same way on its first ${DETERMINISTIC_FAILURE_ATTEMPTS} attempts; stopping the run`, { detail });
    beginDrain(d, "functionError");
  }
  // a heartbeat only moves one lease later (or drops a dispatch while draining): nothing else can have become due, so
  // the pump (leases, windows, dispatch: every live row) is left to the next event or tick
  const light = event.type === "episodeHeartbeat" && d.run.phase !== "draining";
  if (!light && (d.run.phase === "running" || d.run.phase === "draining" || d.run.phase === "finishing")) pump(d);
  return d.done(ack);
}

function applyEvent(d: Draft, event: SchedulerEvent): EventAck {
  const { phase } = d.run;
  if ("episodeKey" in event && (phase === "created" || phase === "finished")) {
    return { status: phase === "finished" ? "stale" : "unknown", reason: `the run is ${phase}` };
  }
  switch (event.type) {
    case "runStarted":
      if (phase !== "created") return { status: "duplicate" };
      d.run.phase = "running";
      d.run.startedAtMs = d.nowMs;
      d.run.nextPollAtMs = d.nowMs;
      d.log("info", "run started", { episodeType: d.run.config.episodeType, batchSize: d.run.config.batchSize, numRepeat: d.run.config.numRepeat });
      warnFullSources(d);
      return APPLIED;
    case "engineStatusSeen":
      return onEngineStatus(d, event);
    case "dispatchFailed":
      return onDispatchFailed(d, event);
    case "episodeClaimed":
      return onEpisodeClaimed(d, event);
    case "episodeHeartbeat":
      return onEpisodeHeartbeat(d, event);
    case "claimFailed":
      return onClaimFailed(d, event);
    case "episodeOutcomeRecorded":
      return onOutcomeRecorded(d, event);
    case "episodeReported":
      return onReported(d, event);
    case "tick":
      return APPLIED;
    case "stopRequested":
      return onStopRequested(d, event.reason, event.failed === true);
    case "syncVoteAnswered":
      onSyncVoteAnswered(d, event);
      return APPLIED;
  }
}

/**
 * A source with exactly as many tasks as one window can take from it fills that window with all of them, so a
 * dropped group (BC-32) there cannot be replaced from it (a window never holds one task twice): say so at the start
 * (info: the drop itself, if it comes, logs a warning).
 */
function warnFullSources(d: Draft): void {
  for (const s of d.run.config.sources) {
    if (s.maxWindowGroups === null || s.taskCount > s.maxWindowGroups) continue;
    d.log("info", "a window can take every task of this dataset: a dropped group may have to be replaced from another dataset, or end the run at its window; add tasks to avoid that", {
      dataset: s.name, taskCount: s.taskCount, maxWindowGroups: s.maxWindowGroups,
    });
  }
}

function onEngineStatus(d: Draft, e: EngineStatusSeen): EventAck {
  const i = d.run.config.swarms.indexOf(e.swarm);
  const view = d.run.engines[i];
  if (!view) return { status: "unknown", reason: `swarm "${e.swarm}" is not part of this run` };
  const { view: next, enteredRolling } = observeEngine(view, e.engineStatus, e.globalStep, d.nowMs);
  d.run.engines[i] = next;
  if (enteredRolling) releaseBackoffs(d, true); // BC-25: resume on the edge, not after a fixed sleep
  // the server's method rules over the job's (scheduler/collection-method; single-server runs only)
  if (e.pool?.method) learnServerMethod(d, e.pool.method);
  // batch truth: each server's status, step and pool information close or wipe its batches holding our rewards
  if (d.run.config.episodeType === "train") observeBatches(d, i, next, e.pool, BATCH_EFFECTS);
  // recorded ends: the server's record settles the quiet and the unknown ones (scheduler/unknown-ends)
  if (d.run.config.episodeType === "train") reconcileEnds(d, i, next, e.pool);
  // the first server's object answered the run's top-up ask (scheduler/top-up-ask)
  if (i === 0 && d.run.config.episodeType === "train") onTopUpGrant(d, e);
  if (i === 0 && d.run.config.episodeType === "train") hookWeightSync(d, e);
  return APPLIED;
}

/**
 * The weight-sync hooks, once per server step of the first server: on WEIGHT_SYNCING at step N, or — a sync between
 * two polls — on the engine seen collecting N + 1 with N not hooked yet; with this run's share of the batch trained.
 * Steps trained before the run's first observation are not hooked; a restart (the step going back) starts over.
 */
function hookWeightSync(d: Draft, e: EngineStatusSeen): void {
  const g = e.globalStep;
  if (g === null || d.run.phase === "created" || d.run.phase === "finished") return;
  const synced = e.engineStatus === ENGINE.WEIGHT_SYNCING ? g : e.engineStatus === ENGINE.ROLLING || e.engineStatus === ENGINE.ROLLING_POST ? g - 1 : null;
  if (synced === null) return;
  let hooked = d.run.weightSyncHookedStep;
  // first observation, or a restart (the step below the last hooked): nothing before this step is hooked
  if (hooked === undefined || hooked > g) hooked = g - 1;
  if (synced <= hooked) {
    d.run.weightSyncHookedStep = hooked;
    return;
  }
  const epoch = d.run.engines[0]?.restarts ?? 0;
  for (let step = Math.max(hooked + 1, synced - 9); step <= synced; step++) {
    const batch = Object.values(d.batches).find((b) => !b.server && b.engineEpoch === epoch && b.globalStep === step);
    const episodes = batch?.episodesLanded ?? 0;
    d.weightSyncHook({
      type: "weightSyncHook", step,
      metrics: { episodes, meanReward: batch && episodes > 0 ? batch.rewardSum / episodes : null, otherClientsEpisodes: batch?.foreignEpisodes ?? 0, windows: d.run.windowsOpened },
    });
  }
  d.run.weightSyncHookedStep = synced;
}

function onDispatchFailed(d: Draft, e: DispatchFailed): EventAck {
  let applied = 0;
  for (const ref of e.episodes) {
    const row = lookupDispatch(d, ref);
    if (!isRow(row) || row.status !== "dispatched") continue;
    d.run.totals.claimFailures++;
    d.count(d.run.claimFailuresByKind, "dispatch");
    requeueAfterClaimFailure(d, row, "dispatch");
    applied++;
  }
  if (applied > 0) d.log("warn", "dispatch failed; episodes queued again (not an attempt)", { episodes: applied, reason: e.reason ?? null });
  return applied > 0 ? APPLIED : { status: "duplicate" };
}

function onStopRequested(d: Draft, reason: string | undefined, failed: boolean): EventAck {
  if (d.run.phase === "draining" || d.run.phase === "finished") return { status: "duplicate" };
  if (failed) d.log("error", "run failed: draining", { reason: reason ?? null });
  else d.log("info", "stop requested: draining", { reason: reason ?? null });
  return beginDrain(d, failed ? "failed" : "stopRequested");
}

/** Drains the run with `stopReason`: no new dispatch, queued repeats dropped, in-flight ones finish or fail. */
function beginDrain(d: Draft, stopReason: StopReason): EventAck {
  d.run.stopReason = stopReason;
  d.run.stopRequestedAtMs = d.nowMs;
  if (d.run.phase === "created") {
    finish(d);
    return APPLIED;
  }
  d.run.phase = "draining";
  for (const row of d.rows()) {
    if (row.status === "queued") d.patchEpisode(row.episodeKey, { status: "dropped", notBeforeMs: null, lastCause: AbortCause.stopped });
  }
  for (const groupKey of new Set(d.rows().map((r) => r.groupKey))) resolveGroupIfDone(d, groupKey);
  return APPLIED;
}

function pump(d: Draft): void {
  // the passes over every row run only once the clock reaches the earliest lease or back-off (a maintained bound)
  if (d.index.earliestMs <= d.nowMs) {
    expireLeases(d);
    releaseBackoffs(d);
    d.refreshEarliest();
  }
  // over-provisioning: once the window's batch is closing, its slow repeats are given back (scheduler/over-provision)
  if (d.run.config.episodeType === "train") cutClosingWindow(d, resolveGroupIfDone);
  if ((d.run.phase === "running" || d.run.phase === "finishing") && isGateOpen(d.run.engines)) {
    openWork(d);
    dispatchReady(d);
  }
  advancePhase(d);
  schedulePoll(d);
}

/** Train: no new window (maxSteps windows opened, or a source used up its epochs). */
function windowsDone(d: Draft): boolean {
  const { run } = d;
  return run.dataExhausted || (run.config.maxSteps !== null && run.windowsOpened >= run.config.maxSteps);
}

/**
 * Eval: groups to fill free slots. Train, once the current window is resolved: while a batch of the first server
 * holding this run's rewards is collecting and lacks complete tasks, top it up (`topUpLastBatch`, the default) so it
 * closes and the next window starts with the next batch; without top-up, the next window fills it (its boundaries
 * shift). When no open batch of the first server holds our rewards (all trained), the next window opens (another
 * server's open batch is filled by it).
 */
function openWork(d: Draft): void {
  const { run } = d;
  if (run.config.episodeType === "eval") {
    if (run.dataExhausted) return;
    // count every queued row (back-offs too), so claim failures never make the eval run open groups without bound
    const queued = d.index.counts.queued;
    const missing = freeSlots(d) - queued;
    if (missing > 0) openEvalGroups(d, Math.ceil(missing / run.config.numRepeat));
    return;
  }
  const current = currentStep(d);
  if (current && current.resolvedAtMs === null) return;
  if (d.episodes.size > 0) return; // re-runs or top-ups still queued or in flight
  if (openBatches(d, null).length > 0) {
    const batch = currentOpenBatch(d);
    if (!batch) return; // draining or training: wait for the engine to close it
    // agree modes: the batch closes by the clients' votes; this run's share is complete (scheduler/sync-vote)
    if (isAgreeMode(d)) {
      voteForSync(d, batch);
      return;
    }
    const need = groupsNeeded(d, batch);
    if (need <= 0) return; // complete: the engine closes it on its own
    // a batch other clients feed is filled by the next window while windows remain (scheduler/top-up-ask); the
    // last window's is topped up with the server object's grant, one batch's worth per run at most
    // (mid-run with the run's top-up room used up, or its ask refused because another run shares the server, the next
    // window fills it: never a wait a window would end)
    const midRun = !windowsDone(d);
    const topUp = (run.config.topUpLastBatch ?? true) && (!midRun || (!isSharedBatch(batch) && topUpRoom(d, batch) > 0 && !isMidRunRefused(d, batch)));
    if (topUp) askTopUp(d, batch, need, midRun);
    else if (midRun) openWindow(d);
    return;
  }
  if (run.phase !== "running" || windowsDone(d)) return;
  openWindow(d);
}

function advancePhase(d: Draft): void {
  const { run } = d;
  if (run.phase === "draining") {
    // a batch holding our rewards that the engine drains (ROLLING_POST), or that is complete (the engine closes it
    // on its own), is about to be trained: a stop waits a bounded time for its sync to show it, so it is counted
    // trained, not untrained
    // (agree modes: a collecting batch closes only once this run's vote is agreed)
    const agreed = (b: { batchKey: string }) => run.syncVote?.batchKey === b.batchKey && run.syncVote.answer === "agreed";
    const closing = (b: Parameters<typeof groupsNeeded>[1]) => (isAgreeMode(d) ? agreed(b) : groupsNeeded(d, b) <= 0);
    const draining = openBatches(d).some((b) => b.lastStatus === ENGINE.ROLLING_POST || (b.lastStatus === ENGINE.ROLLING && closing(b)));
    const waited = run.stopRequestedAtMs !== null && d.nowMs - run.stopRequestedAtMs >= STOP_UNKNOWN_GRACE_MS;
    // all mode: a stopping run votes before it leaves, so it never holds the other clients' sync (scheduler/sync-vote)
    if (inFlightCount(d.index) === 0 && leavingVote(d)) return;
    if (inFlightCount(d.index) === 0 && (!draining || waited)) finish(d);
    return;
  }
  if (d.episodes.size > 0 || (run.phase !== "running" && run.phase !== "finishing")) return;
  if (run.config.episodeType === "eval") {
    if (run.dataExhausted) {
      run.stopReason ??= "epochsDone";
      finish(d);
    }
    return;
  }
  if (!windowsDone(d)) return;
  run.stopReason = run.config.maxSteps !== null && run.windowsOpened >= run.config.maxSteps ? "maxSteps" : "epochsDone";
  const held = rewardsInOpenBatches(d);
  // every accepted reward must be trained before the run says it is done; without top-up, say how many are not
  if (held === 0 || !(run.config.topUpLastBatch ?? true)) {
    finish(d);
  } else if (batchesToWaitFor(d).length === 0) {
    // only other servers' batches hold rewards, and they lack tasks a top-up could not give without unbalancing the first
    d.log("warn", "another server's batch holds this run's rewards and lacks tasks; finishing and reporting them untrained", {
      rewardsUntrained: held, batches: openBatches(d).map((b) => b.batchKey).join(","),
    });
    finish(d);
  } else if (isTopUpStarved(d)) {
    d.log("warn", "this run topped up all it may and nobody else filled the batch; finishing and reporting its rewards untrained", { rewardsUntrained: held });
    finish(d);
  } else if (run.phase === "running") {
    run.phase = "finishing";
    const last = currentStep(d);
    d.log("info", "last window resolved; waiting for the server to train the batches that hold its rewards", {
      windowIndex: last?.windowIndex ?? null, rewardsUntrained: held, batches: openBatches(d).map((b) => b.batchKey).join(","),
    });
  }
}

function finish(d: Draft): void {
  // a batch seen syncing its weights (WEIGHT_SYNCING at its step) was handed to the trainer: trained, also for a run
  // that stops before the engine is back at ROLLING (spec §4.2 step 5)
  for (const b of openBatches(d)) if (b.lastStatus === ENGINE.WEIGHT_SYNCING) closeSyncedBatch(d, b);
  d.run.phase = "finished";
  d.run.finishedAtMs = d.nowMs;
  d.run.nextPollAtMs = null;
  d.run.untrainedRewards = d.run.config.episodeType === "train" ? rewardsInOpenBatches(d) : 0;
  const level = d.run.untrainedRewards > 0 ? "warn" : "info";
  d.log(level, d.run.untrainedRewards > 0 ? "run finished with rewards the server has not trained" : "run finished", {
    stopReason: d.run.stopReason, episodesEnded: d.run.totals.episodesEnded, untrainedRewards: d.run.untrainedRewards,
  });
  d.finishRun(runSummary(d.snapshot()));
}

function schedulePoll(d: Draft): void {
  const { run } = d;
  if (run.phase === "finished" || run.nextPollAtMs === null || run.nextPollAtMs > d.nowMs) return;
  // the pool information of a server only matters while one of its batches holds rewards of this run (confirmations,
  // other clients, top-up)
  // and while an end's outcome is unknown: the pool is its evidence (scheduler/unknown-ends), read at least every recheck
  const unresolved = run.config.episodeType === "train" && hasUnresolvedEnds(d);
  const withPool = run.config.episodeType === "train" ? run.config.swarms.filter((s, i) => unresolved || openBatches(d, i === 0 ? null : s).length > 0) : [];
  d.pollEngines([...run.config.swarms], withPool, planRequest(d));
  const { timing } = run.config;
  const every = isGateOpen(run.engines) ? timing.statusPollRollingMs : timing.statusPollWaitingMs;
  run.nextPollAtMs = d.nowMs + (unresolved ? Math.min(every, UNKNOWN_RECHECK_MS) : every);
}

/**
 * The earliest instant (epoch ms) the core needs to be woken with a `tick`: the next engine status poll, the
 * nearest lease deadline, or the nearest claim back-off. The DO sets its alarm to it (or deletes the alarm on null:
 * the run is finished or not started). Always in the future of the last decision's `nowMs`. O(1): the lease and
 * back-off part is the episode index's bound, which is never later than the truth but may be earlier (a lease that
 * was extended): such a wake is a tick that finds nothing due and tightens the bound.
 */
export function nextWakeAtMs(state: SchedulerState): number | null {
  const { run } = state;
  if (run.phase === "finished" || run.phase === "created") return null;
  const wake = Math.min(run.nextPollAtMs ?? Number.POSITIVE_INFINITY, episodeIndex(state.episodes).earliestMs);
  return Number.isFinite(wake) ? wake : null;
}
