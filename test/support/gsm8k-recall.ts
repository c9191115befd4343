/**
 * @module test/support/gsm8k-recall — the GSM8K grader measurement: every gold of a GSM8K file × the shapes in which
 * models write a right answer (box, `#### N`, the Minerva template, prose, units, scientific notation …) × the
 * answer-reader settings a run can choose. For each cell it counts the golds scored 1.0 (recall) and, for the same
 * shapes written with a wrong value (the gold + 1), the ones scored 1.0 anyway (false positives, which must be 0).
 * `test/unit/rewards/gsm8k-recall.test.ts` asserts the table; `npm run bench` prints it and writes it to
 * `bench/results.json`.
 */
import { readFileSync } from "node:fs";
import { type AnswerReader, formatRational, parseGsm8kGold, parseNumericAnswer, type Rational, scoreMathAnswer } from "../../src/rewards/index.ts";

/** One way a model writes its final answer; `render` gets the canonical gold (`"18"`, `"-10"`, `"2125"`). */
export interface OutputFormat {
  name: string;
  /** the reader that must be on for this shape to be read: the box is always on */
  reader: AnswerReader;
  render(value: string): string;
}

/** A named set of answer readers, as a run's dataset chooses them (`answerReaders`). */
export interface ReaderSetting {
  name: string;
  readers: readonly AnswerReader[];
}

/** `1234567` → `1,234,567` (the sign kept). */
export function withThousands(value: string): string {
  const negative = value.startsWith("-");
  const digits = negative ? value.slice(1) : value;
  const [int, frac] = digits.split(".");
  const grouped = int!.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${negative ? "-" : ""}${grouped}${frac === undefined ? "" : `.${frac}`}`;
}

/** A decimal's exact mantissa and power of ten: `2125` → `["2.125", 3]`, `-18` → `["-1.8", 1]`, `0.05` → `["5", -2]`. */
export function scientificParts(value: string): [mantissa: string, exponent: number] {
  const negative = value.startsWith("-");
  const [int = "", frac = ""] = (negative ? value.slice(1) : value).split(".");
  const all = int + frac;
  if (!/^\d+$/.test(all)) throw new RangeError(`scientificParts needs a decimal number, got ${JSON.stringify(value)}`);
  const lead = all.length - all.replace(/^0+/, "").length;
  if (lead === all.length) return ["0", 0];
  const significant = all.slice(lead).replace(/0+$/, "");
  const mantissa = significant.length === 1 ? significant : `${significant[0]}.${significant.slice(1)}`;
  return [`${negative ? "-" : ""}${mantissa}`, int.length - 1 - lead];
}

/** A number in scientific notation: `2125` → `2.125 \times 10^{3}`; `times` may be `\cdot`. */
export function scientific(value: string, times = "\\times"): string {
  const [mantissa, exponent] = scientificParts(value);
  return `${mantissa} ${times} 10^{${exponent}}`;
}

/** `2125` → `2.125 \\cdot 10^3`: braces only where TeX needs them (`10^{12}`, `10^{-1}`). */
function cdotScientific(value: string): string {
  const [mantissa, exponent] = scientificParts(value);
  return `${mantissa} \\cdot 10^${/^\d$/.test(String(exponent)) ? exponent : `{${exponent}}`}`;
}

/** `-10` → `-\$10`, `18` → `\$18`: the currency sign after the sign. */
function dollars(value: string): string {
  return value.startsWith("-") ? `-\\$${value.slice(1)}` : `\\$${value}`;
}

/** `18` → `\\frac{36}{2}`: the same value written as a fraction (a non-integer gold is written over 1). */
function doubledOverTwo(value: string): string {
  return /^-?\d+$/.test(value) ? `\\frac{${2n * BigInt(value)}}{2}` : `\\frac{${value}}{1}`;
}

/** The answer shapes measured: the ones issue 22 names, each with a few of its neighbours. */
export const OUTPUT_FORMATS: readonly OutputFormat[] = [
  { name: "\\boxed{N}", reader: "boxed", render: (v) => `Adding it all up, she makes \\boxed{${v}}.` },
  { name: "\\boxed{1,234} thousands", reader: "boxed", render: (v) => `The total is \\boxed{${withThousands(v)}}.` },
  { name: "\\boxed{\\$N} currency", reader: "boxed", render: (v) => `So the cost is \\boxed{${dollars(v)}}.` },
  { name: "\\boxed{N\\text{ unit}}", reader: "boxed", render: (v) => `So she has \\boxed{${v}\\text{ eggs}}.` },
  { name: "\\boxed{N \\mbox{ unit}}", reader: "boxed", render: (v) => `So he walks \\boxed{${v} \\mbox{ miles}}.` },
  { name: "\\boxed{N\\,\\mathrm{m}}", reader: "boxed", render: (v) => `The rope is \\boxed{${v}\\,\\mathrm{m}} long.` },
  { name: "\\boxed{N~\\text{kg}}", reader: "boxed", render: (v) => `It weighs \\boxed{${v}~\\text{kg}}.` },
  { name: "\\boxed{N\\text{ cm}^2}", reader: "boxed", render: (v) => `The area is \\boxed{${v}\\text{ cm}^2}.` },
  { name: "\\boxed{N \\text{ dollars per day}}", reader: "boxed", render: (v) => `She earns \\boxed{${v} \\text{ dollars per day}}.` },
  { name: "\\boxed{\\frac{2N}{2}\\text{ cups}}", reader: "boxed", render: (v) => `She needs \\boxed{${doubledOverTwo(v)}\\text{ cups}}.` },
  { name: "\\boxed{a \\times 10^{n}}", reader: "boxed", render: (v) => `That is \\boxed{${scientific(v)}}.` },
  { name: "\\boxed{a \\cdot 10^n}", reader: "boxed", render: (v) => `That is \\boxed{${cdotScientific(v)}}.` },
  { name: "\\boxed{aEn}", reader: "boxed", render: (v) => `That is \\boxed{${scientificParts(v).join("E")}}.` },
  { name: "#### N", reader: "hash", render: (v) => `She makes 9 * 2 = ${v} dollars.\n#### ${v}` },
  {
    name: "Minerva: …final answer is $N$. I hope it is correct.",
    reader: "final-answer",
    render: (v) => `9 * 2 = 18, so ...\nFinal Answer: The final answer is $${v}$. I hope it is correct.`,
  },
  { name: "Final Answer: **N**", reader: "final-answer", render: (v) => `437 + 468 = 905 …\nFinal Answer: **${v}**` },
  { name: "prose: the answer is N.", reader: "final-number", render: (v) => `Adding 9 and 9 gives the result. The answer is ${v}.` },
  { name: "prose: inline math … is $N$.", reader: "final-number", render: (v) => `Adding the two amounts, the total is $${v}$.` },
  { name: "prose: … is $N\\text{ cm}^2$.", reader: "final-number", render: (v) => `So the area of the garden is $${v}\\text{ cm}^2$.` },
  { name: "prose: rate, N dollars per day", reader: "final-number", render: (v) => `Janet sells 9 eggs. She makes ${v} dollars per day.` },
];

/** The reader settings measured: the default, the GSM8K default, and each opt-in reader added in turn. */
export const READER_SETTINGS: readonly ReaderSetting[] = [
  { name: "box only (default)", readers: ["boxed"] },
  { name: "box + ####", readers: ["boxed", "hash"] },
  { name: "+ Final Answer", readers: ["boxed", "hash", "final-answer"] },
  { name: "+ final number", readers: ["boxed", "hash", "final-answer", "final-number"] },
];

/** One cell of the table: a format under a reader setting. */
export interface RecallCell {
  format: string;
  setting: string;
  /** golds scored 1.0 when written right */
  correct: number;
  /** near misses (gold + 1) scored 1.0: must be 0 */
  falsePositives: number;
  golds: number;
  recall: number;
  /** whether the setting enables the format's reader (then recall should be 1) */
  readerOn: boolean;
}

/** The whole measurement. */
export interface RecallTable {
  golds: number;
  cells: RecallCell[];
}

function plusOne(gold: string): string {
  const r = parseNumericAnswer(gold);
  if (!r) return `${gold}1`;
  const next: Rational = { num: r.num + r.den, den: r.den };
  return formatRational(next);
}

/**
 * Scores every gold in every format under every setting.
 * @param golds canonical golds (`parseGsm8kGold` output)
 */
export function measureRecall(golds: readonly string[], formats = OUTPUT_FORMATS, settings = READER_SETTINGS): RecallTable {
  const cells: RecallCell[] = [];
  for (const format of formats) {
    const right = golds.map((g) => format.render(g));
    const wrong = golds.map((g) => format.render(plusOne(g)));
    for (const setting of settings) {
      const options = { readers: setting.readers };
      let correct = 0;
      let falsePositives = 0;
      golds.forEach((gold, i) => {
        if (scoreMathAnswer(right[i]!, gold, options).reward === 1) correct++;
        if (scoreMathAnswer(wrong[i]!, gold, options).reward === 1) falsePositives++;
      });
      cells.push({
        format: format.name,
        setting: setting.name,
        correct,
        falsePositives,
        golds: golds.length,
        recall: golds.length ? correct / golds.length : 0,
        readerOn: setting.readers.includes(format.reader),
      });
    }
  }
  return { golds: golds.length, cells };
}

/** The canonical golds of a GSM8K JSONL file (rows without a `####` gold are left out). */
export function loadGsm8kGolds(path: string): string[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => parseGsm8kGold((JSON.parse(l) as { answer: string }).answer))
    .filter((g): g is string => g !== null);
}

/** The table as text: one row per format, recall per reader setting, and the false positives of the row. */
export function formatRecallTable(table: RecallTable, settings = READER_SETTINGS): string[] {
  const formats = [...new Set(table.cells.map((c) => c.format))];
  const width = Math.max(...formats.map((f) => f.length), 6);
  const colWidth = Math.max(...settings.map((s) => s.name.length));
  const header = `${"format".padEnd(width)}  ${settings.map((s) => s.name.padStart(colWidth)).join("  ")}  false positives`;
  const legend = settings.map((s) => `${s.name} = ${s.readers.join(", ")}`).join("; ");
  const lines = [`GSM8K grader recall per output format (${table.golds} golds; near misses = gold + 1)`, `readers: ${legend}`, header];
  for (const f of formats) {
    const row = table.cells.filter((c) => c.format === f);
    const recall = settings.map((s) => {
      const c = row.find((x) => x.setting === s.name);
      return (c ? `${(c.recall * 100).toFixed(1)}%` : "-").padStart(colWidth);
    });
    lines.push(`${f.padEnd(width)}  ${recall.join("  ")}  ${row.reduce((a, c) => a + c.falsePositives, 0)}`);
  }
  return lines;
}
