/**
 * @module scheduler — the pure scheduler core of one run (issue 3 §1; design: docs/design/episode-lifecycle.md).
 * No fetch, no storage, no timers, no clock, no Math.random: `decide(state, event, nowMs)` returns the new state,
 * the commands to carry out, the rows to persist and an ack; `nextWakeAtMs(state)` is the alarm.
 *
 * The Durable Object loop, for every RPC and for `alarm()` (one `tick`):
 * @example
 * ```ts
 * import { decide, nextWakeAtMs, type SchedulerEvent } from "../scheduler/index.ts";
 *
 * // inside the run's loop (src/edge/run/run-loop.ts; state loaded once under blockConcurrencyWhile via stateFromRows(storage rows))
 * private apply(event: SchedulerEvent): EventAck {
 *   const { state, commands, changes, ack } = decide(this.state, event, Date.now()); // synchronous: slots reserved (BC-47)
 *   this.storage.persist(changes);   // upsert run/episodes/steps/evalTasks rows, delete changes.deletedEpisodeKeys
 *   this.state = state;
 *   await this.execute(commands);    // log, dispatchEpisodes (sendBatch; on throw → dispatchFailed), finishRun; the
 *                                    // swarm-facing ones (pollEngineStatus → engineStatusSeen, abortEpisodes,
 *                                    // resolveOutbox) are queued for the alarm when the event came from an episode RPC
 *                                    // (src/edge/run/run-loop.ts apply, edge/run/command-runner.ts split)
 *   const wake = nextWakeAtMs(state);
 *   if (wake === null) void this.ctx.storage.deleteAlarm(); else void this.ctx.storage.setAlarm(wake);
 *   return ack;                      // the consumer aborts what it holds unless ack is applied/duplicate (see EventAck)
 * }
 * async alarm() { try { this.apply({ type: "tick" }); } finally { re-arm with nextWakeAtMs or a back-off (BC-45) } }
 * ```
 */
export { RunSpec, DatasetRef, EnginePolicy, SwarmServerSpec, parseRunSpec, parseWith, runSpecSchema } from "./run-spec.ts";
export type { DatasetEntrySchema, RunSpecInput, RunSpecIssue } from "./run-spec.ts";
export { RunTuning, resolveTuning, type SchedulerTiming } from "./tuning.ts";
export { MAX_WEIGHT_RATIO, SPEC_RANGES, numberText, rangeText, type RangedField, type SpecRange } from "./spec-ranges.ts";
export { schedulerConfig, type SchedulerConfig, type SourceConfig } from "./config.ts";
export * from "./state.ts";
export { episodeIndex, inFlightCount, type EpisodeIndex } from "./episode-index.ts";
export type * from "./events.ts";
/** the port words the core's events, rows and acks are made of (their home is src/port) */
export type { ClaimFailureCause, DispatchRef, EpisodeClaim, EpisodeOutcome, EpisodeRef, EpisodeReportResult, EventAck } from "../port/index.ts";
export { throttlePolicyFor } from "./commands.ts";
export type * from "./commands.ts";
export { decide, nextWakeAtMs } from "./decide.ts";
export { isDispatchCurrent, reportedReward } from "./episode-lifecycle.ts";
export { reclaimedBy } from "./leases.ts";
export { POOL_LAG_MS, STOP_UNKNOWN_GRACE_MS, UNKNOWN_RECHECK_MS, type EndUnknown } from "./unknown-ends.ts";
export { runStatus, type RunStatus, type SourceProgress, type BatchTruth } from "./status.ts";
export { runSummary, type RunSummary, type WindowSummary } from "./summary.ts";
export { evalReport, unbiasedPassAtK, type EvalReport, type EvalTaskReport, type EvalAggregate } from "./eval-report.ts";
export { permuteIndex, permutationKey, takeTask, isExhausted, type SourceCursor } from "./epochs.ts";
export { allocateSlots, throttleCap, sourceCapIssues, type Allocation } from "./mixing.ts";
export { maxWindowGroups, windowCapacityIssues, WindowCapacityError, type CapacityRun, type CapacitySource } from "./window-capacity.ts";
export { extraGroups, type ExtraGroupsInput } from "./over-provision.ts";
export { isGateOpen, type EngineView } from "./engine-gate.ts";
