/**
 * @module rewards/final-number — the opt-in "final number" reader for models that answer in prose ("The answer is
 * 18."). It reads one number only when the message's last sentence with a number states exactly one result:
 * `… answer is 18.`, `… = 18.`, or a sentence whose only number ends it, optionally followed by a unit or a rate
 * (`18 dollars per day`, `18 km/h`). Inline math counts as one value when it is one (`… is $18$.`,
 * `\(\frac{1}{2}\)`, `$1.5 \times 10^{3}$`, `$18\text{ cm}^2$`). Anything ambiguous is "no answer": `18 or 19` gives
 * nothing, `18.5` is read whole (never as 18), and a sentence with several numbers and no "answer is" / "=" before
 * the last one gives nothing. Linear time on a bounded tail.
 */
import { normalizeAnswer } from "./normalize.ts";
import { parseNumericAnswer } from "./rational.ts";
import { isUnitPhrase } from "./units.ts";

/** The reader looks only at the last this-many characters of the message. */
export const FINAL_NUMBER_TAIL_CHARS = 2000;

/**
 * Most words on either side of a `per` after the number (`18 dollars per day`, `$18 every day at the farmers'
 * market`); the words are unit-like and none relates the number to another value (see `isUnitPhrase`).
 */
export const MAX_TRAILING_WORDS = 8;

/** Longest inline-math span read as one value, in characters; a longer `$…$` is read as plain text. */
const MAX_INLINE_MATH_CHARS = 200;

/**
 * A number as written in prose: optional sign (`-`, `+`, U+2212) and `$`, digits with optional thousands commas,
 * optional decimals, optional scientific notation (`1.5e3`, `1.5 × 10^5`, `1.5 x 10^{5}`). Boundaries are checked by
 * {@link numbersIn}, so `x18`, `18a`, `3.14.15` and the `2` of `cm^2` are not numbers.
 */
const NUMBER = /[-+\u2212]?\$?\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+|[ \t]*(?:×|·|x|\\times|\\cdot)[ \t]*10\^(?:\{[+-]?\d+\}|[+-]?\d+))?/g;

/**
 * Inline math with a digit in it is replaced by one private-use character (U+E000 + its index), which is neither a
 * letter nor a digit, so sentence splitting and the boundary checks see one token. Only the marks of the sentence
 * finally read are resolved ({@link resolveMarks}): a value stays one token, other math becomes its bare text.
 */
const VALUE_MARK = 0xe000;
const VALUE_MARKS = /[\uE000-\uF8FF]/u;
/** Every mark of a text (global: `replace` restarts it and `matchAll` copies it, so one instance serves every call). */
const ALL_VALUE_MARKS = new RegExp(VALUE_MARKS.source, "gu");
const MAX_MARKS = 0x1800;

interface NumberToken {
  text: string;
  start: number;
  end: number;
}

function isWordChar(c: string | undefined): boolean {
  return c !== undefined && /[\p{L}\p{N}_]/u.test(c);
}

/** The prose with its inline math marked: each span with a digit a mark (its content in `spans`), others bare. */
interface MarkedProse {
  plain: string;
  spans: string[];
}

/**
 * The inline math span opening at `at`, or `null`: `$$…$$`, `\(…\)`, `\[…\]`, or `$…$` by pandoc's rule (the opening
 * `$` has a non-space on its right, the closing one a non-space on its left and no digit after it), so the currency
 * in `$5 and $6` is no math. No line break and at most {@link MAX_INLINE_MATH_CHARS} characters inside.
 */
function mathSpanAt(text: string, at: number): { content: string; end: number } | null {
  const pairs: readonly (readonly [string, string])[] = [["$$", "$$"], ["\\(", "\\)"], ["\\[", "\\]"]];
  for (const [open, close] of pairs) {
    if (!text.startsWith(open, at)) continue;
    const end = text.indexOf(close, at + open.length);
    const content = end < 0 ? "" : text.slice(at + open.length, end);
    if (end < 0 || content.length > MAX_INLINE_MATH_CHARS || content.includes("\n")) return null;
    return { content, end: end + close.length };
  }
  if (text[at] !== "$" || text[at - 1] === "\\" || /\s/u.test(text[at + 1] ?? " ")) return null;
  const limit = Math.min(text.length, at + 2 + MAX_INLINE_MATH_CHARS);
  for (let j = at + 1; j < limit; j++) {
    const c = text[j];
    if (c === "\n") return null;
    if (c !== "$" || text[j - 1] === "\\") continue;
    // the first unescaped `$` closes the span or, when it cannot close one, shows the first was a currency sign
    if (/\s/u.test(text[j - 1]!) || /\d/.test(text[j + 1] ?? "")) return null;
    return { content: text.slice(at + 1, j), end: j + 1 };
  }
  return null;
}

/**
 * Marks the inline math of `raw` ({@link MarkedProse}); markdown `*`/`_` outside math is dropped (`**18**`). A
 * private-use character of the text itself becomes U+FFFD first (neither letter nor digit), so none reads as a mark.
 */
function markInlineMath(raw: string): MarkedProse {
  const text = raw.replace(ALL_VALUE_MARKS, "\uFFFD");
  const out: string[] = [];
  const spans: string[] = [];
  let i = 0;
  while (i < text.length) {
    const span = text[i] === "$" || text[i] === "\\" ? mathSpanAt(text, i) : null;
    if (span) {
      const mark = spans.length < MAX_MARKS && /\d/.test(span.content);
      out.push(mark ? String.fromCharCode(VALUE_MARK + spans.length) : span.content);
      if (mark) spans.push(span.content);
      i = span.end;
      continue;
    }
    const c = text[i]!;
    if (c !== "*" && c !== "_") out.push(c);
    i++;
  }
  return { plain: out.join(""), spans };
}

/**
 * The marks of `sentence` resolved: a span that is one value (`18`, `\frac{1}{2}`, `18\text{ cm}^2`) keeps its mark
 * and is listed in `values`; other math (`9 \times 2 = 18`) becomes its text, read as prose.
 */
function resolveMarks(sentence: string, spans: readonly string[]): { sentence: string; values: Map<string, string> } {
  const values = new Map<string, string>();
  const resolved = sentence.replace(ALL_VALUE_MARKS, (mark) => {
    const content = spans[mark.charCodeAt(0) - VALUE_MARK]!;
    if (parseNumericAnswer(content.trim()) === null && parseNumericAnswer(normalizeAnswer(content)) === null) return content;
    values.set(mark, content);
    return mark;
  });
  return { sentence: resolved, values };
}

/** The numbers and marked values of `sentence` with clean boundaries (no letter, digit, `.`, `,` or `^` glued). */
function numbersIn(sentence: string, values: ReadonlyMap<string, string>): NumberToken[] {
  const out: NumberToken[] = [];
  const candidates: NumberToken[] = [...sentence.matchAll(NUMBER)].map((m) => ({ text: m[0], start: m.index, end: m.index + m[0].length }));
  for (const m of sentence.matchAll(ALL_VALUE_MARKS)) {
    const value = values.get(m[0]);
    if (value !== undefined) candidates.push({ text: value, start: m.index, end: m.index + 1 });
  }
  candidates.sort((a, b) => a.start - b.start);
  for (const candidate of candidates) {
    let { text, end } = candidate;
    const { start } = candidate;
    while (text.endsWith(",")) (text = text.slice(0, -1)), end--; // "18, so" → 18
    const before = sentence[start - 1];
    const after = sentence[end];
    const exponent = before === "^" || (before === "{" && sentence[start - 2] === "^");
    const glued = exponent || isWordChar(before) || before === "." || (before === "," && isWordChar(sentence[start - 2]));
    if (glued || isWordChar(after) || (after === "." && /\d/.test(sentence[end + 1] ?? ""))) continue;
    out.push({ text, start, end });
  }
  return out;
}

/**
 * True when what follows the number is end punctuation, optionally after `%` and up to {@link MAX_TRAILING_WORDS}
 * unit-like words or a rate (`isUnitPhrase`: `apples`, `dollars every day`, `dollars per day`, `/day`, `km/h`,
 * `cm^2`), none of which relates the number to another value.
 */
function endsTheSentence(rest: string): boolean {
  const words = rest.replace(/[.!?:;)\]\s]+$/u, "").replace(/^\s*%/u, "").trim();
  return words === "" || isUnitPhrase(words, MAX_TRAILING_WORDS);
}

/**
 * The last sentence of `text` that contains a number or a marked value (sentences end at `.`, `!`, `?` followed by
 * space or end of line, or at a line break; the decimal point of `18.5` does not end one).
 */
function lastSentenceWithNumber(text: string): string | null {
  const pieces = text.split(/(?<=[.!?])\s+|\n+/u);
  for (let i = pieces.length - 1; i >= 0; i--) {
    const piece = pieces[i]!.trim();
    if (/\d/.test(piece) || VALUE_MARKS.test(piece)) return piece;
  }
  return null;
}

/**
 * Reads the final number of a prose answer.
 * @returns the number as written (`"18"`, `"1,000"`, `"-3.5"`, `"$29"`, or the content of a value's inline math,
 *   `"\frac{1}{2}"`) for the normaliser, or `null` when the last sentence with a number does not state exactly one
 *   result.
 */
export function extractFinalNumber(text: string): string | null {
  const { plain, spans } = markInlineMath(text.slice(Math.max(0, text.length - FINAL_NUMBER_TAIL_CHARS)));
  const marked = lastSentenceWithNumber(plain);
  if (marked === null) return null;
  const { sentence, values } = resolveMarks(marked, spans);
  const numbers = numbersIn(sentence, values);
  const last = numbers.at(-1);
  if (!last || !endsTheSentence(sentence.slice(last.end))) return null;
  if (numbers.length === 1) return last.text;
  // several numbers: only a stated result counts, "… the answer is 18." / "… = 18."
  const lead = sentence.slice(0, last.start).trimEnd().toLowerCase();
  return /(?:answer|result|total)\s*(?:is|was|will be|:)\s*$|=\s*$/.test(lead) ? last.text : null;
}
