/**
 * @module emulator/policy/policy — the simulated policy behind the emulator's LLM proxy. It is a SIMULATOR,
 * not a model: it recognises the task in the prompt (answer key, or built-in arithmetic), answers correctly with
 * probability p and otherwise wrong or malformed (as a Python program when the prompt asks for one, see
 * policy/programs), sometimes calls an offered tool first, and "learns": at each weight sync
 * p ← min(pMax, p + lr · meanReward · (1 − p)), so a run's reward curve climbs as training would.
 *
 * Deterministic for a seed: every draw comes from a stream derived from (seed, episode uuid, call index, prompt),
 * so results do not depend on how concurrent requests interleave.
 */
import type { LatencySpec } from "../latency.ts";
import type { PolicyOptions } from "../options.ts";
import { sampleLatencyMs } from "../latency.ts";
import { deriveRng, hashString } from "../rng.ts";
import type { AnswerKeyEntry, AnswerKeyStore } from "./answer-key.ts";
import { messageText, type ChatMessage, type ToolCall } from "./chat-shapes.ts";
import { composeReply, recogniseTask, taskExpression, type AnswerOutcome, type RecognisedTask } from "./replies.ts";
import { buildToolCall, functionTools, pickTool } from "./tools.ts";
import { asksForProgram, composeProgramReply } from "./programs.ts";

/** One generation request. `callIndex` is the episode's 1-based LLM call number. */
export interface PolicyRequest {
  messages: readonly ChatMessage[];
  tools?: unknown;
  episodeUuid: string;
  callIndex: number;
}

/** One generation. `content` is `""` when `toolCalls` is set. `latencyMs` is the simulated generation time. */
export interface PolicyReply {
  content: string;
  toolCalls: ToolCall[] | null;
  /** `tool_call` when the reply calls a tool; otherwise how the answer turns out (`generic`: no task found). */
  outcome: AnswerOutcome | "tool_call" | "generic";
  task: RecognisedTask["kind"];
  matchedEntry?: AnswerKeyEntry;
  /** p at the time of the call. */
  accuracy: number;
  latencyMs: number;
}

/** One learning step. */
export interface PolicyUpdate {
  meanReward: number;
  before: number;
  after: number;
}

/** Read-only view of the policy's state. */
export interface PolicyView {
  /** p: probability of a correct answer now. */
  readonly accuracy: number;
  /** Every update since creation or the last reset. */
  readonly history: readonly PolicyUpdate[];
}

/** The simulated policy. */
export class SimulatedPolicy implements PolicyView {
  private p: number;
  private readonly updates: PolicyUpdate[] = [];

  constructor(
    private readonly knobs: PolicyOptions,
    private readonly seed: number,
    readonly answerKey: AnswerKeyStore,
    public latency: LatencySpec,
  ) {
    this.p = knobs.initialAccuracy;
  }

  get accuracy(): number {
    return this.p;
  }
  get history(): readonly PolicyUpdate[] {
    return this.updates;
  }

  /** Generates one reply (deterministic for seed, episode, call index, prompt and p). */
  respond(req: PolicyRequest): PolicyReply {
    const lastText = messageText(req.messages[req.messages.length - 1] ?? { role: "user" });
    const rng = deriveRng(this.seed, req.episodeUuid, req.callIndex, hashString(lastText));
    const latencyMs = sampleLatencyMs(this.latency, deriveRng(this.seed, "latency", req.episodeUuid, req.callIndex));
    const task = recogniseTask(req.messages, this.answerKey);
    const outcome: AnswerOutcome = rng.next() < this.p ? "correct" : rng.next() < this.knobs.malformedRate ? "malformed" : "wrong";
    const base = { task: task.kind, accuracy: this.p, latencyMs, ...(task.kind === "key" ? { matchedEntry: task.entry } : {}) };
    const tools = functionTools(req.tools);
    const hasToolResult = req.messages.some((m) => m.role === "tool");
    const callsTool = deriveRng(this.seed, req.episodeUuid, "tool").next() < this.knobs.toolCallRate;
    if (tools.length > 0 && !hasToolResult && callsTool) {
      const tool = pickTool(tools, rng);
      const call = buildToolCall(tool, { expression: taskExpression(task, outcome, rng), question: task.question }, rng);
      return { ...base, content: "", toolCalls: [call], outcome: "tool_call" };
    }
    // a prompt that asks for a Python program gets one (the code-agent function runs it in a sandbox)
    const content = task.kind !== "generic" && asksForProgram(req.messages) ? composeProgramReply(task, outcome, rng) : composeReply(task, outcome, rng);
    return { ...base, content, toolCalls: null, outcome: task.kind === "generic" ? "generic" : outcome };
  }

  /** A weight sync: p ← clamp(p + lr · meanReward · (1 − p), 0, pMax). */
  learn(meanReward: number): PolicyUpdate {
    const before = this.p;
    const after = Math.min(this.knobs.maxAccuracy, Math.max(0, before + this.knobs.learningRate * meanReward * (1 - before)));
    this.p = after;
    const update = { meanReward, before, after };
    this.updates.push(update);
    return update;
  }

  /** Back to the initial p (a new training run starts from the base model). */
  reset(): void {
    this.p = this.knobs.initialAccuracy;
    this.updates.length = 0;
  }
}
