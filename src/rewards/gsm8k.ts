/**
 * @module rewards/gsm8k — GSM8K gold answers: the text after the last `####` of the `answer` rationale, cleaned
 * of `$`, commas and a trailing period (BC-07, BC-10). Also the `####` tail reader used by the opt-in fallback.
 */
import { normalizeAnswer } from "./normalize.ts";
import { formatRational, parseNumericAnswer } from "./rational.ts";

/** The GSM8K answer marker. */
export const HASH_MARKER = "####";

/**
 * The text after the last `####` up to the end of that line, trimmed; `null` when there is no marker. Reads at
 * most `maxChars` characters after the marker (linear time on any input, BC-16).
 */
export function extractHashAnswer(text: string, maxChars = 1000): string | null {
  const at = text.lastIndexOf(HASH_MARKER);
  if (at < 0) return null;
  const tail = text.slice(at + HASH_MARKER.length, at + HASH_MARKER.length + maxChars);
  const newline = tail.indexOf("\n");
  return (newline < 0 ? tail : tail.slice(0, newline)).trim();
}

/**
 * The canonical gold of a GSM8K row (BC-10): `"…<<80000+50000=130000>>130,000\n#### 70000"` → `"70000"`,
 * `"#### 18."` → `"18"`, `"#### $18"` → `"18"`, `"#### 1,000"` → `"1000"`, `"#### -3"` → `"-3"`.
 * @returns the gold, or `null` when the row has no `####` or nothing after it — flag such rows at load time
 *   rather than scoring them 0 forever.
 */
export function parseGsm8kGold(answer: string): string | null {
  const raw = extractHashAnswer(answer);
  if (raw === null) return null;
  const normalized = normalizeAnswer(raw);
  if (normalized === "") return null;
  const numeric = parseNumericAnswer(normalized);
  return numeric ? formatRational(numeric) : normalized;
}
