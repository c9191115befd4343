/**
 * @module rewards/rational — exact numeric reading of a normalised answer: a strict decimal grammar (BC-05), simple
 * fractions and small integer powers, as BigInt rationals. No `Number()`/`parseFloat` coercion, no rounding (BC-07).
 */

/** An exact rational `num/den` with `den > 0` (not necessarily reduced). */
export interface Rational {
  num: bigint;
  den: bigint;
}

/**
 * The strict decimal grammar (BC-05): optional sign, digits with either no separators or correct 3-digit comma
 * groups, optional fraction; or a bare fraction `.5`. Refuses `""`, `1,00`, `0x1A`, `1e3`, `18.`, `Infinity`.
 */
export const STRICT_DECIMAL = /^[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)$/;

/** Largest exponent {@link parseNumericAnswer} evaluates in `a^{n}`; larger powers are left as text. */
export const MAX_POWER_EXPONENT = 64;

/** Largest power of ten (either sign) {@link parseNumericAnswer} reads in scientific notation (`1.5 \times 10^{n}`). */
export const MAX_SCIENTIFIC_EXPONENT = 400;

/** Longest number (in characters) read exactly; longer strings are not numbers for scoring purposes. */
const MAX_NUMBER_CHARS = 400;

/** Reads a strict decimal ({@link STRICT_DECIMAL}) exactly, or `null`: `"1,000"` → 1000/1, `"-3.0"` → -30/10. */
export function parseStrictDecimal(text: string): Rational | null {
  if (text.length > MAX_NUMBER_CHARS || !STRICT_DECIMAL.test(text)) return null;
  const negative = text.startsWith("-");
  const body = text.replace(/^[+-]/, "").replace(/,/g, "");
  const dot = body.indexOf(".");
  const intPart = dot < 0 ? body : body.slice(0, dot);
  const fracPart = dot < 0 ? "" : body.slice(dot + 1);
  const magnitude = BigInt((intPart || "0") + fracPart);
  return { num: negative ? -magnitude : magnitude, den: 10n ** BigInt(fracPart.length) };
}

function signed(sign: string | undefined, r: Rational): Rational {
  return sign === "-" ? { num: -r.num, den: r.den } : r;
}

function divide(a: Rational, b: Rational): Rational | null {
  if (b.num === 0n) return null;
  const num = a.num * b.den;
  const den = a.den * b.num;
  return den < 0n ? { num: -num, den: -den } : { num, den };
}

const FRAC = /^([+-]?)\\frac\{([^{}]+)\}\{([^{}]+)\}$/;
const SLASH = /^([+-]?)([^/]+)\/([^/]+)$/;
const POWER = /^([+-]?)([^^]+)\^(?:\{(\d+)\}|(\d))$/;
/**
 * `a \times 10^{n}`, `a\cdot 10^n`, `a × {10}^{n}`, `a x 10^n`, `a*10^n`, and a bare `10^{-n}`; `n` may be signed.
 * After `10^` an unbraced exponent is read whole (`10^12`, `10^-3`: what plain-text answers mean; TeX's `10^{1}2`
 * is nobody's answer).
 */
const SCIENTIFIC = /^(?:([^\s\\×·*x]+)\s*(?:\\times|\\cdot|×|·|\*|x)\s*)?(?:10|\{10\})\^(?:\{\s*([+-]?\d+)\s*\}|([+-]?\d+))$/;
/** `1.5e3`, `2E-4`, `1.5E+03`: a strict decimal mantissa, `e`/`E`, an integer exponent. */
const E_NOTATION = /^([^eE]+)[eE]([+-]?\d+)$/;

/**
 * Reads a normalised answer as an exact number, or `null` when it is not one. Accepted forms (BC-01, BC-05):
 * a strict decimal; `\frac{a}{b}` and `a/b` with strict-decimal parts (b ≠ 0); `a^{n}` / `a^n` with a strict
 * decimal base and an integer exponent 0…64; scientific notation with a strict-decimal mantissa and an integer
 * power of ten up to ±400: `a \times 10^{n}`, `a \cdot 10^n`, `a × 10^n`, `10^{-3}`, `1.5e3`, `2E-4`. Anything else
 * (hex, `\sqrt{2}`, `x+1`, `3 \times 10`) is `null`.
 */
export function parseNumericAnswer(text: string): Rational | null {
  if (text.length > MAX_NUMBER_CHARS) return null;
  const plain = parseStrictDecimal(text);
  if (plain) return plain;
  const frac = FRAC.exec(text) ?? SLASH.exec(text);
  if (frac) {
    const a = parseStrictDecimal(frac[2]!);
    const b = parseStrictDecimal(frac[3]!);
    const q = a && b ? divide(a, b) : null;
    return q && signed(frac[1], q);
  }
  const times = SCIENTIFIC.exec(text);
  if (times) return scientific(times[1] === undefined ? "1" : times[1], times[2] ?? times[3]!);
  const e = E_NOTATION.exec(text);
  if (e) return scientific(e[1]!, e[2]!);
  const power = POWER.exec(text);
  if (power) {
    const base = parseStrictDecimal(power[2]!);
    const exponent = Number(power[3] ?? power[4]);
    if (!base || exponent > MAX_POWER_EXPONENT) return null;
    const n = BigInt(exponent);
    return signed(power[1], { num: base.num ** n, den: base.den ** n });
  }
  return null;
}

/** `mantissa × 10^exponent` exactly, or `null` when the mantissa is not a strict decimal or the exponent is too large. */
function scientific(mantissa: string, exponent: string): Rational | null {
  const r = parseStrictDecimal(mantissa);
  const n = Number(exponent);
  if (!r || !(Math.abs(n) <= MAX_SCIENTIFIC_EXPONENT)) return null;
  const scale = 10n ** BigInt(Math.abs(n));
  return n >= 0 ? { num: r.num * scale, den: r.den } : { num: r.num, den: r.den * scale };
}

/** Exact equality of two rationals (cross-multiplication; no rounding, BC-07). */
export function rationalEquals(a: Rational, b: Rational): boolean {
  return a.num * b.den === b.num * a.den;
}

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

/**
 * Canonical text of a rational: a plain decimal when it terminates (`29`, `-3`, `0.5`, `70000`), else `n/d`
 * (`1/3`). Used for metadata and gold display, never for comparison.
 */
export function formatRational(r: Rational): string {
  const g = gcd(r.num, r.den) || 1n;
  const num = r.num / g;
  let den = r.den / g;
  let twos = 0;
  let fives = 0;
  while (den % 2n === 0n) (den /= 2n), twos++;
  while (den % 5n === 0n) (den /= 5n), fives++;
  if (den !== 1n) return `${num}/${r.den / g}`;
  const places = Math.max(twos, fives);
  const scaled = num * 10n ** BigInt(places) / (r.den / g);
  if (places === 0) return scaled.toString();
  const negative = scaled < 0n;
  const digits = (negative ? -scaled : scaled).toString().padStart(places + 1, "0");
  return `${negative ? "-" : ""}${digits.slice(0, -places)}.${digits.slice(-places)}`;
}
