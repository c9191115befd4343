/**
 * @module functions/countdown — the Countdown rollout function (issue 4 §2): one LLM call with the shared prompt
 * (`buildCountdownPrompt`, `<answer>(equation)</answer>`), scored by `scoreCountdown` (BC-17 … BC-19):
 * 1.0 correct, 0.1 a well-formed but wrong answer, 0.0 no answer.
 */
import {
  buildCountdownPrompt,
  type ChatIo,
  completeChat,
  type CountdownPuzzle,
  defineRolloutFunction,
  EpisodeAbortError,
  initialMessages,
  messageText,
  type RolloutOutput,
  scoreCountdown,
  type Task,
  toSafeInteger,
} from "ajet-edge";

/** The system prompt sent first on every request (BC-44). */
export const COUNTDOWN_SYSTEM_PROMPT =
  "You are a helpful assistant that solves arithmetic puzzles. Think step by step, then give the final " +
  "equation inside <answer></answer> tags.";

/**
 * The puzzle of a task: `metadata.target` and `metadata.nums` as safe integers (numbers, BigInts or integer
 * strings are accepted, BC-58).
 * @throws EpisodeAbortError `invalid_task` naming the bad field
 */
export function countdownPuzzle(task: Task): CountdownPuzzle {
  const { target, nums } = task.metadata;
  try {
    if (!Array.isArray(nums) || nums.length === 0) throw new Error("metadata.nums must be a non-empty list");
    return {
      target: toSafeInteger(target, "metadata.target"),
      nums: nums.map((n, i) => toSafeInteger(n, `metadata.nums[${i}]`)),
    };
  } catch (err) {
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
export async function runCountdown(task: Task, io: ChatIo): Promise<RolloutOutput> {
  const puzzle = countdownPuzzle(task);
  const prompted: Task = { ...task, init_messages: [], main_query: buildCountdownPrompt(puzzle) };
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

/**
 * Re-scores a stored transcript (`ajet-edge rescore RUN --function countdown`): the model's last reply against the
 * task's puzzle, exactly as `runCountdown` scored it live. No LLM call, no server.
 * @returns the same `{ reward, is_success }` the episode would get for that reply; reward 0 when no reply was stored
 */
export function score(transcript: { llm: readonly { reply: unknown }[] }, task: Task): RolloutOutput {
  const puzzle = countdownPuzzle(task);
  const reply = transcript.llm.at(-1)?.reply as { content?: unknown } | null | undefined;
  const result = scoreCountdown(messageText((reply?.content ?? "") as Parameters<typeof messageText>[0]), puzzle.target, puzzle.nums);
  return { reward: result.reward, is_success: result.isSuccess };
}

export default defineRolloutFunction({
  name: "countdown",
  description: "Countdown arithmetic puzzle: 1.0 for a correct <answer> equation, 0.1 for a well-formed wrong one",
  run: (task, ctx) => runCountdown(task, ctx),
});
