/**
 * @module tasks/field-maps — one field map per dataset kind (BC-54): which column is the query, where the gold
 * answer comes from, what goes into `metadata`. A row that cannot give a real query or gold is refused at load,
 * never sent to the model as a placeholder ("Empty", "[not defined]").
 */
import { z } from "zod";
import { extractLastBoxed, parseGsm8kGold } from "../rewards/index.ts";
import { buildCountdownPrompt } from "./countdown-prompt.ts";
import type { CountdownTaskMetadata } from "./countdown-prompt.ts";
import { describeValue, RowValueError, toJsonSafe, toSafeInteger } from "./values.ts";

/** The dataset kinds and their columns: gsm8k `question`/`answer`, math `problem`/`solution`|`answer`,
 * countdown `target`/`nums`, generic `main_query`/`init_messages`/`metadata` (the reference JSONL reader's). */
export const DatasetKind = z.enum(["gsm8k", "math", "countdown", "generic"]);
export type DatasetKind = z.infer<typeof DatasetKind>;

/** The task fields a field map derives from one row (the loader adds `task_id`). */
export interface MappedRow {
  mainQuery: string;
  initMessages: Record<string, unknown>[];
  envType: string;
  metadata: Record<string, unknown>;
}

/** Maps one row; throws RowValueError with the reason the row is refused. */
export type FieldMap = (row: Record<string, unknown>) => MappedRow;

/** `env_type` of every task we read, as the reference readers set it (spec §6.1). */
export const NO_ENV = "no_env";

function requireQuery(row: Record<string, unknown>, column: string, kind: DatasetKind): string {
  const value = row[column];
  if (typeof value !== "string" || value.trim() === "") {
    const got = value === undefined ? "missing" : `got ${describeValue(value)}`;
    throw new RowValueError(`missing or empty query: ${kind} rows need a non-empty string \`${column}\` (${got})`);
  }
  return value;
}

/** The row without the named columns and without `task_id` (which becomes the task's id), JSON-safe. */
function rest(row: Record<string, unknown>, ...omit: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (k !== "task_id" && !omit.includes(k)) out[k] = toJsonSafe(v, k);
  }
  return out;
}

const task = (mainQuery: string, metadata: Record<string, unknown>): MappedRow => ({
  mainQuery,
  initMessages: [],
  envType: NO_ENV,
  metadata,
});

/** GSM8K: query `question`; `metadata.answer` the raw rationale, `metadata.gold` its `####` tail (BC-10). */
const gsm8k: FieldMap = (row) => {
  const question = requireQuery(row, "question", "gsm8k");
  const answer = row["answer"];
  if (typeof answer !== "string") {
    throw new RowValueError(`gsm8k rows need a string \`answer\` (got ${describeValue(answer)})`);
  }
  const gold = parseGsm8kGold(answer);
  if (gold === null) {
    throw new RowValueError(
      `no gold answer: \`answer\` has no \`#### <answer>\` line (got ${describeValue(answer)}): a GSM8K answer ends with a line like \`#### 18\``,
    );
  }
  return task(question, { ...rest(row, "question"), answer, gold });
};

/**
 * The gold of a MATH `solution`: the content of its LAST complete box (`\boxed{…}`/`\fbox{…}` with nested braces
 * kept whole, `\boxed{\frac{1}{2}}` → `\frac{1}{2}`, BC-01; the brace-less `\boxed 5` → `5`, BC-03), read by the
 * reward code's scanner so the reference and the scoring side accept the same forms.
 * @returns the trimmed content, or `null` when there is no box, or the last box is empty or never closes (a
 *   truncated reference must be flagged, not replaced by an earlier box).
 */
export function lastBoxedContent(text: string): string | null {
  const content = extractLastBoxed(text)?.trim();
  return content ? content : null;
}

/** MATH: query `problem`; gold from `answer` when present, else the last balanced `\boxed{…}` of `solution`. */
const math: FieldMap = (row) => {
  const problem = requireQuery(row, "problem", "math");
  const answer = row["answer"];
  let gold: string | null = null;
  if (typeof answer === "string" && answer.trim() !== "") gold = answer.trim();
  else if (typeof answer === "number" && Number.isFinite(answer)) gold = String(answer);
  else if (typeof row["solution"] === "string") gold = lastBoxedContent(row["solution"]);
  if (gold === null) {
    throw new RowValueError("no gold answer: the row has no `answer` and its `solution` has no complete `\\boxed{…}`: add an `answer` field, or end the solution with a box");
  }
  return task(problem, { ...rest(row, "problem"), gold });
};

/** Countdown: `target` and `nums` as safe integers (BC-58); the prompt from {@link buildCountdownPrompt}. */
const countdown: FieldMap = (row) => {
  const target = toSafeInteger(row["target"], "target");
  const rawNums = row["nums"];
  if (!Array.isArray(rawNums) || rawNums.length === 0) {
    throw new RowValueError(`countdown rows need a non-empty array \`nums\` (got ${describeValue(rawNums)})`);
  }
  const nums = rawNums.map((n, i) => toSafeInteger(n, `nums[${i}]`));
  const solution = row["solution"];
  const metadata: CountdownTaskMetadata = { target, nums, ...(typeof solution === "string" ? { solution } : {}) };
  return task(buildCountdownPrompt({ target, nums }), { ...rest(row, "target", "nums", "solution"), ...metadata });
};

/**
 * Generic (the reference JSONL reader's columns): `main_query`, `init_messages` (list of message objects),
 * `env_type`, `metadata`. A row needs a non-empty `main_query` or a non-empty `init_messages`. Without a
 * `metadata` object, the other columns become the metadata.
 */
const generic: FieldMap = (row) => {
  const query = row["main_query"];
  const messages = row["init_messages"] ?? [];
  if (query !== undefined && typeof query !== "string") {
    throw new RowValueError(`\`main_query\` must be a string (got ${describeValue(query)})`);
  }
  if (!Array.isArray(messages) || messages.some((m) => m === null || typeof m !== "object" || Array.isArray(m))) {
    throw new RowValueError(`\`init_messages\` must be a list of message objects (got ${describeValue(messages)})`);
  }
  if ((query ?? "").trim() === "" && messages.length === 0) {
    throw new RowValueError("missing or empty query: generic rows need `main_query` or `init_messages`");
  }
  const meta = row["metadata"];
  if (meta !== undefined && (meta === null || typeof meta !== "object" || Array.isArray(meta))) {
    throw new RowValueError(`\`metadata\` must be an object (got ${describeValue(meta)})`);
  }
  const envType = row["env_type"];
  return {
    mainQuery: query ?? "",
    initMessages: toJsonSafe(messages, "init_messages") as Record<string, unknown>[],
    envType: typeof envType === "string" && envType !== "" ? envType : NO_ENV,
    metadata:
      meta === undefined
        ? rest(row, "main_query", "init_messages", "env_type")
        : (toJsonSafe(meta, "metadata") as Record<string, unknown>),
  };
};

/** The field map of each dataset kind. */
export const FIELD_MAPS: Readonly<Record<DatasetKind, FieldMap>> = { gsm8k, math, countdown, generic };

/** What the rows of each kind look like, for messages: `GSM8K (question/answer)`. */
export const DATASET_KIND_LABEL: Readonly<Record<DatasetKind, string>> = {
  gsm8k: "GSM8K (question/answer)",
  math: "MATH (problem/solution)",
  countdown: "Countdown (target/nums)",
  generic: "generic tasks (main_query/init_messages)",
};

/**
 * The dataset kind whose field map accepts the most of the first `sample` rows, or `null` when none accepts any —
 * for a hint when a file was read with the wrong kind. Uses the field maps themselves, so the guess never
 * disagrees with what loading with that kind would do. Ties go to the earlier kind of {@link DatasetKind}.
 */
export function guessDatasetKind(rows: readonly unknown[], sample = 20): DatasetKind | null {
  const objects = rows
    .filter((r): r is Record<string, unknown> => r !== null && typeof r === "object" && !Array.isArray(r))
    .slice(0, sample);
  let best: DatasetKind | null = null;
  let bestCount = 0;
  for (const kind of DatasetKind.options) {
    let count = 0;
    for (const row of objects) {
      try {
        FIELD_MAPS[kind](row);
        count++;
      } catch {
        // refused by this kind
      }
    }
    if (count > bestCount) [best, bestCount] = [kind, count];
  }
  return best;
}
