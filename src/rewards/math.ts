/**
 * @module rewards/math — scores a math answer: extract from the final assistant message (last balanced box by
 * default; opt-in `####`, "Final Answer:" and final-number readers), normalise, compare exactly with the gold. Pure,
 * linear time, bounded windows (BC-01 … BC-16). Returns a structured result, never throws on model output.
 */
import * as z from "zod/mini";
import { DEFAULT_MAX_BOX_CONTENT_CHARS, findLastBox } from "./boxed.ts";
import { extractFinalNumber } from "./final-number.ts";
import { HASH_MARKER, extractHashAnswer } from "./gsm8k.ts";
import { normalizeAnswer, trimChars } from "./normalize.ts";
import { formatRational, parseNumericAnswer, rationalEquals } from "./rational.ts";

/**
 * Opt-in extraction used only when the final message has no box marker at all (BC-07, BC-14): `hash` reads the
 * `#### N` line (GSM8K's own format), `final-answer` the line after "Final Answer", `final-number` a prose answer's
 * one stated number ("The answer is 18."; see `final-number.ts`). `hash` and `final-answer` are markers, and the
 * later one wins; `final-number` is read only when neither marker is present.
 */
export type MathFallback = "hash" | "final-answer" | "final-number";

/** Where the scored answer came from. */
export type AnswerSource = "boxed" | MathFallback;

/** The answer readers a run can choose: the box and every fallback. */
export const AnswerReader = z.enum(["boxed", "hash", "final-answer", "final-number"]);
export type AnswerReader = z.infer<typeof AnswerReader>;

/**
 * Why the reward is what it is:
 * - `correct` / `wrong`: an answer was compared with the gold;
 * - `no_answer`: no box, an empty box (`\boxed{}` is not 0, BC-05), or a box cut off before `}` (BC-03, BC-43);
 * - `unparseable`: the gold is a number but the answer is not one in the strict grammar (`0x1A`, `1,00`, BC-05);
 * - `too_long`: the message exceeds `maxInputChars`, or the answer exceeds `maxAnswerChars` (BC-16).
 */
export type MathScoreReason = "correct" | "wrong" | "no_answer" | "unparseable" | "too_long";

/** Options of {@link scoreMathAnswer}. */
export interface MathScoreOptions {
  /** fallbacks tried (the later marker wins) when there is no box marker; default `[]` = box only (BC-14) */
  fallbacks?: readonly MathFallback[];
  /**
   * the readers to use, box included: `["boxed", "hash"]` = box, else `#### N`. When given it replaces
   * `fallbacks`; without `"boxed"` a box is not read at all.
   */
  readers?: readonly AnswerReader[];
  /** longest final message scored at all, in characters; default 1,000,000. Longer → `too_long` */
  maxInputChars?: number;
  /** longest answer read after the marker, in characters; default 1000. Longer → `too_long` */
  maxAnswerChars?: number;
}

/** Result of {@link scoreMathAnswer}. `reward` is 1 for `correct`, else 0. */
export interface MathScore {
  reward: 0 | 1;
  isSuccess: boolean;
  reason: MathScoreReason;
  /** the raw answer text read after the marker (box content), or `null` */
  extracted: string | null;
  /** the canonical form compared with the gold (numbers as exact decimals), or `null` */
  normalized: string | null;
  source: AnswerSource | null;
}

/** Default cap on the scored message, in characters (about 1 MB). */
export const DEFAULT_MAX_INPUT_CHARS = 1_000_000;

/** The "Final Answer:" fallback looks only in the last this-many characters of the message. */
const FINAL_ANSWER_TAIL_CHARS = 4000;

/** What {@link extractMathAnswer} found: the raw answer and its source, nothing, or an over-long answer. */
export type MathExtraction =
  | { kind: "answer"; text: string; source: AnswerSource }
  | { kind: "none" | "too_long" };

/**
 * The closing words of the Minerva template, "Final Answer: The final answer is X. I hope it is correct." (the MATH
 * few-shot format lm-evaluation-harness reads): cut with the period before them, as its reader does.
 */
const MINERVA_CLOSING = /\.?\s*I hope (?:it|this) is correct\.?\s*$/i;

/**
 * Reads the line after the last "Final Answer" in the tail (BC-14): `Final Answer: **73**`, `Final answer is 73`,
 * and the Minerva template `Final Answer: The final answer is $73$. I hope it is correct.` (whose last marker is
 * "final answer is"). Strips markdown `*` and `_` and the template's closing sentence.
 */
function extractFinalAnswerLine(text: string, maxChars: number): { at: number; text: string } | null {
  const offset = Math.max(0, text.length - FINAL_ANSWER_TAIL_CHARS);
  const tail = text.slice(offset);
  const marker = /final\s+answer/gi;
  let last: RegExpExecArray | null = null;
  for (let m = marker.exec(tail); m; m = marker.exec(tail)) last = m;
  if (!last) return null;
  const lines = tail.slice(last.index + last[0].length).split("\n", 3);
  const clean = (line: string) =>
    trimChars(line.replace(/\*/g, "").trim(), "_")
      .trim()
      .replace(/^(?:is\b\s*[:：]?|[:：])/i, "")
      .replace(MINERVA_CLOSING, "")
      .trim();
  const first = clean(lines[0] ?? "");
  const answer = first !== "" ? first : clean(lines[1] ?? "");
  return { at: offset + last.index, text: answer.slice(0, maxChars + 1) };
}

/**
 * Finds the answer in the final message: the last box (BC-01, BC-03, unless `readers` leaves it out), else the
 * enabled fallbacks.
 * @returns the raw answer text and its source, `none`, or `too_long`.
 */
export function extractMathAnswer(finalMessage: string, options: MathScoreOptions = {}): MathExtraction {
  const maxAnswerChars = options.maxAnswerChars ?? DEFAULT_MAX_BOX_CONTENT_CHARS;
  if (finalMessage.length > (options.maxInputChars ?? DEFAULT_MAX_INPUT_CHARS)) return { kind: "too_long" };
  const useBox = options.readers ? options.readers.includes("boxed") : true;
  const box = useBox ? findLastBox(finalMessage, maxAnswerChars) : null;
  if (box) {
    if (box.kind === "box") return { kind: "answer", text: box.content, source: "boxed" };
    return { kind: box.kind === "too_long" ? "too_long" : "none" };
  }
  const fallbacks: readonly string[] = options.readers ?? options.fallbacks ?? [];
  let best: { at: number; text: string; source: MathFallback } | null = null;
  if (fallbacks.includes("hash")) {
    const text = extractHashAnswer(finalMessage, maxAnswerChars + 1);
    if (text !== null) best = { at: finalMessage.lastIndexOf(HASH_MARKER), text, source: "hash" };
  }
  if (fallbacks.includes("final-answer")) {
    const line = extractFinalAnswerLine(finalMessage, maxAnswerChars);
    if (line && (best === null || line.at > best.at)) best = { ...line, source: "final-answer" };
  }
  if (!best && fallbacks.includes("final-number")) {
    const text = extractFinalNumber(finalMessage);
    if (text !== null) best = { at: 0, text, source: "final-number" };
  }
  if (!best) return { kind: "none" };
  if (best.text.length > maxAnswerChars) return { kind: "too_long" };
  return { kind: "answer", text: best.text, source: best.source };
}

/**
 * Compares two normalised answers. Numbers compare exactly as rationals (`1,000` = `1000`, `-3.0` = `-3`,
 * `\frac{1}{2}` = `0.5`, `2^{10}` = `1024`; `8.5` ≠ `9`, BC-07); other text compares as strings.
 * @returns `correct`, `wrong`, or `unparseable` when the gold is a number and the answer is not.
 */
export function compareMathAnswers(answer: string, gold: string): "correct" | "wrong" | "unparseable" {
  const goldNumber = parseNumericAnswer(gold);
  const answerNumber = parseNumericAnswer(answer);
  if (goldNumber && answerNumber) return rationalEquals(goldNumber, answerNumber) ? "correct" : "wrong";
  if (goldNumber) return "unparseable";
  return answer === gold ? "correct" : "wrong";
}

/**
 * Scores the FINAL assistant message (never the joined conversation, BC-04) against a gold answer.
 * @param finalMessage the last assistant message's text
 * @param gold the gold answer (`"70000"`, `"\\frac{1}{2}"`, `"B"`); normalised like the answer
 * @throws RangeError when the gold is empty after normalisation — a data error, not a model failure (BC-10)
 */
export function scoreMathAnswer(finalMessage: string, gold: string, options: MathScoreOptions = {}): MathScore {
  const goldNormalized = normalizeAnswer(gold);
  if (goldNormalized === "") {
    throw new RangeError(`gold answer ${JSON.stringify(gold)} is empty after normalisation; give the task a non-empty metadata.gold (for GSM8K, the number after ####)`);
  }
  const found = extractMathAnswer(finalMessage, options);
  if (found.kind !== "answer") {
    const reason = found.kind === "too_long" ? "too_long" : "no_answer";
    return { reward: 0, isSuccess: false, reason, extracted: null, normalized: null, source: null };
  }
  const normalized = normalizeAnswer(found.text);
  const base = { extracted: found.text, source: found.source };
  if (normalized === "") return { reward: 0, isSuccess: false, reason: "no_answer", normalized: null, ...base };
  const verdict = compareMathAnswers(normalized, goldNormalized);
  const numeric = parseNumericAnswer(normalized);
  const shown = numeric ? formatRational(numeric) : normalized;
  const correct = verdict === "correct";
  return { reward: correct ? 1 : 0, isSuccess: correct, reason: verdict, normalized: shown, ...base };
}
