/**
 * @module test/unit/rewards/precision.property — the graders' precision stays perfect: over generated golds
 * (integers and decimals, either sign) and generated near misses (another number, two digits swapped, a partial
 * answer, several candidate numbers in one output), written in every answer shape of the GSM8K measurement and
 * scored under every reader setting, no near miss ever scores 1.0. The same golds written right score 1.0 whenever
 * the shape's reader is on (recall, for the kinds of issue 22 §4).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatRational, parseNumericAnswer, type Rational, rationalEquals, scoreMathAnswer } from "../../../src/rewards/index.ts";
import { OUTPUT_FORMATS, READER_SETTINGS } from "../../support/gsm8k-recall.ts";

/** A canonical decimal: an integer up to ±10^7 with 0–3 decimals, as `formatRational` writes it. */
const decimal: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: -10_000_000, max: 10_000_000 }), fc.constantFrom(0, 0, 0, 1, 2, 3))
  .map(([n, places]) => formatRational({ num: BigInt(n), den: 10n ** BigInt(places) }));

const value = (text: string): Rational => parseNumericAnswer(text)!;
const differs = (a: string, gold: string) => !rationalEquals(value(a), value(gold));

/** Two adjacent different digits swapped (`18` → `81`, `-3.25` → `-3.52`), or `null` when all digits are equal. */
function swapDigits(gold: string, at: number): string | null {
  const positions = [...gold].flatMap((c, i) => (/\d/.test(c) && /\d/.test(gold[i + 1] ?? "") && c !== gold[i + 1] ? [i] : []));
  if (positions.length === 0) return null;
  const i = positions[at % positions.length]!;
  const swapped = gold.slice(0, i) + gold[i + 1] + gold[i] + gold.slice(i + 2);
  return formatRational(value(swapped));
}

/** A partial answer: a digit dropped or added, the integer part of a decimal, the sign flipped, ×10 or ÷10. */
function partial(gold: string, pick: number, digit: number): string {
  const r = value(gold);
  const digits = [...gold].flatMap((c, i) => (/\d/.test(c) ? [i] : []));
  const drop = digits[pick % digits.length]!;
  const variants = [
    gold.slice(0, drop) + gold.slice(drop + 1),
    `${gold}${digit}`,
    gold.replace(/\d/, (d) => `${digit}${d}`),
    formatRational({ num: r.num / r.den, den: 1n }),
    formatRational({ num: -r.num, den: r.den }),
    formatRational({ num: r.num * 10n, den: r.den }),
    formatRational({ num: r.num, den: r.den * 10n }),
  ];
  const v = variants[pick % variants.length]!;
  return formatRational(value(parseNumericAnswer(v) ? v : `${gold}${digit}`));
}

/** A near miss of `gold`: another number, swapped digits or a partial answer, never equal to the gold. */
const nearMiss = (gold: string): fc.Arbitrary<string> =>
  fc
    .oneof(
      decimal,
      fc.nat().map((at) => swapDigits(gold, at) ?? `${gold}1`),
      fc.tuple(fc.nat(), fc.integer({ min: 0, max: 9 })).map(([pick, digit]) => partial(gold, pick, digit)),
      fc.integer({ min: -3, max: 3 }).map((d) => formatRational({ num: value(gold).num + BigInt(d) * value(gold).den, den: value(gold).den })),
    )
    .filter((v) => differs(v, gold));

const goldAndMiss = decimal.chain((gold) => nearMiss(gold).map((miss) => ({ gold, miss })));

/**
 * Outputs that state several candidate numbers, the gold among them, without stating the gold as the answer.
 * `ordered` shapes state their second number as the result, so they always get the near miss second.
 */
const SEVERAL: readonly { ordered: boolean; render: (a: string, b: string) => string }[] = [
  { ordered: false, render: (a, b) => `\\boxed{${a}, ${b}}` },
  { ordered: false, render: (a, b) => `\\boxed{${a} \\text{ or } ${b}}` },
  { ordered: false, render: (a, b) => `\\boxed{${a} \\text{ and } ${b}}` },
  { ordered: false, render: (a, b) => `\\boxed{${a}\\text{ dollars and } ${b}\\text{ cents}}` },
  { ordered: false, render: (a, b) => `#### ${a} ${b}` },
  { ordered: false, render: (a, b) => `#### ${a} or ${b}` },
  { ordered: false, render: (a, b) => `Final Answer: ${a}, ${b}` },
  { ordered: false, render: (a, b) => `Final Answer: The final answer is $${a}$ or $${b}$. I hope it is correct.` },
  { ordered: false, render: (a, b) => `The answer is ${a} or ${b}.` },
  { ordered: false, render: (a, b) => `It is between $${a}$ and $${b}$.` },
  { ordered: false, render: (a, b) => `She makes ${a} dollars per day and ${b} on Sundays.` },
  { ordered: false, render: (a, b) => `She makes ${a} dollars more than ${b} per day.` },
  { ordered: false, render: (a, b) => `First ${a}, then ${b}.` },
  { ordered: true, render: (g, o) => `\\boxed{${g}} is tempting, but \\boxed{${o}}` },
  { ordered: true, render: (g, o) => `So ${g} + ${o} - ${g} = ${o}.` },
  { ordered: true, render: (g, o) => `Final Answer: ${g}\nWait, no.\nFinal Answer: ${o}` },
];

describe("precision: no near miss ever scores 1.0", () => {
  it("other numbers, swapped digits and partial answers, in every answer shape and reader setting", () => {
    fc.assert(
      fc.property(goldAndMiss, fc.constantFrom(...OUTPUT_FORMATS), fc.constantFrom(...READER_SETTINGS), ({ gold, miss }, format, setting) => {
        const s = scoreMathAnswer(format.render(miss), gold, { readers: setting.readers });
        expect(s.reward, `${format.name} of ${miss} against ${gold} (${setting.name}): ${JSON.stringify(s)}`).toBe(0);
      }),
      { numRuns: 3000 },
    );
  });

  it("several candidate numbers in one output, the gold among them", () => {
    fc.assert(
      fc.property(goldAndMiss, fc.constantFrom(...SEVERAL), fc.constantFrom(...READER_SETTINGS), fc.boolean(), ({ gold, miss }, shape, setting, goldFirst) => {
        const text = goldFirst || shape.ordered ? shape.render(gold, miss) : shape.render(miss, gold);
        const s = scoreMathAnswer(text, gold, { readers: setting.readers });
        expect(s.reward, `${JSON.stringify(text)} against ${gold} (${setting.name}): ${JSON.stringify(s)}`).toBe(0);
      }),
      { numRuns: 3000 },
    );
  });

  it("a grader-side check: near misses differ from their gold as exact numbers", () => {
    fc.assert(
      fc.property(goldAndMiss, ({ gold, miss }) => {
        expect(differs(miss, gold)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

describe("recall: the same golds written right score 1.0 wherever the shape's reader is on", () => {
  it("every answer shape of the measurement, for integers and decimals of either sign", () => {
    fc.assert(
      fc.property(decimal, fc.constantFrom(...OUTPUT_FORMATS), (gold, format) => {
        for (const setting of READER_SETTINGS.filter((x) => x.readers.includes(format.reader))) {
          const s = scoreMathAnswer(format.render(gold), gold, { readers: setting.readers });
          expect(s.reward, `${format.name} of ${gold} (${setting.name}): ${JSON.stringify(s)}`).toBe(1);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
