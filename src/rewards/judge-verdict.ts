/**
 * @module rewards/judge-verdict — reads an LLM judge's reply into one score in [0, 1], robustly (BC-21): the
 * FINAL structured verdict wins (a rubric explained in the reply cannot give credit), a truncated or empty reply
 * is unparseable (never 0), and a bare number in prose is never a score. Pure; linear in the reply's length.
 */

/**
 * The line every judge rubric should end with: it asks for the one structured verdict {@link parseJudgeVerdict}
 * reads (BC-21 c).
 */
export const JUDGE_SCORE_INSTRUCTION =
  'End your reply with one line that holds only a JSON object {"score": x}, where x is a number from 0 to 1 ' +
  "(0 = worst, 1 = best). Do not write any other JSON object after it.";

/** The longest reply tail read, in characters; a verdict is expected at the end (BC-16-style cost bound). */
export const MAX_VERDICT_SCAN_CHARS = 20_000;

/** Options of {@link parseJudgeVerdict}. */
export interface VerdictParseOptions {
  /**
   * Verdict tags a rubric may ask for instead of JSON, with their score, e.g. `{"[[CORRECT]]": 1,
   * "[[INCORRECT]]": 0}`. The tag that ENDS last in the reply wins (the longer one when two end at the same
   * place, so `INCORRECT` beats the `CORRECT` inside it), BC-21 (a). Default: none (JSON only).
   */
  verdictTags?: Readonly<Record<string, number>>;
}

/** Where a parsed verdict came from. */
export type VerdictSource = "json" | "tag";

/** A parsed verdict: a score in [0, 1], or why there is none (then the judge is retried or the episode aborted). */
export type ParsedVerdict =
  | { ok: true; score: number; source: VerdictSource }
  | { ok: false; problem: string };

/** Finish reasons after which the reply is incomplete, so its verdict cannot be trusted (BC-21 b). */
const INCOMPLETE_FINISH_REASONS = new Set(["length", "content_filter"]);

/** Removes complete `<think>…</think>` blocks and cuts an unclosed one: reasoning is not the verdict. */
export function stripReasoning(text: string): string {
  let out = "";
  let at = 0;
  for (;;) {
    const open = text.indexOf("<think>", at);
    if (open < 0) return out + text.slice(at);
    out += text.slice(at, open);
    const close = text.indexOf("</think>", open + 7);
    if (close < 0) return out;
    at = close + 8;
  }
}

/** The last flat JSON object with an own `score` key: its value and where it ends, or `undefined`. */
function lastJsonScore(text: string): { value: unknown; end: number } | undefined {
  let found: { value: unknown; end: number } | undefined;
  // `[^{}]*` stops at the next brace, so each start is scanned once up to it: linear overall.
  for (const m of text.matchAll(/\{[^{}]*\}/g)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(m[0]);
    } catch {
      continue;
    }
    if (typeof parsed === "object" && parsed !== null && Object.hasOwn(parsed, "score")) {
      found = { value: (parsed as { score: unknown }).score, end: m.index + m[0].length };
    }
  }
  return found;
}

/** The verdict tag that ends last (ties: the longer tag), or `undefined`. */
function lastTag(text: string, tags: Readonly<Record<string, number>>): { score: number; end: number } | undefined {
  let best: { score: number; end: number; length: number } | undefined;
  for (const [tag, score] of Object.entries(tags)) {
    if (tag === "") continue;
    const at = text.lastIndexOf(tag);
    if (at < 0) continue;
    const end = at + tag.length;
    if (!best || end > best.end || (end === best.end && tag.length > best.length)) best = { score, end, length: tag.length };
  }
  return best;
}

/**
 * Parses a judge reply (BC-21):
 * - `finishReason` `length`/`content_filter`, or empty/`null` content → unparseable (b): retry, never 0;
 * - the LAST flat JSON object with a `score` key is the verdict; its score must be a JSON number in [0, 1], else
 *   unparseable (c): `{"score": 5}` or `{"score": "high"}` is never rescaled or guessed;
 * - with `verdictTags`, the tag that ends last is a verdict too; between a JSON verdict and a tag, the one that
 *   ends later wins (a): the final verdict token counts, not the rule the judge repeated;
 * - prose numbers (`overall 9/10`) are never read.
 * `<think>` blocks are ignored; only the last {@link MAX_VERDICT_SCAN_CHARS} characters are read.
 */
export function parseJudgeVerdict(
  content: string | null | undefined,
  finishReason?: string | null,
  options: VerdictParseOptions = {},
): ParsedVerdict {
  if (finishReason && INCOMPLETE_FINISH_REASONS.has(finishReason)) {
    return { ok: false, problem: `the judge reply is incomplete (finish_reason "${finishReason}")` };
  }
  const text = stripReasoning(content ?? "").slice(-MAX_VERDICT_SCAN_CHARS);
  if (text.trim() === "") return { ok: false, problem: "the judge reply is empty" };
  const json = lastJsonScore(text);
  const tag = options.verdictTags ? lastTag(text, options.verdictTags) : undefined;
  if (tag && (!json || tag.end > json.end)) {
    return Number.isFinite(tag.score) && tag.score >= 0 && tag.score <= 1
      ? { ok: true, score: tag.score, source: "tag" }
      : { ok: false, problem: `verdict tag score ${tag.score} is not in [0, 1]` };
  }
  if (!json) {
    return { ok: false, problem: 'the judge reply has no {"score": x} object' + (options.verdictTags ? " or verdict tag" : "") };
  }
  const { value } = json;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > 1) {
    return { ok: false, problem: `the judge's score ${JSON.stringify(value)} is not a number in [0, 1]` };
  }
  return { ok: true, score: value, source: "json" };
}
