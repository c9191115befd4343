/**
 * @module tasks/values — making row values safe for JSON and arithmetic at read time: BigInt (Parquet INT64,
 * BC-58) becomes Number only when it is a safe integer; anything that cannot round-trip through JSON is refused.
 */

import { describeValue } from "../util/describe-value.ts";

export { describeValue };

/** A row value that cannot be used; the loader turns it into a rejected row with this message. */
export class RowValueError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RowValueError";
  }
}

const DECIMAL_INTEGER = /^[+-]?\d+$/;

/**
 * An integer as a Number: a safe-integer number, a BigInt within ±(2^53 − 1), or a decimal integer string
 * (`"24"`; Parquet-to-JSON exports often stringify INT64).
 * @param what names the field in the error, e.g. `nums[2]`.
 * @throws RowValueError for fractions, unsafe integers (precision would be lost), NaN/Infinity or other types.
 */
export function toSafeInteger(value: unknown, what: string): number {
  let big: bigint | undefined;
  if (typeof value === "number") {
    if (Number.isSafeInteger(value)) return value === 0 ? 0 : value; // folds -0 into 0
    const why = Number.isInteger(value) ? "is not a safe integer (beyond ±2^53-1)" : "is not an integer";
    throw new RowValueError(`${what} ${why} (got ${value})`);
  }
  if (typeof value === "bigint") big = value;
  else if (typeof value === "string" && DECIMAL_INTEGER.test(value.trim())) big = BigInt(value.trim());
  if (big === undefined) {
    throw new RowValueError(`${what} must be an integer (got ${describeValue(value)})`);
  }
  const asNumber = Number(big);
  if (!Number.isSafeInteger(asNumber)) {
    throw new RowValueError(`${what} is not a safe integer (beyond ±2^53-1, got ${big})`);
  }
  return asNumber;
}

/**
 * A deep copy of `value` that survives `JSON.stringify` unchanged: BigInts become Numbers (if safe), and values
 * JSON cannot carry (NaN, ±Infinity, undefined, functions, symbols) are refused rather than silently turned into
 * `null` or dropped at `end_episode` time (BC-22, BC-58).
 * @param path names the value in the error, e.g. `metadata.answer`.
 * @throws RowValueError naming the path.
 */
export function toJsonSafe(value: unknown, path: string): unknown {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new RowValueError(`${path} is ${value}, which JSON cannot carry`);
    return value;
  }
  if (typeof value === "bigint") return toSafeInteger(value, path);
  if (Array.isArray(value)) return value.map((v, i) => toJsonSafe(v, `${path}[${i}]`));
  if (typeof value === "object" && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = toJsonSafe(v, `${path}.${k}`);
    return out;
  }
  if (value instanceof Date) return value.toISOString();
  throw new RowValueError(`${path} is ${describeValue(value)}, which JSON cannot carry`);
}

