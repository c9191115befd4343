/**
 * @module rewards/judge-fallback — deterministic text-overlap scores that stand in for an LLM judge in DEMOS
 * (no judge secrets, a local emulator): character-bigram F1 against a reference, the share of a script's letters,
 * and term-list F1. They measure surface overlap, not translation quality: never train a real model on them.
 * Pure, linear-time, every result a finite number in [0, 1].
 */

/** Text without whitespace, as code points (a CJK character is one unit). */
function units(text: string): string[] {
  return Array.from(text.normalize("NFKC").replace(/\s+/gu, ""));
}

function counts(items: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const it of items) m.set(it, (m.get(it) ?? 0) + 1);
  return m;
}

/** F1 of two multisets given their sizes and overlap; 0 when either is empty. */
function f1(overlap: number, a: number, b: number): number {
  if (a === 0 || b === 0 || overlap === 0) return 0;
  const precision = overlap / a;
  const recall = overlap / b;
  return (2 * precision * recall) / (precision + recall);
}

/**
 * Character-bigram F1 between a candidate and a reference, whitespace ignored (a chrF-like overlap that suits
 * Chinese, which has no word spaces). Texts shorter than 2 characters compare as single characters.
 * @returns 0..1; 1 for identical texts, 0 when either is empty
 */
export function charBigramF1(candidate: string, reference: string): number {
  const c = units(candidate);
  const r = units(reference);
  const n = c.length >= 2 && r.length >= 2 ? 2 : 1;
  const grams = (u: string[]) => (n === 1 ? u : u.slice(0, -1).map((ch, i) => ch + u[i + 1]));
  const cg = grams(c);
  const rg = counts(grams(r));
  let overlap = 0;
  for (const [g, k] of counts(cg)) overlap += Math.min(k, rg.get(g) ?? 0);
  return f1(overlap, cg.length, grams(r).length);
}

/** Han (Chinese) characters: the default target script of {@link scriptShare}. */
export const HAN_SCRIPT = /\p{Script=Han}/u;

/**
 * The share of letters in `text` that belong to `script` (default Han): a "did it translate at all" signal.
 * @returns 0..1; 0 for a text without letters
 */
export function scriptShare(text: string, script: RegExp = HAN_SCRIPT): number {
  let letters = 0;
  let inScript = 0;
  for (const ch of text) {
    if (!/\p{L}/u.test(ch)) continue;
    letters++;
    if (script.test(ch)) inScript++;
  }
  return letters === 0 ? 0 : inScript / letters;
}

/** Lower-cased, whitespace-collapsed form used to compare terms. */
export function normalizeTerm(term: string): string {
  return term.normalize("NFKC").toLowerCase().replace(/\s+/gu, " ").trim();
}

/** A detected or reference term: the source-language term and, optionally, its rendering in the target language. */
export interface TermPair {
  term: string;
  rendering?: string;
}

/**
 * How well a detected term list matches a reference list: 0.5 × F1 of the (normalised, distinct) source terms +
 * 0.5 × the share of reference terms detected with exactly the reference rendering (whitespace ignored).
 * @returns 0..1; 0 when either list is empty
 */
export function termListScore(detected: readonly TermPair[], reference: readonly TermPair[]): number {
  const got = new Map<string, TermPair>();
  for (const d of detected) if (normalizeTerm(d.term) !== "") got.set(normalizeTerm(d.term), d);
  const want = new Map<string, TermPair>();
  for (const r of reference) if (normalizeTerm(r.term) !== "") want.set(normalizeTerm(r.term), r);
  let overlap = 0;
  let rendered = 0;
  for (const [key, ref] of want) {
    const hit = got.get(key);
    if (!hit) continue;
    overlap++;
    const same = (s?: string) => (s ?? "").replace(/\s+/gu, "");
    if (ref.rendering !== undefined && same(hit.rendering) === same(ref.rendering) && same(ref.rendering) !== "") rendered++;
  }
  if (want.size === 0) return 0;
  return 0.5 * f1(overlap, got.size, want.size) + 0.5 * (rendered / want.size);
}

/**
 * Without a reference list: the share of detected terms that occur in the source text (case-insensitive) — it
 * rewards not inventing terms, nothing more.
 * @returns 0..1; 0 when nothing was detected
 */
export function termsFoundInSource(detected: readonly TermPair[], source: string): number {
  const terms = [...new Set(detected.map((d) => normalizeTerm(d.term)).filter((t) => t !== ""))];
  if (terms.length === 0) return 0;
  const haystack = normalizeTerm(source);
  return terms.filter((t) => haystack.includes(t)).length / terms.length;
}
