/**
 * @module tasks/gold — reading the gold answer of a dataset row at load time: GSM8K's `#### <answer>` tail (BC-10)
 * and the last balanced `\boxed{…}` of a MATH solution (BC-01, BC-54). Scoring a model's answer lives in
 * `src/rewards`; these only read the reference side.
 */

/**
 * The GSM8K gold: the text after the LAST `####`, trimmed, with commas and `$` removed (BC-10), e.g.
 * `"…130,000\n#### 70,000"` → `"70000"`.
 * @returns `null` when there is no `####` or nothing follows it (the row is then flagged at load).
 */
export function gsm8kGold(answer: string): string | null {
  const at = answer.lastIndexOf("####");
  if (at === -1) return null;
  const gold = answer
    .slice(at + 4)
    .replace(/[,$]/g, "")
    .trim();
  return gold === "" ? null : gold;
}

/**
 * The content of the balanced brace group that opens at `text[open] === "{"`. A backslash escapes the next
 * character, so `\{`, `\}` and `\\` do not count as braces.
 * @returns the content and the index after the closing brace, or `null` when the group never closes (truncated).
 */
export function readBraceGroup(text: string, open: number): { content: string; end: number } | null {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const ch = text[i];
    if (ch === "\\") {
      i += 1;
    } else if (ch === "{") {
      depth += 1;
    } else if (ch === "}") {
      depth -= 1;
      if (depth === 0) return { content: text.slice(open + 1, i), end: i + 1 };
    }
  }
  return null;
}

const BOX = /\\(?:boxed|fbox)\b\s*(\{)?/g;

/**
 * The content of the LAST complete box in `text`: `\boxed{…}` or `\fbox{…}` with nested braces kept whole
 * (`\boxed{\frac{1}{2}}` → `\frac{1}{2}`, BC-01), or the brace-less `\boxed 5` form (→ `5`, BC-03).
 * @returns the trimmed content, or `null` when there is no box, or the last box is empty or never closes
 *   (a truncated reference must be flagged, not replaced by an earlier box).
 */
export function lastBoxedContent(text: string): string | null {
  let found: string | null = null;
  for (const match of text.matchAll(BOX)) {
    const after = match.index + match[0].length;
    if (match[1] === "{") {
      const content = readBraceGroup(text, after - 1)?.content.trim();
      found = content ? content : null;
    } else if (/\s$/.test(match[0])) {
      // `\boxed 5`: one token after the space, up to whitespace, `$`, a brace or a backslash
      const bare = /^[^\s${}\\]+/.exec(text.slice(after));
      if (bare) found = bare[0];
    }
  }
  return found;
}
