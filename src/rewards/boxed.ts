/**
 * @module rewards/boxed — finds the LAST `\boxed{…}` / `\fbox{…}` / `\boxed 5` in a text with balanced braces
 * (BC-01, BC-03). One scanner serves both extraction and stripping, so they accept the same forms. Linear time:
 * `lastIndexOf` for the marker, then a scan bounded by `maxContentChars` (BC-16, BC-52).
 */

/** The box commands we read. `\fbox` is accepted in every form `\boxed` is (BC-03). */
export const BOX_MARKERS = ["\\boxed", "\\fbox"] as const;

/** Longest box content read by default, in characters; a longer box is `too_long`, never scanned further. */
export const DEFAULT_MAX_BOX_CONTENT_CHARS = 1000;

/**
 * What the scanner found at one marker:
 * - `box`: a complete box; `content` is the balanced inner text (`\frac{1}{2}` for `\boxed{\frac{1}{2}}`),
 *   `start`/`end` the span of the whole box in the text (end exclusive);
 * - `unbalanced`: the text ends before the box closes (output cut at max tokens) — "no answer" (BC-03);
 * - `too_long`: the content is longer than `maxContentChars` (degenerate output) — BC-16.
 */
export type BoxScan =
  | { kind: "box"; marker: string; start: number; end: number; content: string }
  | { kind: "unbalanced"; marker: string; start: number }
  | { kind: "too_long"; marker: string; start: number };

function isLetter(c: string | undefined): boolean {
  return c !== undefined && ((c >= "a" && c <= "z") || (c >= "A" && c <= "Z"));
}

function isSpace(c: string | undefined): boolean {
  return c === " " || c === "\t" || c === "\n" || c === "\r";
}

/**
 * Index of the `}` closing the `{` at `open`, honouring nesting and `\{`/`\}` escapes; scans at most `maxChars`
 * characters. Returns the index, `-1` if the text ends first, or `-2` if the limit is hit first.
 */
export function matchBrace(text: string, open: number, maxChars: number): number {
  let depth = 0;
  const limit = Math.min(text.length, open + 1 + maxChars + 1);
  for (let i = open; i < limit; i++) {
    const c = text[i];
    if (c === "\\") i++;
    else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return i;
  }
  return limit === text.length ? -1 : -2;
}

/**
 * Reads the box whose marker starts at `start` (`text.startsWith(marker, start)`). Accepts `\boxed{X}`,
 * `\boxed {X}` and the brace-less `\boxed 5` (one token up to whitespace or `$`). Returns `null` when the marker
 * is a prefix of another command (`\boxedtext`) or `\boxed` is followed by nothing.
 */
export function scanBox(text: string, start: number, marker: string, maxContentChars: number): BoxScan | null {
  let i = start + marker.length;
  if (isLetter(text[i])) return null;
  const afterMarker = i;
  while (isSpace(text[i])) i++;
  if (text[i] === "{") {
    const close = matchBrace(text, i, maxContentChars);
    if (close === -1) return { kind: "unbalanced", marker, start };
    if (close === -2) return { kind: "too_long", marker, start };
    return { kind: "box", marker, start, end: close + 1, content: text.slice(i + 1, close) };
  }
  if (i === afterMarker || i >= text.length) return null; // `\boxed5` is another command; `\boxed` at the end: none
  const tokenStart = i;
  const limit = Math.min(text.length, tokenStart + maxContentChars + 1);
  while (i < limit && !isSpace(text[i]) && text[i] !== "$") i++;
  if (i - tokenStart > maxContentChars) return { kind: "too_long", marker, start };
  return { kind: "box", marker, start, end: i, content: text.slice(tokenStart, i) };
}

/**
 * The last box of `text` over every marker in {@link BOX_MARKERS}, or `null` when there is none. "Last" means the
 * marker that starts last, so a truncated final box wins over a complete earlier one (the model's last word).
 */
export function findLastBox(text: string, maxContentChars = DEFAULT_MAX_BOX_CONTENT_CHARS): BoxScan | null {
  let best: BoxScan | null = null;
  for (const marker of BOX_MARKERS) {
    let at = text.lastIndexOf(marker);
    while (at >= 0 && (best === null || at > best.start)) {
      const scan = scanBox(text, at, marker, maxContentChars);
      if (scan) {
        best = scan;
        break;
      }
      at = at === 0 ? -1 : text.lastIndexOf(marker, at - 1);
    }
  }
  return best;
}

/** The content of the last box when it is complete (`\frac{1}{2}`), else `null` — what the reward compares. */
export function extractLastBoxed(text: string, maxContentChars = DEFAULT_MAX_BOX_CONTENT_CHARS): string | null {
  const scan = findLastBox(text, maxContentChars);
  return scan?.kind === "box" ? scan.content : null;
}

/** The whole span (`\boxed{…}`) of the last complete box, or `null` — the "extract" half of extract/strip. */
export function lastBoxedSpan(text: string, maxContentChars = DEFAULT_MAX_BOX_CONTENT_CHARS): string | null {
  const scan = findLastBox(text, maxContentChars);
  return scan?.kind === "box" ? text.slice(scan.start, scan.end) : null;
}

/**
 * Removes the box command from a span that is exactly one box (`\fbox{7}` → `7`, `\boxed 5` → `5`); `null` if the
 * span is not one complete box. Uses the same scanner as {@link findLastBox} (BC-03: same accepted forms).
 */
export function stripBox(span: string, maxContentChars = DEFAULT_MAX_BOX_CONTENT_CHARS): string | null {
  for (const marker of BOX_MARKERS) {
    if (!span.startsWith(marker)) continue;
    const scan = scanBox(span, 0, marker, maxContentChars);
    return scan?.kind === "box" && scan.end === span.length ? scan.content : null;
  }
  return null;
}
