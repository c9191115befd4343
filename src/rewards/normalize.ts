/**
 * @module rewards/normalize — turns an extracted answer (box content, `####` tail, "Final Answer:" line) into a
 * canonical string before comparison: LaTeX wrappers and delimiters, currency, signs, percent and unit words,
 * choice letters (BC-07, BC-08, BC-12, BC-13). Single pass per step, bounded input: linear time.
 */
import { stripLatexUnits, stripPlainUnits } from "./units.ts";

export { RELATION_WORDS } from "./units.ts";

/** Commands whose braces are dropped and whose content is kept: `\text{13}` → `13` (BC-12). */
const WRAPPERS = ["\\textbf", "\\textit", "\\textrm", "\\text", "\\mathrm", "\\mathbf", "\\mbox", "\\operatorname"];

/** LaTeX spacing and sizing commands that carry no value. Longest first, so `\left(` wins over `\left`. */
const DROPPED = ["\\displaystyle", "\\left", "\\right", "\\!", "\\,", "\\;", "\\:", "\\ ", "\\(", "\\)", "\\[", "\\]"];

/**
 * Removes any of `chars` from the start and/or end of `text`. A loop, not a `[…]+$` regex, which V8 would retry
 * at every position of a long run (quadratic).
 */
export function trimChars(text: string, chars: string, side: "both" | "end" = "both"): string {
  let start = 0;
  let end = text.length;
  if (side === "both") while (start < end && chars.includes(text[start]!)) start++;
  while (end > start && chars.includes(text[end - 1]!)) end--;
  return text.slice(start, end);
}

function isLetter(c: string | undefined): boolean {
  return c !== undefined && /^[A-Za-z]$/.test(c);
}

/**
 * Removes wrapper commands and their braces in one pass, keeping the content; also drops spacing commands and
 * turns `\dfrac`/`\tfrac`/`\cfrac` into `\frac`. Braces stay balanced because each `}` pops the group its `{` opened.
 */
export function unwrapLatex(text: string): string {
  const out: string[] = [];
  const groups: boolean[] = []; // true = the brace group belongs to a wrapper and its braces are dropped
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === "\\") {
      const wrapper = WRAPPERS.find((w) => text.startsWith(w, i) && text[i + w.length] === "{");
      if (wrapper) {
        groups.push(true);
        i += wrapper.length + 1;
        continue;
      }
      const dropped = DROPPED.find(
        (d) => text.startsWith(d, i) && !(isLetter(d.at(-1)) && isLetter(text[i + d.length])), // not `\leftarrow`
      );
      if (dropped) {
        out.push(dropped === "\\ " ? " " : "");
        i += dropped.length;
        continue;
      }
      if (text.startsWith("\\dfrac", i) || text.startsWith("\\tfrac", i) || text.startsWith("\\cfrac", i)) {
        out.push("\\frac");
        i += 6;
        continue;
      }
      out.push(c, text[i + 1] ?? "");
      i += 2;
      continue;
    }
    if (c === "{") groups.push(false);
    if (c === "}" && groups.pop() === true) {
      i++;
      continue;
    }
    out.push(c);
    i++;
  }
  return out.join("");
}

/** Commands whose arguments may be written without braces, with their number of arguments (longest name first). */
const BRACE_LESS_COMMANDS: readonly (readonly [string, number])[] = [
  ["\\dfrac", 2], ["\\tfrac", 2], ["\\cfrac", 2], ["\\frac", 2], ["\\sqrt", 1],
];

/**
 * One TeX argument at `at` (spaces before it skipped, as TeX does): a braced group (its content braced in turn), a
 * control sequence (`\pi`), or a single character. `null` at the end of the text, at a `}`, or for an unclosed
 * group, so the caller leaves the rest as written.
 */
function readArgument(text: string, at: number): { braced: string; end: number } | null {
  let j = at;
  while (text[j] === " ") j++;
  const c = text[j];
  if (c === undefined || c === "}") return null;
  if (c === "{") {
    let depth = 0;
    for (let k = j; k < text.length; k++) {
      if (text[k] === "{") depth++;
      else if (text[k] === "}" && --depth === 0) return { braced: `{${braceArguments(text.slice(j + 1, k))}}`, end: k + 1 };
    }
    return null;
  }
  if (c === "\\") {
    let k = j + 1;
    while (isLetter(text[k])) k++;
    if (k === j + 1) k++; // a control symbol such as `\,`
    return { braced: `{${text.slice(j, k)}}`, end: k };
  }
  return { braced: `{${c}}`, end: j + 1 };
}

/**
 * Gives brace-less TeX arguments their braces, so `\frac12`, `\frac 1 2`, `\dfrac12`, `\tfrac1{2}` read as
 * `\frac{1}{2}` (and `\dfrac`/`\tfrac` stay as written, for {@link unwrapLatex}), and `\sqrt2` as `\sqrt{2}`; TeX
 * takes one token per argument, so `\frac123` is `\frac{1}{2}3`. `\sqrt[3]{8}` is left as written. Text that is
 * already braced comes out unchanged; an unclosed group stays as written.
 */
export function braceArguments(text: string): string {
  if (!text.includes("\\")) return text;
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    const command = text[i] === "\\"
      ? BRACE_LESS_COMMANDS.find(([name]) => text.startsWith(name, i) && !isLetter(text[i + name.length]))
      : undefined;
    if (!command || (command[1] === 1 && text.slice(i + command[0].length).trimStart().startsWith("["))) {
      out.push(text[i]!);
      i++;
      continue;
    }
    out.push(command[0]);
    i += command[0].length;
    for (let n = 0; n < command[1]; n++) {
      const arg = readArgument(text, i);
      if (!arg) break;
      out.push(arg.braced);
      i = arg.end;
    }
  }
  return out.join("");
}

/**
 * Unicode minus signs and dashes used as minus (U+2212, U+FE63, U+FF0D) → `-` (BC-08); a thin or narrow no-break
 * space between digit groups (the SI thousands separator, `1 000`) removed; other odd spaces → ` `.
 */
function unifyCharacters(text: string): string {
  return text
    .replace(/[\u2212\uFE63\uFF0D]/g, "-")
    .replace(/(\d)[\u2009\u202F](?=\d{3}(?!\d))/g, "$1")
    .replace(/[\u00A0\u2009\u202F\u2007]/g, " ");
}

/** Trailing `%`, `\%`, `percent`, degree signs (`^\circ`, `°`, `°C`), then a unit after the value; never rescales (BC-13). */
function stripUnits(text: string): string {
  let s = text.replace(/(?:\\%|%|percent|per\s+cent)$/i, "").trimEnd();
  s = s.replace(/(?:\^\{?\\circ\}?|°|degrees?)\s*[CF]?$/i, "").trimEnd();
  return stripPlainUnits(s);
}

/**
 * Collapses whitespace: a single space is kept only between two word characters (`x y`), else removed; and after a
 * comma that separates two numbers (`18, 190`), so a list never reads as one number with a thousands comma (18190).
 */
function squeezeSpaces(text: string): string {
  return text.trim().replace(/\s+/g, (run: string, at: number, all: string) => {
    const before = all[at - 1] ?? "";
    const after = all[at + run.length] ?? "";
    if (before === "," && /\d/.test(all[at - 2] ?? "") && /^\d{3}(?!\d)/.test(all.slice(at + run.length, at + run.length + 4))) return " ";
    return /\w/.test(before) && /\w/.test(after) ? " " : "";
  });
}

/**
 * Canonical form of an answer for comparison. Steps, in order: Unicode minus/space; brace-less arguments braced
 * (`\frac12` → `\frac{1}{2}`); `{,}` → `,`; `\$` and `$` removed; markdown `*`/`_` around the answer and a trailing
 * `.`/`;` removed; LaTeX unit blocks after the value (`12\text{ cm}^2`, `3.5\,\mathrm{m}`, see `units.ts`); LaTeX
 * wrappers (`\text`, `\textbf`, `\mathrm` …) and delimiters; trailing percent, degree and unit words, rates included
 * (`18 dollars per day`; no rescaling); a leading `x =`; one pair of outer braces; whitespace; a single choice letter
 * `(b)`/`B)`/`b` → `B`.
 * @param raw extracted answer text (already bounded by the caller)
 * @returns the canonical string; `""` means "no answer" (an empty box is not the number 0, BC-05)
 */
export function normalizeAnswer(raw: string): string {
  let s = braceArguments(unifyCharacters(raw));
  s = s.replace(/\{,\}/g, ",").replace(/\\\$/g, "").replace(/\$/g, "");
  s = trimPunctuation(s);
  s = unwrapLatex(stripLatexUnits(s));
  s = trimPunctuation(s);
  s = stripUnits(s).trim();
  s = s.replace(/^[A-Za-z]\s*=\s*/, "");
  if (s.startsWith("{") && s.endsWith("}") && s.indexOf("}") === s.length - 1) s = s.slice(1, -1);
  s = squeezeSpaces(s);
  const choice = /^\(?([A-Za-z])\)?[.:]?$/.exec(s);
  return choice ? choice[1]!.toUpperCase() : s;
}

/** Markdown `*`/`_` around the answer and a trailing `.`/`;` removed (BC-07, BC-14). */
function trimPunctuation(text: string): string {
  return trimChars(trimChars(text.trim(), "*_").trim(), ".;", "end").trim();
}
