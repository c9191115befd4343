import { AnswerReader, type ChatIo, type RolloutOutput, type Task } from "ajet-edge";
/** The system prompt sent first on every request (BC-44). Its `\boxed{}` never scores: only the reply does. */
export declare const MATH_SYSTEM_PROMPT: string;
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
export declare const GSM8K_ANSWER_READERS: readonly AnswerReader[];
/**
 * The default readers for a task: {@link GSM8K_ANSWER_READERS} for a GSM8K task (its `metadata.answer` is a
 * rationale ending in `#### N`, as the gsm8k dataset kind loads it), else the box only.
 */
export declare function defaultAnswerReaders(task: Task): readonly AnswerReader[];
/**
 * The readers this episode uses: the run's choice carried on the task (`metadata.answer_readers`), else
 * `options.readers`, else {@link defaultAnswerReaders}.
 * @throws EpisodeAbortError `invalid_task` when `metadata.answer_readers` is not a non-empty list of known readers
 */
export declare function answerReadersFor(task: Task, options?: MathAgentOptions): readonly AnswerReader[];
/**
 * The task's gold answer: `metadata.gold` (string or number) when present, else the text after `####` in
 * `metadata.answer` (GSM8K, BC-10).
 * @throws EpisodeAbortError `invalid_task` when neither gives an answer — a data error, never scored as 0
 */
export declare function mathGold(task: Task): string;
/**
 * Runs the agent loop and scores it.
 * @param io `ctx` (or any `{ llm, model, signal }`)
 * @returns `{ reward, is_success, metadata: { extracted, normalized, reason, source, gold, turns, tool_calls,
 *   tool_errors, finish_reason, stopped, answer_readers }, log_metrics: { turns, tool_calls } }`; `stopped` is `answer`,
 *   `length` (scored normally, BC-43) or `max_turns`
 * @throws EpisodeAbortError for a task without gold/query, `finish_reason: "abort"` and endpoint faults (BC-38/40/43)
 */
export declare function runMathAgent(task: Task, io: ChatIo, options?: MathAgentOptions): Promise<RolloutOutput>;
/**
 * The seed's signature (write-swarm-client skill): run the agent against one episode's OpenAI-compatible endpoint
 * and compute the reward. Works as a v1 function through `fromAgentRun("math-agent", runAgentAndComputeReward)`.
 */
export declare function runAgentAndComputeReward(task: Task, baseUrl: string, apiKey: string): Promise<RolloutOutput>;
declare const _default: {
    name: string;
    description: string;
    run: (task: {
        [x: string]: unknown;
        main_query: string;
        init_messages: Record<string, unknown>[];
        task_id: string;
        env_type: string;
        metadata: Record<string, unknown>;
    }, ctx: import("../src/sdk/contract.ts").RolloutContext) => Promise<RolloutOutput>;
};
export default _default;
