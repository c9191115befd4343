/**
 * @module test/unit/rewards/laws — the reward rules that are laws rather than examples, checked on random inputs
 * (fast-check, seeded: a failure prints its seed and shrunk counterexample) through the public API of src/rewards
 * only, so they hold whatever a grader's internals become:
 *  - a math answer that differs from the gold as a number is never rewarded, whatever reader finds it and whatever
 *    the reasoning before it says (the gold itself included);
 *  - the same number in another accepted spelling is rewarded (so the first law is not met by rewarding nothing);
 *  - a Countdown equation is rewarded only when it uses exactly the given numbers and reaches the target;
 *  - of a `####` line and a "Final Answer" line, the later one is the answer;
 *  - an LLM judge's verdict is its reply's last structured verdict, a number in [0, 1], or none (never guessed).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { scoreCountdown, scoreMathAnswer, type AnswerReader } from "../../../src/rewards/index.ts";
import { parseJudgeVerdict } from "../../../src/rewards/judge.ts";

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

describe("a judge verdict is the reply's last structured verdict, a number in [0, 1], or none", () => {
  const verdict = fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom(0, 1, 0.5));
  const noise = fc.constantFrom("", "Overall 9/10. ", "The rubric says {\"score\": 1} is best. ", "<think>{\"score\": 0.9}</think>", "score: 0.3\n");

  it("the score of the last {\"score\": x} is the verdict, whatever prose and earlier objects say", () => {
    fc.assert(
      fc.property(noise, verdict, verdict, (before, earlier, last) => {
        const reply = `${before}First draft {"score": ${earlier}}.\nFinal: {"score": ${last}}`;
        expect(parseJudgeVerdict(reply)).toEqual({ ok: true, score: last, source: "json" });
      }),
      RUNS,
    );
  });

  it("a score outside [0, 1], not a number, or no verdict at all is never a score", () => {
    const bad = fc.oneof(fc.double({ min: 1.000001, max: 1e9, noNaN: true }), fc.double({ min: -1e9, max: -0.000001, noNaN: true }), fc.constantFrom('"high"', "null", "true", '"0.5"', "[1]"));
    fc.assert(
      fc.property(noise, bad, (before, value) => {
        const result = parseJudgeVerdict(`${before}{"score": ${value}}`);
        expect(result.ok).toBe(false);
      }),
      RUNS,
    );
    for (const reply of ["Overall 9/10", "", "   ", "<think>{\"score\": 1}</think>", "<think>{\"score\": 1}", null]) expect(parseJudgeVerdict(reply).ok).toBe(false);
  });

  it("an incomplete reply (cut at its length limit or filtered) has no verdict, whatever it contains", () => {
    for (const finish of ["length", "content_filter"]) expect(parseJudgeVerdict('{"score": 1}', finish)).toMatchObject({ ok: false, problem: `the judge reply is incomplete (finish_reason "${finish}")` });
    expect(parseJudgeVerdict('{"score": 1}', "stop")).toMatchObject({ ok: true, score: 1 });
  });

  it("with verdict tags, the verdict that ends last wins between tags and JSON; a tag ending where another does is the longer one", () => {
    const tags = { "[[CORRECT]]": 1, "[[INCORRECT]]": 0, "[[HALF]]": 0.5 };
    expect(parseJudgeVerdict('{"score": 1} … [[INCORRECT]]', null, { verdictTags: tags })).toEqual({ ok: true, score: 0, source: "tag" });
    expect(parseJudgeVerdict('[[INCORRECT]] … {"score": 1}', null, { verdictTags: tags })).toEqual({ ok: true, score: 1, source: "json" });
    expect(parseJudgeVerdict("[[CORRECT]] then [[HALF]]", null, { verdictTags: tags })).toEqual({ ok: true, score: 0.5, source: "tag" });
    expect(parseJudgeVerdict("[[HALF]] then [[CORRECT]]", null, { verdictTags: tags })).toEqual({ ok: true, score: 1, source: "tag" });
    expect(parseJudgeVerdict("so: [[INCORRECT]]", null, { verdictTags: { "[[CORRECT]]": 1, "[[INCORRECT]]": 0 } })).toMatchObject({ score: 0 });
    expect(parseJudgeVerdict("[[CORRECT]]", null, { verdictTags: { "[[CORRECT]]": 2, "": 1 } })).toEqual({ ok: false, problem: "verdict tag score 2 is not in [0, 1]" });
    expect(parseJudgeVerdict("[[CORRECT]]", null, { verdictTags: { "[[CORRECT]]": -1 } })).toMatchObject({ ok: false });
    expect(parseJudgeVerdict("[[CORRECT]]", null, { verdictTags: { "[[CORRECT]]": Number.NaN } })).toMatchObject({ ok: false });
    expect(parseJudgeVerdict("no verdict", null, { verdictTags: tags })).toEqual({ ok: false, problem: 'the judge reply has no {"score": x} object or verdict tag' });
    expect(parseJudgeVerdict("no verdict")).toEqual({ ok: false, problem: 'the judge reply has no {"score": x} object' });
  });

  it("only the reply's last 20,000 characters are read; reasoning blocks are never the verdict", () => {
    expect(parseJudgeVerdict(`{"score": 1}${" ".repeat(20_000)}x`).ok).toBe(false);
    expect(parseJudgeVerdict(`{"score": 0.25}<think>{"score": 1}</think> done`)).toMatchObject({ ok: true, score: 0.25 });
    expect(parseJudgeVerdict(`<think>a</think>{"score": 0.75}<think>{"score": 1}</think>`)).toMatchObject({ ok: true, score: 0.75 });
  });
});
