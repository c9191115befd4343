/**
 * @module rewards/units — what counts as a unit after a value, so `12\text{ cm}^2`, `18 dollars per day`,
 * `3.5\,\mathrm{m}`, `9.8 m/s^2` and `\frac{1}{2}\text{ cup}` read as their value, while `18 or 19`, `18 more than
 * Bob` and `2\text{ hours } 30` never read as 18 or 2 (BC-13). Never rescales: `28\%` is 28, `5 km` is 5. Shared by
 * the normaliser (answers in a box, after `####`, on a "Final Answer" line) and the prose reader
 * (`final-number.ts`). Every function here works on a bounded answer and runs in linear time.
 */

/**
 * Words that relate a number to another value, or reject it, rather than name a unit: `10 and 20` must not become
 * `10`, and the final-number reader never takes `18 or 19`, `18 more than Bob` or `18 is wrong` as 18. `per` is the
 * one exception, inside a rate (`dollars per day`, see {@link isUnitPhrase}).
 */
export const RELATION_WORDS: ReadonlySet<string> = new Set([
  "and", "or", "to", "plus", "minus", "times", "over", "divided", "multiplied", "by", "of", "x", "per", "more", "less",
  "than", "out", "but", "not", "from", "if", "instead", "except", "fewer", "greater", "smaller", "larger",
  // a value the sentence rejects is no answer: `18 is wrong`, `18 isn't right`
  "wrong", "incorrect", "never", "nor", "isn't", "isn’t", "wasn't", "wasn’t",
]);

/** Most words on either side of `per` in a unit phrase (`square meters per hour` is 2 + 1). */
export const MAX_UNIT_WORDS = 3;

/**
 * One unit word: letters (an abbreviation may end in `.`, a degree sign may lead: `°C`), an optional exponent
 * (`cm^2`, `m^{2}`, `s^{-1}`, `m²`), and optional `/`-joined parts (`km/h`, `m/s^2`, `dollars/day`).
 */
const UNIT_PART = String.raw`°?\p{L}[\p{L}'’-]*\.?(?:\^\{?-?\d{1,2}\}?|[²³])?`;
const UNIT_WORD = new RegExp(`^${UNIT_PART}(?:/${UNIT_PART})*$`, "u");

/**
 * The one-letter words that are units (metre, gram, second, hour, litre, and the SI symbols that are capitals). Any
 * other single letter is a variable, so `\pi r^2`, `4 y` and `2 b` stay as written; `a` is the article of a rate
 * (`dollars a day`), never the last word.
 */
const ONE_LETTER_UNITS: ReadonlySet<string> = new Set(["m", "g", "s", "h", "l", "L", "K", "N", "J", "W", "V", "A", "C", "F"]);

/** True when no word of `words` is a one-letter variable (see {@link ONE_LETTER_UNITS}). */
function noVariables(words: readonly string[]): boolean {
  return words.every((w, i) => {
    if (w.includes("/")) return true;
    const core = w.replace(/[.^{}\-\d²³°]+/gu, "");
    return core.length !== 1 || ONE_LETTER_UNITS.has(core) || (core === "a" && i < words.length - 1);
  });
}

/** The letters of a unit word, lower-cased, for the relation-word check: `Dollars.` → `dollars`, `cm^2` → `cm`. */
function bareWord(word: string): string {
  return word.replace(/[.^{}\-\d²³°]+/gu, "").toLowerCase();
}

/**
 * True when `text` (already split from its value) names a unit and nothing else: one to `maxWords` unit words,
 * optionally followed by `per` and one to `maxWords` more (`dollars per day`, `per hour`), or a rate written
 * `a day` / `each` / `every week`, or `/day`. No digits except an exponent, and no relation word
 * ({@link RELATION_WORDS}) other than that one `per`, so `or 19`, `more than Bob`, `and cents` are not units; `of` is
 * accepted before a word (`cups of flour`, `of a pizza`: with no digit in a unit, `of 10` never qualifies); a single
 * letter is a unit only if it is one ({@link ONE_LETTER_UNITS}: `5 m`, not `\pi r^2`).
 * @param maxWords most words on either side of `per`; default {@link MAX_UNIT_WORDS} (the prose reader allows more:
 *   `$18 every day at the farmers' market`)
 */
export function isUnitPhrase(text: string, maxWords = MAX_UNIT_WORDS): boolean {
  const words = text.trim().replace(/^\/\s*/u, "per ").split(/\s+/u);
  if (words.length === 0 || words[0] === "" || words.length > 2 * maxWords + 1) return false;
  if (!words.every((w) => UNIT_WORD.test(w)) || !noVariables(words)) return false;
  const bare = words.map(bareWord);
  const per = bare.indexOf("per");
  if (per >= 0) {
    const after = bare.slice(per + 1);
    if (after.length === 0 || after.length > maxWords || per > maxWords) return false;
    return unitWords(bare.slice(0, per), true) && unitWords(after, false);
  }
  return bare.length <= maxWords && unitWords(bare, false);
}

/** No relation word among `words`; `of` only before another word. `maybeEmpty` allows `[]` (`18 per day`). */
function unitWords(words: readonly string[], maybeEmpty: boolean): boolean {
  if (words.length === 0) return maybeEmpty;
  return words.every((w, i) => (w === "of" ? i < words.length - 1 : !RELATION_WORDS.has(w)));
}

/** Commands whose braced argument is a unit when it ends an answer after a value (`5\text{ cm}`, `3\,\mathrm{m}`). */
const UNIT_COMMANDS = ["\\text", "\\textrm", "\\textnormal", "\\textit", "\\mbox", "\\mathrm", "\\mathit"];

/** Spacing between a value and its unit, or between two unit blocks: `\,`, `\;`, `\:`, `\!`, `\ `, `~`, `\quad`. */
const SPACINGS = ["\\qquad", "\\quad", "\\,", "\\;", "\\:", "\\!", "\\ ", "~", " ", "\t", "\n"];

/** `text` without its trailing spacing: a loop over {@link SPACINGS}, not a `(…)+$` regex (quadratic on long runs). */
function trimSpacingEnd(text: string): string {
  let end = text.length;
  for (let spacing = SPACINGS.find((s) => text.endsWith(s, end)); spacing && end > 0; spacing = SPACINGS.find((s) => text.endsWith(s, end))) {
    end -= spacing.length;
  }
  return text.slice(0, end);
}

/** A trailing exponent of a unit block: `^2`, `^{2}`, `^{-1}`, `^3`. */
const BLOCK_EXPONENT = /\^(?:\d|\{\s*-?\d{1,2}\s*\})$/u;

/** Joins between unit blocks: `\mathrm{m}/\mathrm{s}^2`, `\text{N}\cdot\text{m}`. */
const BLOCK_JOIN = /(?:\/|\\cdot(?![A-Za-z]))$/u;

/**
 * The unit block at the very end of `text` (`\text{ cm}^2`), or `null`: where it starts, given that it is one of
 * {@link UNIT_COMMANDS} with an unnested argument that {@link isUnitPhrase} accepts (after spacing such as `~`).
 */
function trailingUnitBlock(text: string): number | null {
  const exponent = BLOCK_EXPONENT.exec(text);
  const end = exponent ? exponent.index : text.length;
  if (text[end - 1] !== "}") return null;
  const open = openingBrace(text, end - 1);
  if (open < 0) return null;
  const command = UNIT_COMMANDS.find((c) => text.endsWith(c, open) || text.endsWith(`${c} `, open));
  if (!command) return null;
  const content = text
    .slice(open + 1, end - 1)
    .replace(/~|\\[,;:! ]/g, " ")
    .replace(/\^\{(-?\d{1,2})\}/g, "^$1")
    .trim();
  if (!isUnitPhrase(content)) return null;
  return text.lastIndexOf(command, open);
}

/** Index of the `{` that the `}` at `close` closes (nesting honoured), or -1. */
function openingBrace(text: string, close: number): number {
  let depth = 0;
  for (let i = close; i >= 0; i--) {
    if (text[i] === "}") depth++;
    else if (text[i] === "{" && --depth === 0) return i;
  }
  return -1;
}

/** True when `text` ends like a value a unit can follow: a digit, `}`, `)`, `%`, `°`, or a command (`\pi`, `\circ`). */
function endsWithValue(text: string): boolean {
  return /(?:[\d})%°]|\\[A-Za-z]+)$/u.test(text);
}

/**
 * Removes trailing LaTeX unit blocks after a value (BC-13): `12\text{ cm}^2` → `12`, `3.5\,\mathrm{m}` → `3.5`,
 * `9.8\,\mathrm{m}/\mathrm{s}^2` → `9.8`, `\frac{1}{2}\text{ cup}` → `\frac{1}{2}`, `90^\circ\text{C}` → `90^\circ`.
 * A block alone (`\text{(B)}`), a block that is not a unit (`\text{ or more}`, `\text{ and 5 cents}`), or a block
 * after something that is not a value stays as written.
 */
export function stripLatexUnits(text: string): string {
  let rest = text.trimEnd();
  for (let blocks = 0; blocks < 4; blocks++) {
    const start = trailingUnitBlock(rest);
    if (start === null) break;
    let before = trimSpacingEnd(rest.slice(0, start));
    const join = BLOCK_JOIN.exec(before);
    if (join) {
      // `m/\mathrm{s}`: only a unit block may stand before the join, so read it in the next round or give up
      const joined = trimSpacingEnd(before.slice(0, join.index));
      if (trailingUnitBlock(joined) === null) break;
      before = joined;
    }
    if (before === "" || !(endsWithValue(before) || trailingUnitBlock(before) !== null)) break;
    rest = before;
  }
  return endsWithValue(rest) ? rest : text;
}

/** Unit abbreviations read even when glued to the number (`12cm`, `5kg`, `60mph`); spaced units need no list. */
const GLUED_UNITS = [
  "mm", "cm", "dm", "km", "m", "mg", "kg", "g", "lbs", "lb", "oz", "ft", "yd", "mi", "ms", "s", "sec", "min", "hrs", "hr", "h",
  "mph", "kph", "kmh", "km/h", "m/s", "ml", "mL", "l", "L", "cl", "gal",
];
const GLUED = new RegExp(`^(.*[\\d}])(?:${GLUED_UNITS.map((u) => u.replace("/", "\\/")).join("|")})(?:\\^\\{?\\d\\}?|[²³])?$`, "u");

/**
 * Removes a plain unit after a value (after the LaTeX wrappers are gone): `28 dollars` → `28`, `12 square meters`
 * → `12`, `18 dollars per day` → `18`, `18/day` → `18`, `9.8 m/s^2` → `9.8`, `12 cm^2` → `12`, `\frac{1}{2} cups` →
 * `\frac{1}{2}`, `12cm` → `12` (glued: only the abbreviations of {@link GLUED_UNITS}). `10 and 20`, `18 or more`
 * and `x` stay as written.
 */
export function stripPlainUnits(text: string): string {
  const words = text.split(/\s+/u);
  // the longest tail of whole words that is a unit phrase, after a value
  for (let n = Math.min(words.length - 1, 2 * MAX_UNIT_WORDS + 1); n >= 1; n--) {
    const value = words.slice(0, -n).join(" ");
    if (endsWithValue(value) && isUnitPhrase(words.slice(-n).join(" "))) return value;
  }
  const rate = /^(.*[\d}])\s*\/\s*(\p{L}[^/]*)$/u.exec(text); // `18/day`, `$18 / hour`
  if (rate && isUnitPhrase(rate[2]!)) return rate[1]!;
  const glued = GLUED.exec(text);
  return glued ? glued[1]! : text;
}
