/**
 * @module emulator/policy/answer-key — the answer key of the simulated policy: canonical entries
 * `{match, answer, format}`, raw GSM8K rows `{question, answer}` (gold after the last `####`, BC-10) and raw
 * Countdown rows `{target, nums, solution?}`, auto-detected; loading from JSONL; and matching a prompt to an entry.
 */
import { parseGsm8kGold } from "../../rewards/index.ts";
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { integersIn, solveCountdown } from "./countdown.ts";

/** Where the reply puts the answer: `\boxed{…}` (GSM8K style) or `<answer>…</answer>` (Countdown style). */
export const AnswerFormat = z.enum(["boxed", "answer-tag"]);
export type AnswerFormat = z.infer<typeof AnswerFormat>;

/** Canonical entry: `match` is text that appears in the prompt (e.g. the question). */
export const CanonicalAnswerKeyEntry = z.object({
  match: z.string().min(1, "match must be non-empty text that appears in the prompt"),
  answer: z.string(),
  format: AnswerFormat,
});
/** A raw GSM8K row (`openai/gsm8k`): the gold answer is the text after the last `####`. */
export const Gsm8kRow = z.looseObject({ question: z.string().min(1), answer: z.string() });
/** A raw Countdown row: the prompt must contain `target` and every number of `nums`. */
export const CountdownRow = z.looseObject({
  target: z.number(),
  nums: z.array(z.number()).min(1),
  solution: z.string().optional(),
});

/** Anything `add`/`replace` accept: one of the three row shapes. */
export type AnswerKeyInput =
  | z.input<typeof CanonicalAnswerKeyEntry>
  | z.input<typeof Gsm8kRow>
  | z.input<typeof CountdownRow>;

/** A normalised entry. Countdown entries carry `nums`/`target` and match numerically. */
export interface AnswerKeyEntry {
  match: string;
  /** The gold answer. A Countdown row without `solution` is solved on first use ({@link goldAnswer}). */
  answer: string;
  format: AnswerFormat;
  source: "canonical" | "gsm8k" | "countdown";
  nums?: number[];
  target?: number;
  /** True while a Countdown row's answer has not been searched for yet. */
  unsolved?: boolean;
}

/** The entry's gold answer; solves a Countdown row on first use ("" when it has no solution). */
export function goldAnswer(entry: AnswerKeyEntry): string {
  if (entry.unsolved && entry.nums && entry.target !== undefined) {
    entry.answer = solveCountdown(entry.nums, entry.target) ?? "";
    entry.unsolved = false;
  }
  return entry.answer;
}

const collapse = (s: string) => s.replace(/\s+/g, " ").trim();

/**
 * Normalises one row, detecting its shape (`match` → canonical; `target`+`nums` → Countdown; `question`+`answer`
 * → GSM8K).
 * @throws Error naming `where`, the field and the fix, e.g. `answer key line 3: gsm8k row has no '####' gold answer`.
 */
export function normalizeAnswerKeyRow(row: unknown, where = "answer key row"): AnswerKeyEntry {
  const isObj = typeof row === "object" && row !== null;
  const has = (k: string) => isObj && k in row;
  if (has("source") && has("match") && has("format")) return { ...(row as AnswerKeyEntry) };
  const problem = (error: z.ZodError) =>
    new Error(`${where}: ${error.issues.map((i) => `${i.path.join(".") || "(row)"}: ${i.message}`).join("; ")}`);
  if (has("match")) {
    const p = CanonicalAnswerKeyEntry.safeParse(row);
    if (!p.success) throw problem(p.error);
    return { match: collapse(p.data.match), answer: p.data.answer, format: p.data.format, source: "canonical" };
  }
  if (has("target") && has("nums")) {
    const p = CountdownRow.safeParse(row);
    if (!p.success) throw problem(p.error);
    const match = `countdown target ${p.data.target} nums ${p.data.nums.join(",")}`;
    const { nums, target, solution } = p.data;
    return { match, answer: solution ?? "", format: "answer-tag", source: "countdown", nums, target, unsolved: solution === undefined };
  }
  if (has("question") && has("answer")) {
    const p = Gsm8kRow.safeParse(row);
    if (!p.success) throw problem(p.error);
    const gold = parseGsm8kGold(p.data.answer); // the reward code's BC-10 parser: the policy answers what the reward expects
    if (gold === null) throw new Error(`${where}: gsm8k row has no '####' gold answer (field answer); fix the row or use {match, answer, format}`);
    return { match: collapse(p.data.question), answer: gold, format: "boxed", source: "gsm8k" };
  }
  throw new Error(`${where}: unknown row shape; expected {match, answer, format}, {question, answer} or {target, nums, solution?}`);
}

function containsAll(haystack: readonly number[], needles: readonly number[]): boolean {
  const counts = new Map<number, number>();
  for (const n of haystack) counts.set(n, (counts.get(n) ?? 0) + 1);
  return needles.every((n) => {
    const c = counts.get(n) ?? 0;
    counts.set(n, c - 1);
    return c > 0;
  });
}

const normalizeRows = (rows: readonly unknown[]) => rows.map((r, i) => normalizeAnswerKeyRow(r, `answer key row ${i}`));

/** The answer key: add / replace entries, match a prompt text. */
export class AnswerKeyStore {
  private list: AnswerKeyEntry[] = [];

  /** Number of entries. */
  get size(): number {
    return this.list.length;
  }

  /**
   * Adds rows (any of the three shapes, auto-detected).
   * @returns the new size. @throws Error naming the bad row (nothing is added then).
   */
  add(rows: readonly unknown[]): number {
    this.list.push(...normalizeRows(rows));
    return this.list.length;
  }

  /** Replaces every entry with `rows`. @returns the new size. @throws Error naming the bad row (nothing changes then). */
  replace(rows: readonly unknown[]): number {
    this.list = normalizeRows(rows);
    return this.list.length;
  }

  /**
   * The entry for a prompt text: the longest `match` contained in it (whitespace-insensitive), else the Countdown
   * row with the most numbers all written in it (and its target).
   */
  match(text: string): AnswerKeyEntry | undefined {
    const flat = collapse(text);
    let best: AnswerKeyEntry | undefined;
    for (const e of this.list) {
      if (e.source !== "countdown" && flat.includes(e.match) && (!best || e.match.length > best.match.length)) best = e;
    }
    if (best) return best;
    const ints = integersIn(flat);
    for (const e of this.list) {
      if (e.source !== "countdown" || e.target === undefined || !e.nums) continue;
      if (!ints.includes(e.target) || !containsAll(ints, e.nums)) continue;
      if (!best || (best.nums?.length ?? 0) < e.nums.length) best = e;
    }
    return best;
  }
}

/**
 * Reads a JSONL answer key file (one row per line, blank lines skipped).
 * @throws Error naming the file, the line and the field.
 */
export async function loadAnswerKeyFile(path: string): Promise<AnswerKeyEntry[]> {
  const text = await readFile(path, "utf8");
  const out: AnswerKeyEntry[] = [];
  text.split("\n").forEach((line, i) => {
    if (!line.trim()) return;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch (e) {
      throw new Error(`${path} line ${i + 1}: not JSON (${(e as Error).message})`);
    }
    out.push(normalizeAnswerKeyRow(row, `${path} line ${i + 1}`));
  });
  return out;
}
