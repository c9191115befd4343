/**
 * @module functions/countdown — the Countdown rollout function (issue 4 §2): one LLM call with the shared prompt
 * (`buildCountdownPrompt`, `<answer>(equation)</answer>`), scored by `scoreCountdown` (BC-17 … BC-19):
 * 1.0 correct, 0.1 a well-formed but wrong answer, 0.0 no answer.
 */
import { completeChat, initialMessages } from "../src/sdk/chat.js";
import { defineRolloutFunction, EpisodeAbortError } from "../src/sdk/contract.js";
import { messageText, scoreCountdown } from "../src/rewards/index.js";
import { buildCountdownPrompt } from "../src/tasks/countdown-prompt.js";
import { toSafeInteger } from "../src/tasks/values.js";
/** The system prompt sent first on every request (BC-44). */
export const COUNTDOWN_SYSTEM_PROMPT = "You are a helpful assistant that solves arithmetic puzzles. Think step by step, then give the final " +
    "equation inside <answer></answer> tags.";
/**
 * The puzzle of a task: `metadata.target` and `metadata.nums` as safe integers (numbers, BigInts or integer
 * strings are accepted, BC-58).
 * @throws EpisodeAbortError `invalid_task` naming the bad field
 */
export function countdownPuzzle(task) {
    const { target, nums } = task.metadata;
    try {
        if (!Array.isArray(nums) || nums.length === 0)
            throw new Error("metadata.nums must be a non-empty list");
        return {
            target: toSafeInteger(target, "metadata.target"),
            nums: nums.map((n, i) => toSafeInteger(n, `metadata.nums[${i}]`)),
        };
    }
    catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        const id = JSON.stringify(task.task_id);
        throw new EpisodeAbortError("invalid_task", `countdown task ${id}: ${why}`, { cause: err });
    }
}
/**
 * Asks once and scores the final assistant message. The user message is always built from the puzzle with
 * `buildCountdownPrompt`, so the prompt and the reward agree on the `<answer>` format (`main_query` is not used).
 * @returns `{ reward, is_success, metadata: { equation, value, reason, detail?, target, nums, finish_reason } }`
 * @throws EpisodeAbortError for a bad task, `finish_reason: "abort"` and endpoint faults (BC-38/40/43)
 */
export async function runCountdown(task, io) {
    const puzzle = countdownPuzzle(task);
    const prompted = { ...task, init_messages: [], main_query: buildCountdownPrompt(puzzle) };
    const turn = await completeChat(io, { messages: initialMessages(prompted, COUNTDOWN_SYSTEM_PROMPT) });
    const score = scoreCountdown(messageText(turn.message.content), puzzle.target, puzzle.nums);
    return {
        reward: score.reward,
        is_success: score.isSuccess,
        metadata: {
            equation: score.equation,
            value: score.value,
            reason: score.reason,
            ...(score.detail ? { detail: score.detail } : {}),
            target: puzzle.target,
            nums: puzzle.nums,
            finish_reason: turn.finishReason,
        },
    };
}
export default defineRolloutFunction({
    name: "countdown",
    description: "Countdown arithmetic puzzle: 1.0 for a correct <answer> equation, 0.1 for a well-formed wrong one",
    run: (task, ctx) => runCountdown(task, ctx),
});
