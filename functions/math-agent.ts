/**
 * @module functions/math-agent — the GSM8K math agent (issue 4 §2, the seed's Demo 1): a system prompt asking
 * for `\boxed{}`, a `calculator` tool over the safe arithmetic parser, up to `maxTurns` LLM calls, and a reward
 * from the FINAL assistant message only (BC-04) compared exactly with the gold (BC-01 … BC-16). The answer readers
 * fit the task: a GSM8K task accepts `#### N` as well as a box (BC-10), other tasks the box only; a run chooses
 * others with its dataset's `answerReaders` (carried on each task as `metadata.answer_readers`).
 */
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import {
  AnswerReader,
  calculator,
  CALCULATOR_TOOL,
  type ChatIo,
  completeChat,
  defineRolloutFunction,
  EpisodeAbortError,
  initialMessages,
  messageText,
  parseGsm8kGold,
  parseToolCalls,
  type RolloutOutput,
  runToolCalls,
  scoreMathAnswer,
  seedClient,
  type Task,
} from "ajet-edge";

/** The system prompt sent first on every request (BC-44). Its `\boxed{}` never scores: only the reply does. */
export const MATH_SYSTEM_PROMPT =
  "You are an agent specialized in solving math problems. Solve the problem step by step. " +
  "You can call the calculator tool to evaluate arithmetic expressions. " +
  "When you are done, give your final answer as a number within \\boxed{}.";

/** Options of {@link runMathAgent}. */
export interface MathAgentOptions {
  /** most LLM calls in one episode (tool rounds + the final answer); default 4, at least 1 */
  maxTurns?: number;
  /** default {@link MATH_SYSTEM_PROMPT} */
  systemPrompt?: string;
  /** offer the `calculator` tool; default true */
  calculator?: boolean;
  /**
   * the answer readers when the task does not name its own (`metadata.answer_readers`); default
   * {@link defaultAnswerReaders} of the task
   */
  readers?: readonly AnswerReader[];
}

/** The readers a GSM8K task gets by default: the box the prompt asks for, and GSM8K's own `#### N`. */
export const GSM8K_ANSWER_READERS: readonly AnswerReader[] = ["boxed", "hash"];

/**
 * The default readers for a task: {@link GSM8K_ANSWER_READERS} for a GSM8K task (its `metadata.answer` is a
 * rationale ending in `#### N`, as the gsm8k dataset kind loads it), else the box only.
 */
export function defaultAnswerReaders(task: Task): readonly AnswerReader[] {
  const { answer } = task.metadata;
  return typeof answer === "string" && parseGsm8kGold(answer) !== null ? GSM8K_ANSWER_READERS : ["boxed"];
}

/**
 * The readers this episode uses: the run's choice carried on the task (`metadata.answer_readers`), else
 * `options.readers`, else {@link defaultAnswerReaders}.
 * @throws EpisodeAbortError `invalid_task` when `metadata.answer_readers` is not a non-empty list of known readers
 */
export function answerReadersFor(task: Task, options: MathAgentOptions = {}): readonly AnswerReader[] {
  const chosen = task.metadata.answer_readers;
  if (chosen === undefined) return options.readers ?? defaultAnswerReaders(task);
  const known: readonly unknown[] = AnswerReader.options;
  if (Array.isArray(chosen) && chosen.length > 0 && chosen.every((r) => known.includes(r))) return chosen as AnswerReader[];
  throw new EpisodeAbortError(
    "invalid_task",
    `task ${JSON.stringify(task.task_id)} has metadata.answer_readers ${JSON.stringify(chosen)}: give a non-empty list of ${AnswerReader.options.join(", ")}`,
  );
}

/**
 * The task's gold answer: `metadata.gold` (string or number) when present, else the text after `####` in
 * `metadata.answer` (GSM8K, BC-10).
 * @throws EpisodeAbortError `invalid_task` when neither gives an answer — a data error, never scored as 0
 */
export function mathGold(task: Task): string {
  const { gold, answer } = task.metadata;
  if ((typeof gold === "string" && gold.trim() !== "") || typeof gold === "number") return String(gold);
  const parsed = typeof answer === "string" ? parseGsm8kGold(answer) : null;
  if (parsed !== null) return parsed;
  throw new EpisodeAbortError(
    "invalid_task",
    `task ${JSON.stringify(task.task_id)} has no gold: set metadata.gold or a metadata.answer ending in "#### N"`,
  );
}

/**
 * Runs the agent loop and scores it.
 * @param io `ctx` (or any `{ llm, model, signal }`)
 * @returns `{ reward, is_success, metadata: { extracted, normalized, reason, source, gold, turns, tool_calls,
 *   tool_errors, finish_reason, stopped, answer_readers }, log_metrics: { turns, tool_calls } }`; `stopped` is `answer`,
 *   `length` (scored normally, BC-43) or `max_turns`
 * @throws EpisodeAbortError for a task without gold/query, `finish_reason: "abort"` and endpoint faults (BC-38/40/43)
 */
export async function runMathAgent(task: Task, io: ChatIo, options: MathAgentOptions = {}): Promise<RolloutOutput> {
  const gold = mathGold(task);
  const readers = answerReadersFor(task, options);
  const maxTurns = Math.max(1, Math.floor(options.maxTurns ?? 4));
  const useCalculator = options.calculator ?? true;
  const messages: ChatCompletionMessageParam[] = initialMessages(task, options.systemPrompt ?? MATH_SYSTEM_PROMPT);
  let finalText = "";
  let finishReason = "stop";
  let stopped: "answer" | "length" | "max_turns" = "max_turns";
  let turns = 0;
  let toolCalls = 0;
  let toolErrors = 0;
  while (turns < maxTurns) {
    turns++;
    const turn = await completeChat(io, { messages, ...(useCalculator ? { tools: [CALCULATOR_TOOL] } : {}) });
    const calls = parseToolCalls(turn.message.tool_calls, `call_${turns}`);
    finalText = messageText(turn.message.content);
    finishReason = turn.finishReason;
    messages.push({
      role: "assistant",
      content: turn.message.content ?? (calls.length > 0 ? null : ""),
      ...(calls.length > 0 ? { tool_calls: calls.map((c) => c.call) } : {}),
    });
    if (finishReason === "length") stopped = "length";
    else if (calls.length === 0) stopped = "answer";
    if (stopped !== "max_turns" || turns === maxTurns) break;
    const results = await runToolCalls(calls, { calculator });
    toolCalls += calls.length;
    toolErrors += results.filter((r) => r.content.startsWith("Error:")).length;
    messages.push(...results);
  }
  const score = scoreMathAnswer(finalText, gold, { readers });
  return {
    reward: score.reward,
    is_success: score.isSuccess,
    metadata: {
      extracted: score.extracted,
      normalized: score.normalized,
      reason: score.reason,
      source: score.source,
      gold,
      turns,
      tool_calls: toolCalls,
      tool_errors: toolErrors,
      finish_reason: finishReason,
      stopped,
      answer_readers: [...readers],
    },
    log_metrics: { turns, tool_calls: toolCalls },
  };
}

/**
 * The seed's signature (write-swarm-client skill): run the agent against one episode's OpenAI-compatible endpoint
 * and compute the reward. Works as a v1 function through `fromAgentRun("math-agent", runAgentAndComputeReward)`.
 */
export async function runAgentAndComputeReward(task: Task, baseUrl: string, apiKey: string): Promise<RolloutOutput> {
  return runMathAgent(task, { llm: seedClient(baseUrl, apiKey), model: "agentjet-model" });
}

export default defineRolloutFunction({
  name: "math-agent",
  description: "GSM8K math agent with a calculator tool; reward 1.0 when the final answer (a \\boxed{}, or #### N on GSM8K tasks) equals the gold",
  run: (task, ctx) => runMathAgent(task, ctx),
});
