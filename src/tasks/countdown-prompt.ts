/**
 * @module tasks/countdown-prompt — the Countdown task's shape and its prompt, shared by the dataset reader, the
 * generator, the reward (src/rewards) and the emulator's answer key, so all of them agree on the format. The
 * answer tag is the reward's (`COUNTDOWN_ANSWER_TAG`), so the prompt asks for exactly what is scored.
 */
import { COUNTDOWN_ANSWER_TAG } from "../rewards/countdown.ts";

/** A Countdown puzzle: reach `target` using every number of `nums` exactly once with + − × ÷. */
export interface CountdownPuzzle {
  /** the number to reach (a safe integer) */
  target: number;
  /** the numbers to use, each exactly once (a multiset: duplicates count, BC-17) */
  nums: number[];
}

/** A puzzle with one known solution equation (the generator's rows; the emulator's answer key). */
export interface CountdownTaskMetadata extends CountdownPuzzle {
  /** one equation over `nums` that equals `target`, e.g. `(25-5)*4`; absent for rows read without one */
  solution?: string;
}

/**
 * The user prompt of a Countdown task (the task's `main_query`). It asks for one equation, using each number
 * exactly once, with the final equation alone inside `<answer>…</answer>`.
 * @example buildCountdownPrompt({ target: 80, nums: [25, 5, 4] })
 *   // "Using the numbers [25, 5, 4], create an equation that equals 80. …<answer>(25-5)*4</answer>…"
 */
export function buildCountdownPrompt(puzzle: CountdownPuzzle): string {
  return (
    `Using the numbers [${puzzle.nums.join(", ")}], create an equation that equals ${puzzle.target}. ` +
    "You may use + - * / and parentheses, and you must use each number exactly once. " +
    "Think step by step, then write only the final equation, without the result, inside " +
    `<${COUNTDOWN_ANSWER_TAG}></${COUNTDOWN_ANSWER_TAG}> tags, for example ` +
    `<${COUNTDOWN_ANSWER_TAG}>(25-5)*4</${COUNTDOWN_ANSWER_TAG}>.`
  );
}
