/**
 * @module tasks/gold — reading the gold answer of a dataset row at load time: GSM8K's `#### <answer>` tail (BC-10)
 * and the last balanced `\boxed{…}` of a MATH solution (BC-01, BC-54). The parsing itself is the reward code's
 * (`src/rewards`), so the reference side and the scoring side accept exactly the same forms.
 */
import { extractLastBoxed, parseGsm8kGold } from "../rewards/index.ts";

/**
 * The GSM8K gold: the text after the LAST `####`, normalised like a model's answer (commas, `$`, a trailing
 * period removed; decimals canonical), e.g. `"…130,000\n#### 70,000"` → `"70000"`, `"#### 18."` → `"18"` (BC-07,
 * BC-10).
 * @returns `null` when there is no `####` or nothing follows it (the row is then flagged at load).
 */
export function gsm8kGold(answer: string): string | null {
  return parseGsm8kGold(answer);
}

/**
 * The content of the LAST complete box in `text`: `\boxed{…}` or `\fbox{…}` with nested braces kept whole
 * (`\boxed{\frac{1}{2}}` → `\frac{1}{2}`, BC-01), or the brace-less `\boxed 5` form (→ `5`, BC-03).
 * @returns the trimmed content, or `null` when there is no box, or the last box is empty or never closes
 *   (a truncated reference must be flagged, not replaced by an earlier box).
 */
export function lastBoxedContent(text: string): string | null {
  const content = extractLastBoxed(text)?.trim();
  return content ? content : null;
}
