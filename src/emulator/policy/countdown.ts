/**
 * @module emulator/policy/countdown — Countdown arithmetic for the simulated policy: the reward code's evaluator,
 * a small solver that uses every number exactly once (TinyZero's rule), and wrong
 * equations built from the same numbers.
 */
import { evaluateArithmetic } from "../../rewards/index.ts";
import type { Rng } from "../rng.ts";

/**
 * Evaluates an arithmetic expression with `+ - * /`, parentheses, decimals and unary minus — the reward code's
 * evaluator (`evaluateArithmetic`, no `eval`), so the policy and the reward agree on what an equation is worth.
 * @returns the value, or null when the text is not such an expression or divides by zero.
 */
export function evaluateEquation(expr: string): number | null {
  const r = evaluateArithmetic(expr, { allowDecimals: true, allowUnary: true });
  return r.ok ? r.value : null;
}

interface Term {
  value: number;
  text: string;
}

const OPS: Array<[string, (a: number, b: number) => number | null]> = [
  ["+", (a, b) => a + b],
  ["-", (a, b) => a - b],
  ["*", (a, b) => a * b],
  ["/", (a, b) => (b === 0 ? null : a / b)],
];

function search(terms: Term[], target: number): string | null {
  if (terms.length === 1) return Math.abs((terms[0] as Term).value - target) < 1e-9 ? (terms[0] as Term).text : null;
  for (let x = 0; x < terms.length; x++) {
    for (let y = 0; y < terms.length; y++) {
      if (x === y) continue;
      const a = terms[x] as Term;
      const b = terms[y] as Term;
      const rest = terms.filter((_, k) => k !== x && k !== y);
      for (const [op, fn] of OPS) {
        if ((op === "+" || op === "*") && x > y) continue; // commutative: try one order
        const v = fn(a.value, b.value);
        if (v === null) continue;
        const found = search([...rest, { value: v, text: `(${a.text} ${op} ${b.text})` }], target);
        if (found) return found;
      }
    }
  }
  return null;
}

/**
 * Finds an equation that uses every number exactly once and equals `target`.
 * @returns e.g. `(25 - 5) * 4` (outer parentheses stripped), or null when none exists or there are more than
 * `maxNumbers` numbers (the search is exponential).
 */
export function solveCountdown(nums: readonly number[], target: number, maxNumbers = 5): string | null {
  if (nums.length === 0 || nums.length > maxNumbers) return null;
  const found = search(nums.map((n) => ({ value: n, text: String(n) })), target);
  return found?.startsWith("(") && found.endsWith(")") ? found.slice(1, -1) : found;
}

/** A well-formed equation over all `nums` whose value is not `target` (a "wrong answer" of the policy). */
export function wrongEquation(nums: readonly number[], target: number, rng: Rng): string {
  for (let attempt = 0; attempt < 20; attempt++) {
    const order = [...nums].sort(() => rng.next() - 0.5);
    let text = String(order[0] ?? 0);
    for (const n of order.slice(1)) text += ` ${rng.pick(["+", "-", "*"])} ${n}`;
    const v = evaluateEquation(text);
    if (v !== null && Math.abs(v - target) > 1e-9) return text;
  }
  return `${nums.join(" + ")} + 1`;
}

/** All integers written in `text` (for matching Countdown rows to prompts). */
export function integersIn(text: string): number[] {
  return (text.match(/-?\d+/g) ?? []).map(Number);
}
