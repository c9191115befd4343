/**
 * @module rewards/countdown — the Countdown reward: the equation in the last `<answer>…</answer>` of the final
 * message, evaluated by the hand-written parser (no `eval`, BC-19), each given number used exactly once as a
 * multiset (BC-17), value within 1e-5 of the target (BC-18). 1.0 correct, 0.1 format score, 0.0 no answer.
 */
import { type ArithmeticErrorKind, evaluateArithmetic } from "../util/arithmetic.ts";

/**
 * Why the countdown reward is what it is. `correct` → 1.0; `no_answer` and `too_long` (message) → 0.0; the
 * rest (an `<answer>` with something in it) → the format score 0.1.
 */
export type CountdownReason =
  | "correct"
  | "no_answer"
  | "too_long"
  | "wrong_result"
  | "wrong_numbers"
  | Exclude<ArithmeticErrorKind, "empty">;

/** Result of {@link scoreCountdown}. */
export interface CountdownScore {
  /** 1.0, the format score (0.1), or 0.0 */
  reward: number;
  isSuccess: boolean;
  reason: CountdownReason;
  /** the text inside the last `<answer>` tag, trimmed, or `null` */
  equation: string | null;
  /** the equation's value when it evaluated (always finite), else `null` */
  value: number | null;
  /** the parser's message for a refused equation, for logs */
  detail?: string;
}

/** Options of {@link scoreCountdown}. Defaults follow AgentJet's and verl's countdown rewards. */
export interface CountdownScoreOptions {
  /** reward for a well-formed but wrong answer; default 0.1 */
  formatScore?: number;
  /** absolute tolerance between value and target; default 1e-5 (`8/(3-8/3)` = 23.99999999999999, BC-18) */
  tolerance?: number;
  /** longest final message scored at all, in characters; default 1,000,000 */
  maxInputChars?: number;
  /** longest equation evaluated, in characters; default 1000 */
  maxEquationChars?: number;
}

/** The tag the model puts its final equation in (`<answer>(25-5)*4</answer>`); the Countdown prompt asks for it. */
export const COUNTDOWN_ANSWER_TAG = "answer";

const OPEN = `<${COUNTDOWN_ANSWER_TAG}>`;
const CLOSE = `</${COUNTDOWN_ANSWER_TAG}>`;

/** `text` inside the answer tag the Countdown reward reads (`<answer>…</answer>`); the simulated policy writes it. */
export function inAnswerTag(text: string): string {
  return `${OPEN}${text}${CLOSE}`;
}

/**
 * The content of the last `<answer>…</answer>` (trimmed). `null` when there is no `<answer>`, or the last one is
 * not closed (output cut off). Linear: two `lastIndexOf`/`indexOf` calls.
 */
export function extractLastAnswerTag(text: string): string | null {
  const open = text.lastIndexOf(OPEN);
  if (open < 0) return null;
  const close = text.indexOf(CLOSE, open + OPEN.length);
  return close < 0 ? null : text.slice(open + OPEN.length, close).trim();
}

/** True when `used` and `given` hold the same numbers with the same multiplicities (BC-17). */
export function sameMultiset(used: readonly number[], given: readonly number[]): boolean {
  if (used.length !== given.length) return false;
  const a = [...used].sort((x, y) => x - y);
  const b = [...given].sort((x, y) => x - y);
  return a.every((v, i) => v === b[i]);
}

/**
 * Scores a Countdown answer.
 * @param finalMessage the final assistant message's text (BC-04: never the prompt)
 * @param target the number to reach
 * @param nums the numbers to use, each exactly once
 * @throws RangeError if `target` or `nums` are not finite numbers (a task error, not a model failure)
 */
export function scoreCountdown(
  finalMessage: string,
  target: number,
  nums: readonly number[],
  options: CountdownScoreOptions = {},
): CountdownScore {
  if (!Number.isFinite(target) || !nums.every(Number.isFinite)) {
    throw new RangeError(`countdown task needs a finite target and finite nums, got ${String(target)} / [${nums}]`);
  }
  const formatScore = options.formatScore ?? 0.1;
  const none = { isSuccess: false, equation: null, value: null } as const;
  if (finalMessage.length > (options.maxInputChars ?? 1_000_000)) return { reward: 0, reason: "too_long", ...none };
  const equation = extractLastAnswerTag(finalMessage);
  if (equation === null || equation === "") return { reward: 0, reason: "no_answer", ...none };
  const result = evaluateArithmetic(equation, { maxChars: options.maxEquationChars ?? 1000 });
  const wrong = (reason: CountdownReason, value: number | null, detail?: string): CountdownScore => ({
    reward: formatScore,
    isSuccess: false,
    reason,
    equation,
    value,
    ...(detail ? { detail } : {}),
  });
  if (!result.ok) return wrong(result.error === "empty" ? "no_answer" : result.error, null, result.message);
  if (!sameMultiset(result.numbers, nums)) {
    return wrong("wrong_numbers", result.value, `used [${result.numbers}], given [${nums}]`);
  }
  if (Math.abs(result.value - target) >= (options.tolerance ?? 1e-5)) return wrong("wrong_result", result.value);
  return { reward: 1, isSuccess: true, reason: "correct", equation, value: result.value };
}
