/**
 * @module emulator/python/json-dumps — JSON text as the real server writes it: FastAPI's compact
 * `JSONResponse` (`","`/`":"`, UTF-8 kept) for bodies, and Python's default `json.dumps` (`", "`/`": "`,
 * `\uXXXX` escapes) for the SSE chunks. JavaScript has one number type, so fields that are Python floats are
 * named (`floatKeys`) and integral values under them are written `60.0`, as pydantic would.
 */
import { pythonFloatRepr } from "../../job/index.ts";
import { pythonJsonString } from "../../protocol/index.ts";

/**
 * A float as Python's `json.dumps` writes it: `repr(float)` (shortest round-trip digits, exponent form below 1e-4
 * and from 1e16: `1e-05`, `1e+16`; the job module's `pythonFloatRepr`), with `-0.0` kept and json's `NaN`,
 * `Infinity`, `-Infinity` for the non-finite values.
 */
export function pyFloatRepr(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (!Number.isFinite(n)) return n > 0 ? "Infinity" : "-Infinity";
  return Object.is(n, -0) ? "-0.0" : pythonFloatRepr(n);
}

function pyIntOrFloat(n: number, asFloat: boolean): string {
  if (asFloat || !Number.isInteger(n) || Math.abs(n) >= 1e16) return pyFloatRepr(n);
  return String(n);
}

interface DumpStyle {
  itemSep: string;
  keySep: string;
  str: (s: string) => string;
  floatKeys: ReadonlySet<string>;
}

function dump(value: unknown, style: DumpStyle, asFloat: boolean): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") return pyIntOrFloat(value, asFloat);
  if (typeof value === "string") return style.str(value);
  if (Array.isArray(value)) return "[" + value.map((v) => dump(v, style, asFloat)).join(style.itemSep) + "]";
  if (typeof value === "object") {
    const parts = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => style.str(k) + style.keySep + dump(v, style, asFloat || style.floatKeys.has(k)));
    return "{" + parts.join(style.itemSep) + "}";
  }
  return "null";
}

/**
 * Python's `json.dumps(value)` (used for SSE `data:` lines; `ensureAscii: false` as vLLM writes tool-call
 * arguments). Defaults: `ensure_ascii=True`, no float keys.
 */
export function pyJsonDumps(value: unknown, options: { floatKeys?: ReadonlySet<string>; ensureAscii?: boolean } = {}): string {
  const str = options.ensureAscii === false ? (s: string) => JSON.stringify(s) : pythonJsonString;
  return dump(value, { itemSep: ", ", keySep: ": ", str, floatKeys: options.floatKeys ?? new Set() }, false);
}

/** FastAPI `JSONResponse` rendering (compact, non-ASCII kept). */
export function fastApiJsonText(value: unknown, floatKeys: ReadonlySet<string> = new Set()): string {
  return dump(value, { itemSep: ",", keySep: ":", str: (s) => JSON.stringify(s), floatKeys }, false);
}

/**
 * Field names whose values are Python floats in the server's models (EpisodeStatus, ActiveSwarmClient,
 * CurrentBatchRolloutPoolInformation, VerboseLogEntry): written as `-1.0`, `60.0`, `[0.0, 1.0]`.
 */
export const SERVER_FLOAT_KEYS: ReadonlySet<string> = new Set([
  "discard_episode_timeout",
  "latest_activity_timestamp",
  "last_activity_at",
  "booting_start_time",
  "timestamp",
  "completed_tasks_rewards",
]);
