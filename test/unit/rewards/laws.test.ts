/**
 * @module test/unit/rewards/laws — the reward rules that are laws rather than examples, checked on random inputs
 * (fast-check, seeded: a failure prints its seed and shrunk counterexample) through the public API of src/rewards
 * only, so they hold whatever a grader's internals become:
 *  - a math answer that differs from the gold as a number is never rewarded, whatever reader finds it and whatever
 *    the reasoning before it says (the gold itself included);
 *  - the same number in another accepted spelling is rewarded (so the first law is not met by rewarding nothing);
 *  - a Countdown equation is rewarded only when it uses exactly the given numbers and reaches the target;
 *  - of a `####` line and a "Final Answer" line, the later one is the answer.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { scoreCountdown, scoreMathAnswer, type AnswerReader } from "../../../src/rewards/index.ts";

const RUNS = { numRuns: 300, seed: 24 } as const;
const ALL_READERS: AnswerReader[] = ["boxed", "hash", "final-answer", "final-number"];

/** An exact decimal `int / 10^scale`. */
interface Decimal {
  int: bigint;
  scale: number;
}

const decimal = fc.record({ int: fc.bigInt({ min: -(10n ** 12n), max: 10n ** 12n }), scale: fc.integer({ min: 0, max: 3 }) });

/** `d` written out: plain (`-1234.5`) or with 3-digit comma groups (`-1,234.5`), optionally padded with trailing zeros. */
function spell(d: Decimal, style: { commas: boolean; pad: number }): string {
  const negative = d.int < 0n;
  const digits = (negative ? -d.int : d.int).toString().padStart(d.scale + 1, "0");
  let whole = digits.slice(0, digits.length - d.scale);
  const frac = digits.slice(digits.length - d.scale) + "0".repeat(d.scale > 0 || style.pad > 0 ? style.pad : 0);
  if (style.commas) whole = whole.replace(/\B(?=(\d{3})+$)/g, ",");
  return `${negative ? "-" : ""}${whole}${frac ? `.${frac}` : ""}`;
}

const style = fc.record({ commas: fc.boolean(), pad: fc.integer({ min: 0, max: 2 }) });

/** `a + b` exactly (common scale). */
function add(a: Decimal, b: Decimal): Decimal {
  const scale = Math.max(a.scale, b.scale);
  return { int: a.int * 10n ** BigInt(scale - a.scale) + b.int * 10n ** BigInt(scale - b.scale), scale };
}

/** How the final message states its answer. */
type Form = "boxed" | "hash" | "final-answer" | "prose";
const form = fc.constantFrom<Form>("boxed", "hash", "final-answer", "prose");

function statement(f: Form, answer: string): string {
  if (f === "boxed") return `So the result is \\boxed{${answer}}.`;
  if (f === "hash") return `#### ${answer}`;
  if (f === "final-answer") return `**Final Answer:** ${answer}`;
  return `The answer is ${answer}.`;
}

/** Reasoning before the answer; it may mention the gold (a model that considered it and moved on). */
const REASONINGS: ((gold: string) => string)[] = [
  () => "",
  () => "Let me think step by step.\n",
  (gold) => `First I guessed ${gold}, but that was a slip.\n`,
  (gold) => `Check: is it ${gold}? No.\n`,
  (gold) => `${gold} appears in the question.\n`,
];
const reasoning = fc.integer({ min: 0, max: REASONINGS.length - 1 });

describe("a math answer that differs from the gold is never rewarded", () => {
  it("for any gold and any different number, stated in any form after any reasoning, with every reader on or the defaults", () => {
    const nonZero = decimal.filter((d) => d.int !== 0n);
    fc.assert(
      fc.property(decimal, nonZero, style, style, form, reasoning, fc.boolean(), (gold, delta, goldStyle, answerStyle, f, r, allReaders) => {
        const goldText = spell(gold, goldStyle);
        const message = REASONINGS[r]!(goldText) + statement(f, spell(add(gold, delta), answerStyle));
        const result = scoreMathAnswer(message, goldText, allReaders ? { readers: ALL_READERS } : {});
        expect(result.reward, `${JSON.stringify(message)} vs gold ${goldText}: ${result.reason}`).toBe(0);
        expect(result.isSuccess).toBe(false);
      }),
      RUNS,
    );
  });

  it("…while the same number in another accepted spelling (commas, trailing zeros) is rewarded", () => {
    fc.assert(
      fc.property(decimal, style, style, fc.constantFrom<Form>("boxed", "hash", "final-answer"), (gold, goldStyle, answerStyle, f) => {
        const result = scoreMathAnswer(`Working it out.\n${statement(f, spell(gold, answerStyle))}`, spell(gold, goldStyle), { readers: ALL_READERS });
        expect(result).toMatchObject({ reward: 1, reason: "correct", source: f });
      }),
      RUNS,
    );
  });
});

describe("of a #### line and a Final Answer line, the later one is the answer", () => {
  // A model that writes both corrected itself: the answer it wrote last is the one it gives. Which reader is listed
  // first in the options does not matter.
  it("whichever comes last wins, in both orders and whichever reader the options list first", () => {
    const orders: AnswerReader[][] = [["hash", "final-answer"], ["final-answer", "hash"]];
    for (const readers of orders) {
      expect(scoreMathAnswer("#### 18\nOn reflection:\nFinal Answer: 19", "19", { readers })).toMatchObject({ reward: 1, source: "final-answer" });
      expect(scoreMathAnswer("#### 18\nOn reflection:\nFinal Answer: 19", "18", { readers })).toMatchObject({ reward: 0, source: "final-answer" });
      expect(scoreMathAnswer("Final Answer: 19\nOn reflection:\n#### 18", "18", { readers })).toMatchObject({ reward: 1, source: "hash" });
      expect(scoreMathAnswer("Final Answer: 19\nOn reflection:\n#### 18", "19", { readers })).toMatchObject({ reward: 0, source: "hash" });
    }
  });

  it("for any two different numbers, the one under the later marker is the one scored", () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e6, max: 1e6 }), fc.integer({ min: -1e6, max: 1e6 }), fc.boolean(), (a, b, hashFirst) => {
        fc.pre(a !== b);
        const message = hashFirst ? `#### ${a}\nFinal Answer: ${b}` : `Final Answer: ${a}\n#### ${b}`;
        expect(scoreMathAnswer(message, String(b), { readers: ["hash", "final-answer"] })).toMatchObject({ reward: 1 });
        expect(scoreMathAnswer(message, String(a), { readers: ["hash", "final-answer"] })).toMatchObject({ reward: 0 });
      }),
      RUNS,
    );
  });
});

/** A random arithmetic expression over some numbers, with its value computed here (independently of the grader). */
type Expr = { n: number } | { op: "+" | "-" | "*" | "/"; l: Expr; r: Expr };

const expr: fc.Arbitrary<Expr> = fc.letrec<{ e: Expr }>((tie) => ({
  e: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.record({ n: fc.integer({ min: 1, max: 100 }) }),
    fc.record({ op: fc.constantFrom("+", "-", "*", "/"), l: tie("e"), r: tie("e") }) as fc.Arbitrary<Expr>,
  ),
})).e;

function text(e: Expr): string {
  return "n" in e ? String(e.n) : `(${text(e.l)} ${e.op} ${text(e.r)})`;
}
function value(e: Expr): number {
  if ("n" in e) return e.n;
  const [l, r] = [value(e.l), value(e.r)];
  return e.op === "+" ? l + r : e.op === "-" ? l - r : e.op === "*" ? l * r : l / r;
}
function leaves(e: Expr): number[] {
  return "n" in e ? [e.n] : [...leaves(e.l), ...leaves(e.r)];
}
const sorted = (xs: readonly number[]) => [...xs].sort((a, b) => a - b);

describe("a Countdown equation is rewarded only when it uses exactly the given numbers and reaches the target", () => {
  it("reward 1 implies the same multiset of numbers and a value within 1e-5 of the target", () => {
    fc.assert(
      fc.property(expr, fc.integer({ min: -50, max: 500 }), fc.array(fc.integer({ min: 1, max: 100 }), { maxLength: 2 }), fc.boolean(), (e, target, extra, giveExact) => {
        const nums = giveExact ? leaves(e) : [...leaves(e), ...extra];
        const result = scoreCountdown(`<answer>${text(e)}</answer>`, target, nums);
        if (result.reward === 1) {
          expect(sorted(leaves(e))).toEqual(sorted(nums));
          expect(Math.abs(value(e) - target)).toBeLessThan(1e-5);
        } else expect(result.isSuccess).toBe(false);
      }),
      RUNS,
    );
  });

  it("…and an equation that does reach the target with exactly the numbers is rewarded", () => {
    fc.assert(
      fc.property(expr, (e) => {
        const v = value(e);
        fc.pre(Number.isInteger(v) && Number.isFinite(v));
        expect(scoreCountdown(`<answer>${text(e)}</answer>`, v, leaves(e).reverse())).toMatchObject({ reward: 1, isSuccess: true });
      }),
      RUNS,
    );
  });
});
