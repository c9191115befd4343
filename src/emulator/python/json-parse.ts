/**
 * @module emulator/python/json-parse — `json.loads` with CPython's exact error messages and positions
 * (`Expecting value: line 1 column 1 (char 0)`), and Python's extensions (`NaN`, `Infinity`, `-Infinity`).
 * The real server's texts embed these messages (proxy key errors, FastAPI `json_invalid` 422s).
 */

/** A Python `json.JSONDecodeError`: `msg`, `pos` (char index), and `message` = `msg: line L column C (char P)`. */
export class PyJsonDecodeError extends Error {
  constructor(
    readonly msg: string,
    readonly doc: string,
    readonly pos: number,
  ) {
    const lineno = doc.slice(0, pos).split("\n").length;
    const colno = pos - doc.lastIndexOf("\n", pos - 1);
    super(`${msg}: line ${lineno} column ${colno} (char ${pos})`);
    this.name = "JSONDecodeError";
  }
}

const WS = new Set([" ", "\t", "\n", "\r"]);
const ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?/y;

/** Thrown inside the scanner where CPython raises StopIteration (the caller turns it into "Expecting value"). */
class StopScan {
  constructor(readonly pos: number) {}
}

class Scanner {
  constructor(readonly s: string) {}

  skipWs(i: number): number {
    while (i < this.s.length && WS.has(this.s[i] as string)) i++;
    return i;
  }

  value(i: number): [unknown, number] {
    const s = this.s;
    const c = s[i];
    if (c === '"') return this.string(i + 1);
    if (c === "{") return this.object(i + 1);
    if (c === "[") return this.array(i + 1);
    if (s.startsWith("null", i)) return [null, i + 4];
    if (s.startsWith("true", i)) return [true, i + 4];
    if (s.startsWith("false", i)) return [false, i + 5];
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(s);
    if (m) return [Number(m[0]), i + m[0].length];
    if (s.startsWith("NaN", i)) return [NaN, i + 3];
    if (s.startsWith("Infinity", i)) return [Infinity, i + 8];
    if (s.startsWith("-Infinity", i)) return [-Infinity, i + 9];
    throw new StopScan(i);
  }

  valueOrExpecting(i: number): [unknown, number] {
    try {
      return this.value(i);
    } catch (e) {
      if (e instanceof StopScan) throw new PyJsonDecodeError("Expecting value", this.s, e.pos);
      throw e;
    }
  }

  string(end: number): [string, number] {
    const s = this.s;
    const begin = end - 1;
    let out = "";
    for (;;) {
      let j = end;
      while (j < s.length && s[j] !== '"' && s[j] !== "\\" && (s.charCodeAt(j) >= 0x20)) j++;
      if (j >= s.length) throw new PyJsonDecodeError("Unterminated string starting at", s, begin);
      out += s.slice(end, j);
      const t = s[j] as string;
      if (t === '"') return [out, j + 1];
      if (t !== "\\") throw new PyJsonDecodeError("Invalid control character at", s, j);
      const esc = s[j + 1];
      if (esc === undefined) throw new PyJsonDecodeError("Unterminated string starting at", s, begin);
      if (esc !== "u") {
        const ch = ESCAPES[esc];
        if (ch === undefined) throw new PyJsonDecodeError("Invalid \\escape", s, j);
        out += ch;
        end = j + 2;
        continue;
      }
      const hex = s.slice(j + 2, j + 6);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new PyJsonDecodeError("Invalid \\uXXXX escape", s, j + 1);
      out += String.fromCharCode(parseInt(hex, 16));
      end = j + 6;
    }
  }

  object(end: number): [Record<string, unknown>, number] {
    const s = this.s;
    const obj: Record<string, unknown> = {};
    let next = s[end] ?? "";
    if (next !== '"') {
      end = this.skipWs(end);
      next = s[end] ?? "";
      if (next === "}") return [obj, end + 1];
      if (next !== '"') throw new PyJsonDecodeError("Expecting property name enclosed in double quotes", s, end);
    }
    end += 1;
    for (;;) {
      const [key, afterKey] = this.string(end);
      end = afterKey;
      if (s[end] !== ":") {
        end = this.skipWs(end);
        if (s[end] !== ":") throw new PyJsonDecodeError("Expecting ':' delimiter", s, end);
      }
      end = this.skipWs(end + 1);
      const [value, afterValue] = this.valueOrExpecting(end);
      obj[key] = value;
      end = this.skipWs(afterValue);
      next = s[end] ?? "";
      end += 1;
      if (next === "}") return [obj, end];
      if (next !== ",") throw new PyJsonDecodeError("Expecting ',' delimiter", s, end - 1);
      end = this.skipWs(end);
      next = s[end] ?? "";
      end += 1;
      if (next !== '"') throw new PyJsonDecodeError("Expecting property name enclosed in double quotes", s, end - 1);
    }
  }

  array(end: number): [unknown[], number] {
    const s = this.s;
    const values: unknown[] = [];
    end = this.skipWs(end);
    if (s[end] === "]") return [values, end + 1];
    for (;;) {
      const [value, afterValue] = this.valueOrExpecting(end);
      values.push(value);
      end = this.skipWs(afterValue);
      const next = s[end] ?? "";
      end += 1;
      if (next === "]") return [values, end];
      if (next !== ",") throw new PyJsonDecodeError("Expecting ',' delimiter", s, end - 1);
      end = this.skipWs(end);
    }
  }
}

/**
 * Parses `text` exactly as CPython's `json.loads` would.
 * @throws PyJsonDecodeError with CPython's message and position.
 */
export function pyJsonLoads(text: string): unknown {
  const scanner = new Scanner(text);
  const [value, end] = scanner.valueOrExpecting(scanner.skipWs(0));
  const after = scanner.skipWs(end);
  if (after !== text.length) throw new PyJsonDecodeError("Extra data", text, after);
  return value;
}
