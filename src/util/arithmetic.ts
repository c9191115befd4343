/**
 * @module util/arithmetic — a hand-written recursive-descent evaluator for `+ - * /` and parentheses, shared by
 * the countdown reward and the math agent's calculator tool. No `eval`, no `new Function`: code generation from
 * strings throws at request time in Workers (BC-19). Linear in the input; bounded length and nesting depth.
 */

/** Why an expression was refused. `operator_not_allowed` covers `**`, `^`, `%`, `//` (BC-19). */
export type ArithmeticErrorKind =
  | "empty"
  | "too_long"
  | "unexpected_character"
  | "operator_not_allowed"
  | "syntax"
  | "too_deep"
  | "number_too_large"
  | "division_by_zero"
  | "non_finite";

/**
 * Result of {@link evaluateArithmetic}: the value and the literals in source order, or a refusal. The value is a
 * JS number (IEEE double, like the Python references); it is always finite on success (no NaN/Infinity, BC-18).
 */
export type ArithmeticResult =
  | { ok: true; value: number; numbers: number[] }
  | { ok: false; error: ArithmeticErrorKind; message: string; index: number };

/** Grammar switches. Countdown uses the strict defaults; the calculator tool enables decimals and unary signs. */
export interface ArithmeticOptions {
  /** accept `1.5` and `.5` literals; default false (countdown numbers are integers) */
  allowDecimals?: boolean;
  /** accept unary `+`/`-` (`-3 + 5`); default false (countdown: every number must come from the list) */
  allowUnary?: boolean;
  /** longest accepted source, in characters; default 1000 */
  maxChars?: number;
  /** deepest parenthesis nesting; default 64 */
  maxDepth?: number;
}

/** Digits in one literal (integer and fraction part together); above this a double is no longer exact. */
const MAX_LITERAL_DIGITS = 15;

type Token = { kind: "num"; value: number; index: number } | { kind: "op"; op: string; index: number };

class Refusal extends Error {
  constructor(
    readonly kind: ArithmeticErrorKind,
    message: string,
    readonly index: number,
  ) {
    super(message);
  }
}

function tokenize(src: string, allowDecimals: boolean): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
    } else if ((c >= "0" && c <= "9") || (c === "." && allowDecimals)) {
      const start = i;
      while (i < src.length && src[i]! >= "0" && src[i]! <= "9") i++;
      if (src[i] === ".") {
        if (!allowDecimals) throw new Refusal("unexpected_character", `decimal point at ${i}: integers only`, i);
        i++;
        const fracStart = i;
        while (i < src.length && src[i]! >= "0" && src[i]! <= "9") i++;
        if (i === fracStart) throw new Refusal("syntax", `a decimal point at ${i - 1} must be followed by digits`, i);
      }
      const text = src.slice(start, i);
      if (text.replace(".", "").length > MAX_LITERAL_DIGITS) {
        throw new Refusal("number_too_large", `literal ${text.slice(0, 20)}… has more than 15 digits`, start);
      }
      tokens.push({ kind: "num", value: Number(text), index: start });
    } else if ((c === "*" || c === "/") && src[i + 1] === c) {
      throw new Refusal("operator_not_allowed", `operator ${c}${c} at ${i} is not allowed; use + - * / and ( )`, i);
    } else if (c === "+" || c === "-" || c === "*" || c === "/" || c === "(" || c === ")") {
      tokens.push({ kind: "op", op: c, index: i });
      i++;
    } else if (c === "^" || c === "%") {
      throw new Refusal("operator_not_allowed", `operator ${c} at ${i} is not allowed; use + - * / and ( )`, i);
    } else {
      throw new Refusal("unexpected_character", `unexpected character ${JSON.stringify(c)} at ${i}`, i);
    }
  }
  return tokens;
}

/** Recursive descent over the token list; evaluates as it parses (one pass). */
class Parser {
  private pos = 0;
  private depth = 0;
  private divisionByZeroAt = -1;
  readonly numbers: number[] = [];

  constructor(
    private readonly tokens: Token[],
    private readonly end: number,
    private readonly allowUnary: boolean,
    private readonly maxDepth: number,
  ) {}

  run(): number {
    const value = this.expr();
    const extra = this.tokens[this.pos];
    if (extra) throw new Refusal("syntax", `unexpected ${describe(extra)} at ${extra.index}`, extra.index);
    if (this.divisionByZeroAt >= 0) {
      throw new Refusal("division_by_zero", `division by zero at ${this.divisionByZeroAt}`, this.divisionByZeroAt);
    }
    return value;
  }

  private peekOp(): string | undefined {
    const t = this.tokens[this.pos];
    return t?.kind === "op" ? t.op : undefined;
  }

  private expr(): number {
    let value = this.term();
    for (let op = this.peekOp(); op === "+" || op === "-"; op = this.peekOp()) {
      this.pos++;
      const rhs = this.term();
      value = op === "+" ? value + rhs : value - rhs;
    }
    return value;
  }

  private term(): number {
    let value = this.factor();
    for (let op = this.peekOp(); op === "*" || op === "/"; op = this.peekOp()) {
      const at = this.tokens[this.pos]!.index;
      this.pos++;
      const rhs = this.factor();
      if (op === "*") value *= rhs;
      else if (rhs === 0) {
        if (this.divisionByZeroAt < 0) this.divisionByZeroAt = at;
        value = 0; // keep parsing so a later syntax error still wins; never let Infinity/NaN escape
      } else value /= rhs;
    }
    return value;
  }

  private factor(): number {
    const t = this.tokens[this.pos];
    if (!t) throw new Refusal("syntax", `expression ends early at ${this.end}; expected a number or (`, this.end);
    if (t.kind === "num") {
      this.pos++;
      this.numbers.push(t.value);
      return t.value;
    }
    if (t.op === "(") {
      if (++this.depth > this.maxDepth) throw new Refusal("too_deep", `more than ${this.maxDepth} nested (`, t.index);
      this.pos++;
      const value = this.expr();
      const close = this.tokens[this.pos];
      if (close?.kind !== "op" || close.op !== ")") {
        const at = close?.index ?? this.end;
        throw new Refusal("syntax", `missing ) for the ( at ${t.index}`, at);
      }
      this.pos++;
      this.depth--;
      return value;
    }
    if ((t.op === "-" || t.op === "+") && this.allowUnary) {
      this.pos++;
      const value = this.factor();
      return t.op === "-" ? -value : value;
    }
    throw new Refusal("syntax", `unexpected ${describe(t)} at ${t.index}; expected a number or (`, t.index);
  }
}

function describe(t: Token): string {
  return t.kind === "num" ? `number ${t.value}` : `"${t.op}"`;
}

/**
 * Evaluates an arithmetic expression over `+ - * /` and parentheses with the usual precedence (left-associative).
 * @param source the expression, e.g. `8/(3-8/3)`; at most `maxChars` characters
 * @returns `{ ok: true, value, numbers }` (value finite) or `{ ok: false, error, message, index }`; never throws
 *   for bad input. Division by zero is a refusal, not Infinity (BC-18); `**` is `operator_not_allowed` (BC-19).
 */
export function evaluateArithmetic(source: string, options: ArithmeticOptions = {}): ArithmeticResult {
  const maxChars = options.maxChars ?? 1000;
  if (source.length > maxChars) {
    return { ok: false, error: "too_long", message: `expression longer than ${maxChars} characters`, index: 0 };
  }
  if (source.trim() === "") return { ok: false, error: "empty", message: "empty expression", index: 0 };
  try {
    const tokens = tokenize(source, options.allowDecimals ?? false);
    const parser = new Parser(tokens, source.length, options.allowUnary ?? false, options.maxDepth ?? 64);
    const value = parser.run();
    if (!Number.isFinite(value)) {
      return { ok: false, error: "non_finite", message: "the result is too large to represent", index: 0 };
    }
    return { ok: true, value: Object.is(value, -0) ? 0 : value, numbers: parser.numbers };
  } catch (err) {
    if (err instanceof Refusal) return { ok: false, error: err.kind, message: err.message, index: err.index };
    throw err;
  }
}
