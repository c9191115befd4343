/**
 * @module functions/countdown — the Countdown rollout function (issue 4 §2): one LLM call with the shared prompt
 * (`buildCountdownPrompt`, `<answer>(equation)</answer>`), scored by `scoreCountdown` (BC-17 … BC-19):
 * 1.0 correct, 0.1 a well-formed but wrong answer, 0.0 no answer.
 */
import { type ChatIo, type CountdownPuzzle, type RolloutOutput, type Task } from "ajet-edge";
/** The system prompt sent first on every request (BC-44). */
export declare const COUNTDOWN_SYSTEM_PROMPT: string;
/**
 * The puzzle of a task: `metadata.target` and `metadata.nums` as safe integers (numbers, BigInts or integer
 * strings are accepted, BC-58).
 * @throws EpisodeAbortError `invalid_task` naming the bad field
 */
export declare function countdownPuzzle(task: Task): CountdownPuzzle;
/**
 * Asks once and scores the final assistant message. The user message is always built from the puzzle with
 * `buildCountdownPrompt`, so the prompt and the reward agree on the `<answer>` format (`main_query` is not used).
 * @returns `{ reward, is_success, metadata: { equation, value, reason, detail?, target, nums, finish_reason } }`
 * @throws EpisodeAbortError for a bad task, `finish_reason: "abort"` and endpoint faults (BC-38/40/43)
 */
export declare function runCountdown(task: Task, io: ChatIo): Promise<RolloutOutput>;
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
