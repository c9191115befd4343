/** @module emulator — a faithful local AgentJet swarm server emulator: simulated engine and policy (issue 2 §5). */
export { createEmulator, type AnswerKeyApi, type Emulator, type EmulatorEngineView, type EmulatorOptions } from "./emulator.ts";
export { startEmulator, type RunningEmulator, type StartEmulatorOptions } from "./node-server.ts";
export { createManualClock, createSystemClock, type Clock, type ManualClock, type TimerHandle } from "./clock.ts";
export {
  DEFAULT_MANNERS,
  DEFAULT_POLICY,
  EmulatorProfile,
  EmulatorTimings,
  PROFILES,
  PolicyOptions,
  ServerManners,
  UpstreamOptions,
  type ResolvedEmulatorConfig,
} from "./options.ts";
export { DROP_HEADER, type ChatCallInfo, type EmulatorHooks, type FaultAction, type LlmRoute } from "./hooks.ts";
export { PROXY_WAIT_SLICE_MS, STREAM_KEEPALIVE_MS } from "./proxy/llm-call.ts";
export { FaultKind, FaultSpec, faultHooks, parseFaultFlag } from "./faults.ts";
export { Journal, parseJournal, type JournalEvent } from "./journal.ts";
export type { RequestLogEntry } from "./http/deps.ts";
export type { DropReason, StepLogEntry, StepLogEpisode } from "./step-log.ts";
export type { EpisodeRecord, StatusChange } from "./server/state.ts";
export type { EngineSimView } from "./engine/engine-sim.ts";
export type { PolicyReply, PolicyRequest, PolicyUpdate, PolicyView } from "./policy/policy.ts";
export { SimulatedPolicy } from "./policy/policy.ts";
export {
  AnswerKeyStore,
  AnswerFormat,
  loadAnswerKeyFile,
  normalizeAnswerKeyRow,
  type AnswerKeyEntry,
  type AnswerKeyInput,
} from "./policy/answer-key.ts";
export { parseTrainConfig, type TrainConfig } from "./train-config.ts";
