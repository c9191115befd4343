/**
 * @module ajet-edge — the public API a rollout function imports (`import { defineRolloutFunction } from "ajet-edge"`):
 * the function contract, chat and tool helpers, the rewards (answer extraction, equivalence, Countdown), the LLM
 * judge, and the task and output types. Runs in workerd and in Node. The test context is `ajet-edge/testing`, the
 * Worker factory `ajet-edge/worker`, the local swarm emulator `ajet-edge/emulator` (Node only).
 */
export {
  AbortCause,
  bindSwarms,
  DEFAULT_SWARM,
  defineRolloutFunction,
  EpisodeAbortError,
  fromAgentRun,
  serverOfSwarm,
  swarmsOf,
  type EpisodeEndpoint,
  type RolloutContext,
  type RolloutFunction,
  type RolloutFunctionDemo,
  type RolloutLogger,
  type RolloutOutput,
  type RolloutResult,
  type SeedAgentRun,
} from "./sdk/contract.ts";
export {
  SandboxError,
  isSandboxInfraError,
  type CodeLanguage,
  type CodeOptions,
  type CodeResult,
  type CommandOptions,
  type CommandResult,
  type FileEntry,
  type Sandbox,
  type SandboxErrorKind,
  type SandboxOptions,
} from "./sandbox/types.ts";
export { INSTANCE_TYPES, INSTANCE_TYPE_NAMES, type InstanceType, type SandboxRunConfigInput } from "./port/sandbox.ts";
export { completeChat, initialMessages, seedClient, SWARM_LLM_TIMEOUT_MS, type ChatIo, type ChatTurn } from "./sdk/chat.ts";
export * from "./sdk/tools.ts";
export * from "./sdk/llm-guards.ts";
export * from "./rewards/index.ts";
export * from "./rewards/judge.ts";
export * from "./rewards/judge-fallback.ts";
export * from "./rewards/judge-budget.ts";
export {
  assertValidWorkflowOutput,
  InvalidWorkflowOutputError,
  LogMetricValue,
  Task,
  ValidWorkflowOutput,
  WorkflowOutput,
} from "./protocol/task.ts";
export { buildCountdownPrompt, type CountdownPuzzle, type CountdownTaskMetadata } from "./tasks/countdown-prompt.ts";
export { generateCountdownTasks } from "./tasks/countdown-generator.ts";
export { DatasetLoadError, tasksFromObjects, type LoadOptions, type LoadReport, type LoadResult } from "./tasks/load.ts";
export { toSafeInteger } from "./tasks/values.ts";
