/**
 * @module emulator/python/codecs — CPython's `base64.b64decode` (non-strict `binascii.a2b_base64`) and
 * `bytes.decode("utf-8")` with their exact error texts, plus Python type names and truthiness. The proxy's
 * "Invalid authorization header: <exception text>" answers embed these texts (spec §9.2, transcript).
 */

/** A Python exception, carrying `str(e)` as its message. */
export class PyError extends Error {
  constructor(
    readonly pyType: string,
    message: string,
  ) {
    super(message);
    this.name = pyType;
  }
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_INDEX = new Map([...B64].map((c, i) => [c, i]));

/**
 * `base64.b64decode(text)` (validate=False): characters outside the alphabet are skipped, decoding stops at a
 * complete pad sequence.
 * @throws PyError `ValueError: string argument should contain only ASCII characters`, or `binascii.Error`:
 * `Incorrect padding` / `Invalid base64-encoded string: number of data characters (N) cannot be 1 more than a multiple of 4`.
 */
export function pyB64Decode(text: string): Uint8Array {
  if (/[^\x00-\x7f]/.test(text)) throw new PyError("ValueError", "string argument should contain only ASCII characters");
  const out: number[] = [];
  let quadPos = 0;
  let leftChar = 0;
  let pads = 0;
  for (const ch of text) {
    if (ch === "=") {
      if (quadPos >= 2 && quadPos + ++pads >= 4) return Uint8Array.from(out);
      continue;
    }
    const v = B64_INDEX.get(ch);
    if (v === undefined) continue;
    pads = 0;
    if (quadPos === 0) {
      quadPos = 1;
      leftChar = v;
    } else if (quadPos === 1) {
      quadPos = 2;
      out.push(((leftChar << 2) | (v >> 4)) & 0xff);
      leftChar = v & 0x0f;
    } else if (quadPos === 2) {
      quadPos = 3;
      out.push(((leftChar << 4) | (v >> 2)) & 0xff);
      leftChar = v & 0x03;
    } else {
      quadPos = 0;
      out.push(((leftChar << 6) | v) & 0xff);
      leftChar = 0;
    }
  }
  if (quadPos === 1) {
    const n = Math.floor(out.length / 3) * 4 + 1;
    throw new PyError(
      "binascii.Error",
      `Invalid base64-encoded string: number of data characters (${n}) cannot be 1 more than a multiple of 4`,
    );
  }
  if (quadPos !== 0) throw new PyError("binascii.Error", "Incorrect padding");
  return Uint8Array.from(out);
}

/** Valid range of the first continuation byte after a lead byte (RFC 3629, as CPython checks it). */
function firstContinuationRange(lead: number): [number, number] {
  if (lead === 0xe0) return [0xa0, 0xbf];
  if (lead === 0xed) return [0x80, 0x9f];
  if (lead === 0xf0) return [0x90, 0xbf];
  if (lead === 0xf4) return [0x80, 0x8f];
  return [0x80, 0xbf];
}

function utf8Error(bytes: Uint8Array, start: number, end: number, reason: string): PyError {
  const where =
    end - start <= 1
      ? `byte 0x${(bytes[start] as number).toString(16).padStart(2, "0")} in position ${start}`
      : `bytes in position ${start}-${end - 1}`;
  return new PyError("UnicodeDecodeError", `'utf-8' codec can't decode ${where}: ${reason}`);
}

/**
 * `bytes.decode("utf-8")` (strict).
 * @throws PyError `UnicodeDecodeError` with CPython's text, e.g. `'utf-8' codec can't decode byte 0xb7 in position 1: invalid start byte`.
 */
export function pyUtf8Decode(bytes: Uint8Array): string {
  for (let i = 0; i < bytes.length; ) {
    const lead = bytes[i] as number;
    const need = lead < 0x80 ? 0 : lead >= 0xc2 && lead <= 0xdf ? 1 : lead >= 0xe0 && lead <= 0xef ? 2 : lead >= 0xf0 && lead <= 0xf4 ? 3 : -1;
    if (need < 0) throw utf8Error(bytes, i, i + 1, "invalid start byte");
    for (let j = 1; j <= need; j++) {
      if (i + j >= bytes.length) throw utf8Error(bytes, i, bytes.length, "unexpected end of data");
      const [lo, hi] = j === 1 ? firstContinuationRange(lead) : [0x80, 0xbf];
      const b = bytes[i + j] as number;
      if (b < lo || b > hi) throw utf8Error(bytes, i, i + j, "invalid continuation byte");
    }
    i += need + 1;
  }
  return new TextDecoder("utf-8").decode(bytes);
}

/** Python's `type(value).__name__` for a JSON value. */
export function pyTypeName(value: unknown): string {
  if (value === null || value === undefined) return "NoneType";
  if (typeof value === "string") return "str";
  if (typeof value === "boolean") return "bool";
  if (typeof value === "number") return Number.isInteger(value) ? "int" : "float";
  if (Array.isArray(value)) return "list";
  return "dict";
}

/** Python truthiness of a JSON value (`""`, 0, None, False, [], {} are falsy). */
export function pyTruthy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  return true; // NaN is truthy in Python too
}
