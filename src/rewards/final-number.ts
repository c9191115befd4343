/**
 * @module rewards/final-number — the opt-in "final number" reader for models that answer in prose ("The answer is
 * 18."). It reads one number only when the message's last sentence with a number states exactly one result:
 * `… answer is 18.`, `… = 18.`, or a sentence whose only number ends it. Anything ambiguous is "no answer": `18 or
 * 19` gives nothing, `18.5` is read whole (never as 18), and a sentence with several numbers and no "answer is" /
 * "=" before the last one gives nothing. Linear time on a bounded tail.
 */
import { RELATION_WORDS } from "./normalize.ts";

/** The reader looks only at the last this-many characters of the message. */
export const FINAL_NUMBER_TAIL_CHARS = 2000;

/**
 * A number as written in prose: optional sign (`-`, `+`, U+2212) and `$`, digits with optional thousands commas,
 * optional decimals. Boundaries are checked by {@link numbersIn}, so `x18`, `18a`, `3.14.15` are not numbers.
 */
const NUMBER = /[-+\u2212]?\$?\d[\d,]*(?:\.\d+)?/g;

/** At most this many plain words may follow the number (`18 apples`, `$18 every day`). */
const MAX_TRAILING_WORDS = 3;

interface NumberToken {
  text: string;
  start: number;
  end: number;
}

function isWordChar(c: string | undefined): boolean {
  return c !== undefined && /[\p{L}\p{N}_]/u.test(c);
}

/** The numbers of `sentence` with clean boundaries (no letter, digit, `.` or `,` glued to either side). */
function numbersIn(sentence: string): NumberToken[] {
  const out: NumberToken[] = [];
  for (const m of sentence.matchAll(NUMBER)) {
    let text = m[0];
    while (text.endsWith(",")) text = text.slice(0, -1); // "18, so" → 18
    const start = m.index;
    const end = start + text.length;
    const before = sentence[start - 1];
    const after = sentence[end];
    const glued = isWordChar(before) || before === "." || (before === "," && isWordChar(sentence[start - 2]));
    if (glued || isWordChar(after) || (after === "." && /\d/.test(sentence[end + 1] ?? ""))) continue;
    out.push({ text, start, end });
  }
  return out;
}

/**
 * True when what follows the number is end punctuation, optionally after `%` and up to {@link MAX_TRAILING_WORDS}
 * plain words (`apples`, `dollars`, `every day`) none of which relates it to another value ({@link RELATION_WORDS}).
 */
function endsTheSentence(rest: string): boolean {
  const words = rest.replace(/[.!?:;)\]\s]+$/u, "").replace(/^\s*%/u, "").trim();
  if (words === "") return true;
  const list = words.split(/\s+/u);
  if (list.length > MAX_TRAILING_WORDS || !list.every((w) => /^\p{L}+$/u.test(w))) return false;
  return !list.some((w) => RELATION_WORDS.has(w.toLowerCase()));
}

/**
 * The last sentence of `text` that contains a number (sentences end at `.`, `!`, `?` followed by space or end of
 * line, or at a line break; the decimal point of `18.5` does not end one).
 */
function lastSentenceWithNumber(text: string): string | null {
  const pieces = text.split(/(?<=[.!?])\s+|\n+/u);
  for (let i = pieces.length - 1; i >= 0; i--) {
    const piece = pieces[i]!.trim();
    if (/\d/.test(piece)) return piece;
  }
  return null;
}

/**
 * Reads the final number of a prose answer.
 * @returns the number as written (`"18"`, `"1,000"`, `"-3.5"`, `"$29"`) for the normaliser, or `null` when the
 *   last sentence with a number does not state exactly one result.
 */
export function extractFinalNumber(text: string): string | null {
  // markdown emphasis and inline-math delimiters carry no value: `**18**`, `\(18\)`
  const tail = text.slice(Math.max(0, text.length - FINAL_NUMBER_TAIL_CHARS)).replace(/[*_]|\\[()]/g, "");
  const sentence = lastSentenceWithNumber(tail);
  if (sentence === null) return null;
  const numbers = numbersIn(sentence);
  const last = numbers.at(-1);
  if (!last || !endsTheSentence(sentence.slice(last.end))) return null;
  if (numbers.length === 1) return last.text;
  // several numbers: only a stated result counts, "… the answer is 18." / "… = 18."
  const lead = sentence.slice(0, last.start).trimEnd().toLowerCase();
  return /(?:answer|result|total)\s*(?:is|was|will be|:)\s*$|=\s*$/.test(lead) ? last.text : null;
}
