/**
 * @module util/describe-value — one short, honest rendering of a received value for user-facing messages
 * ("reward must be a finite number, got NaN"). No imports.
 */

/**
 * A short description of a value: its JSON when small (strings keep their quotes, so `"1"` reads as a string),
 * `NaN` / `Infinity` / `-Infinity` as such (JSON would print `null`), `12n` for a BigInt, else its kind and size.
 */
export function describeValue(value: unknown): string {
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "number") return String(value);
  if (value === undefined) return "undefined";
  if (typeof value === "function" || typeof value === "symbol") return `a ${typeof value}`;
  const json = JSON.stringify(value);
  return json.length <= 60 ? json : `${Array.isArray(value) ? "an array" : `a ${typeof value}`} (${json.length} chars)`;
}
