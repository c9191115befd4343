/**
 * @module tasks/jsonl — splitting JSONL text into numbered records: UTF-8 BOM stripped, `\n` and `\r\n` end a line
 * (U+2028/U+2029 do NOT: they are legal inside JSON strings), blank lines skipped but counted for line numbers.
 */

/** One non-blank line of a JSONL text. */
export interface JsonlRecord {
  /** 1-based physical line number in the text (what an editor shows); used in error reports */
  line: number;
  /** 0-based position among the NON-BLANK lines; the stable row index used in task ids */
  index: number;
  /** the line without its line ending */
  text: string;
}

/** A JSONL line that parsed to a JSON object. */
export interface JsonlRow extends Omit<JsonlRecord, "text"> {
  value: Record<string, unknown>;
}

/** A line or row refused at load, with its 1-based line number and why. */
export interface RejectedRow {
  line: number;
  reason: string;
}

const BOM = "\uFEFF";

/**
 * Splits JSONL text into non-blank records. Only `\n` ends a line (a `\r` right before it is dropped), so U+2028,
 * U+2029, U+0085 and a lone `\r` stay inside the line. A line of only whitespace is blank.
 */
export function splitJsonlRecords(text: string): JsonlRecord[] {
  const body = text.startsWith(BOM) ? text.slice(BOM.length) : text;
  const records: JsonlRecord[] = [];
  let start = 0;
  let line = 0;
  while (start <= body.length) {
    let end = body.indexOf("\n", start);
    if (end === -1) end = body.length;
    line += 1;
    const raw = body.slice(start, end);
    const content = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    // Only ASCII whitespace makes a line blank; a line of U+2028 is content (and not valid JSON).
    if (/[^ \t\r]/.test(content)) records.push({ line, index: records.length, text: content });
    start = end + 1;
  }
  return records;
}

/**
 * Parses every non-blank line as one JSON object. Invalid JSON and non-object values (arrays, numbers, null) are
 * rejected with their line number, not thrown, so one bad line does not lose the file (the index of a rejected
 * line is still consumed, so the ids of the other rows do not move when it is fixed).
 */
export function parseJsonlRows(text: string): { rows: JsonlRow[]; rejected: RejectedRow[] } {
  const rows: JsonlRow[] = [];
  const rejected: RejectedRow[] = [];
  for (const { line, index, text: lineText } of splitJsonlRecords(text)) {
    let value: unknown;
    try {
      value = JSON.parse(lineText);
    } catch (err) {
      rejected.push({ line, reason: `invalid JSON: ${(err as Error).message}` });
      continue;
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      const kind = value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;
      rejected.push({ line, reason: `a row must be a JSON object, got ${kind}` });
      continue;
    }
    rows.push({ line, index, value: value as Record<string, unknown> });
  }
  return { rows, rejected };
}
