/**
 * @module edge/api/spec-bounds — the counts, sizes and characters of a `POST /runs` body, checked on the parsed JSON
 * before anything else looks at it (before the schema, the job's YAML, the quota, any Durable Object): one iterative
 * walk, linear in the body, that never descends into a list or object already over its cap. Every cap comes from the
 * one table (edge/ground/caps.ts); a refusal names the field, the value's size, the cap with its var, and the way
 * around it (`too_large`, 413). Every string and key must be well-formed Unicode without control characters
 * (`invalid`, 400): free text (task rows, `job.baseYaml`, secret values) may hold tab, line feed and carriage return.
 */
import { CAPS, capText, type CapName, type Caps } from "../ground/caps.ts";
import { invalid, type Issue } from "../ground/errors.ts";

/** The most issues one walk reports (the rest of a hostile body is not walked). */
const MAX_ISSUES = 20;

/** Unicode "Cc" characters (C0, DEL, C1); free text may keep tab, LF and CR. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
/** A high surrogate without its low half, or a low one without its high half. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const encoder = new TextEncoder();
const utf8Bytes = (s: string) => encoder.encode(s).byteLength;

/** What is wrong with one string's characters (null: nothing): a lone surrogate, or a control character. */
export function characterProblem(text: string, freeText: boolean): string | null {
  const lone = LONE_SURROGATE.exec(text);
  if (lone) return `is not valid Unicode (a lone surrogate U+${lone[0].charCodeAt(0).toString(16).toUpperCase()} at position ${lone.index})`;
  const control = (freeText ? CONTROL_IN_TEXT : CONTROL).exec(text);
  if (control) {
    const code = control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0");
    return `holds a control character (U+${code} at position ${control.index})${freeText ? "; only tab, line feed and carriage return are allowed" : ""}`;
  }
  return null;
}

type Path = readonly (string | number)[];

/** A path as a refusal shows it: each key at most 64 characters, control characters escaped (a key is never echoed whole). */
function dotted(path: Path): string {
  if (!path.length) return "(body)";
  return path
    .map((k) => {
      const text = typeof k === "number" ? String(k) : k.length > 64 ? `${k.slice(0, 64)}…` : k;
      return text.replace(/[\u0000-\u001f\u007f-\u009f\ud800-\udfff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
    })
    .join(".");
}

/** Where a node sits, as far as its bounds go. */
interface Zone {
  /** the cap on a list's items or an object's keys at this node (null: the generic cap; "row": none, the row's bytes bound it) */
  count: CapName | "row" | null;
  /** strings here are free text (tab, LF, CR allowed) */
  freeText: boolean;
  /** the cap on a string here (null: none beyond its container's) */
  chars: CapName | null;
  /** bytes, not characters (`secretBytes`, `yamlBytes`) */
  bytes: boolean;
}

function zoneOf(path: Path): Zone {
  const [a, b, c, d] = path;
  const zone = (count: CapName | "row" | null, chars: CapName | null, freeText = false, bytes = false): Zone => ({ count, chars, freeText, bytes });
  if (path.length === 1 && a === "swarms") return zone("swarms", null);
  if (path.length === 1 && a === "datasets") return zone("datasets", null);
  if (path.length === 1 && a === "secrets") return zone("secrets", null);
  if (path.length === 1 && a === "job") return zone("jobOptions", null);
  if (path.length === 1 && a === "function") return zone(null, "nameChars");
  if (path.length === 2 && a === "secrets") return zone(null, "secretBytes", true, true);
  if (path.length === 2 && a === "job" && b === "baseYaml") return zone(null, "yamlBytes", true, true);
  if (path.length === 3 && a === "swarms" && c === "headers") return zone("gatewayHeaders", null);
  if (path.length === 3 && (a === "swarms" || a === "datasets") && (c === "name" || c === "split")) return zone(null, "nameChars");
  if (path.length === 3 && a === "datasets" && c === "tasks") return zone("inlineRows", null);
  // an inline task row is bounded as a whole (rowBytes, checked at the row); its strings are free text
  if (path.length >= 4 && a === "datasets" && c === "tasks" && typeof d === "number") return zone(path.length === 4 ? "objectKeys" : "row", null, true);
  return zone(null, "stringChars");
}

/**
 * The bounds of a parsed `POST /runs` body: counts (swarms, datasets, secrets, gateway headers, job options, inline
 * rows over all datasets, any list or object), sizes (names, strings, URLs, secret values, the job's YAML, each inline
 * row), and characters (valid Unicode, no control characters). Runs before the schema: a body that passes is small
 * enough for every later step. At most {@link MAX_ISSUES} issues.
 * @param caps the caps in force (edge/ground/caps `capsFrom`)
 * @returns the issues (`too_large` for sizes and counts, `invalid` for characters), empty when the body is within bounds
 */
export function specBoundsIssues(body: unknown, caps: Caps): Issue[] {
  const issues: Issue[] = [];
  const over = (path: Path, what: string, cap: CapName) =>
    issues.push({ code: "too_large", path: dotted(path), message: `${dotted(path)}: ${what} is over ${capText(cap, caps)}; ${CAPS[cap].around}` });
  let inlineRows = 0;
  const stack: Array<{ value: unknown; path: Path }> = [{ value: body, path: [] }];
  while (stack.length && issues.length < MAX_ISSUES) {
    const { value, path } = stack.pop()!;
    const zone = zoneOf(path);
    if (typeof value === "string") {
      checkString(value, path, zone, caps, issues, over);
      continue;
    }
    if (value === null || typeof value !== "object") continue;
    if (isInlineRow(path)) {
      const bytes = utf8Bytes(JSON.stringify(value));
      if (bytes > caps.rowBytes) {
        over(path, `a row of ${bytes} bytes`, "rowBytes");
        continue;
      }
    }
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
    const countCap = zone.count ?? (Array.isArray(value) ? "listItems" : "objectKeys");
    if (countCap === "row") {
      // inside an inline row: bounded by the row's bytes
    } else if (countCap === "inlineRows") {
      inlineRows += entries.length;
      if (inlineRows > caps.inlineRows) {
        over(path, `${inlineRows} inline rows (all datasets)`, "inlineRows");
        continue;
      }
    } else if (entries.length > caps[countCap]) {
      over(path, `${entries.length} ${Array.isArray(value) ? "entries" : "keys"}`, countCap);
      continue;
    }
    for (const [key, child] of entries) {
      if (typeof key === "string") {
        const problem = keyProblem(key, path, caps);
        if (problem) {
          issues.push(problem);
          continue;
        }
      }
      stack.push({ value: child, path: [...path, key] });
    }
  }
  return issues.slice(0, MAX_ISSUES);
}

function isInlineRow(path: Path): boolean {
  return path.length === 4 && path[0] === "datasets" && path[2] === "tasks" && typeof path[3] === "number";
}

function checkString(value: string, path: Path, zone: Zone, caps: Caps, issues: Issue[], over: (path: Path, what: string, cap: CapName) => void): void {
  if (zone.chars !== null) {
    const size = zone.bytes ? utf8Bytes(value) : value.length;
    if (size > caps[zone.chars]) return void over(path, `a string of ${size} ${zone.bytes ? "bytes" : "characters"}`, zone.chars);
  }
  const problem = characterProblem(value, zone.freeText);
  if (problem) issues.push(invalid(dotted(path), `${dotted(path)} ${problem}; remove it`));
}

/** A key's problem: too long, a secret name that is not `[A-Za-z_][A-Za-z0-9_]*`, or bad characters. */
function keyProblem(key: string, parent: Path, caps: Caps): Issue | null {
  const at = dotted([...parent, key]);
  const isSecretName = parent.length === 1 && parent[0] === "secrets";
  const limit = isSecretName ? caps.nameChars : caps.keyChars;
  if (key.length > limit) return { code: "too_large", path: at, message: `a key of ${key.length} characters is over ${capText(isSecretName ? "nameChars" : "keyChars", caps)}; use a shorter name` };
  if (isSecretName && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
    return invalid(at, `secret names use letters, digits and _ only, starting with a letter or _ (what {secret:NAME} can name), e.g. GATEWAY_TOKEN`);
  }
  const problem = characterProblem(key, false);
  return problem ? invalid(at, `the key ${problem}; rename it`) : null;
}
