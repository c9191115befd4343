/**
 * @module tasks/countdown-generator — ajet-edge's own seeded Countdown generator: solvable puzzles with one known
 * equation (+ − × ÷, every intermediate result a non-negative integer). The embedded default dataset of `npm start`.
 */
import { mulberry32 } from "../util/mulberry32.ts";
import { z } from "zod";
import type { Task } from "../protocol/index.ts";
import { buildCountdownPrompt } from "./countdown-prompt.ts";
import type { CountdownTaskMetadata } from "./countdown-prompt.ts";
import { NO_ENV } from "./field-maps.ts";
import { TaskIdPart } from "./task-id.ts";

const settingsShape = {
  /** the generator's hard ceiling (the scheduler's permutation); a deployment's own limit is AJET_MAX_GENERATED_TASKS */
  count: z.int().min(1).max(2 ** 31),
  seed: z.int().min(0).max(0xffff_ffff),
  numbersPerTask: z.union([z.literal(3), z.literal(4)]).default(4),
  minNumber: z.int().min(1).default(1),
  maxNumber: z.int().max(10_000).default(100),
  minTarget: z.int().min(1).default(10),
  maxTarget: z.int().max(1_000_000).default(100),
};

type Ranges = { minNumber: number; maxNumber: number; minTarget: number; maxTarget: number };

function checkRanges(o: Ranges, ctx: z.RefinementCtx): void {
  if (o.minNumber > o.maxNumber) ctx.addIssue({ code: "custom", path: ["maxNumber"], message: "must be >= minNumber" });
  if (o.minTarget > o.maxTarget) ctx.addIssue({ code: "custom", path: ["maxTarget"], message: "must be >= minTarget" });
}

/**
 * The generator's knobs without the dataset name (what a dataset spec's `generate` holds). Ranges are inclusive;
 * defaults: 4 numbers in [1, 100], target in [10, 100].
 */
export const CountdownGeneratorSettings = z.strictObject(settingsShape).superRefine(checkRanges);
export type CountdownGeneratorSettings = z.input<typeof CountdownGeneratorSettings>;

/** Generator options: the settings plus `name`, the dataset name (ids `<name>:gen-<seed>:<i>`, default `countdown`). */
export const CountdownGeneratorOptions = z
  .strictObject({ ...settingsShape, name: TaskIdPart.default("countdown") })
  .superRefine(checkRanges);
export type CountdownGeneratorOptions = z.input<typeof CountdownGeneratorOptions>;

/** Tries per task before giving up (a range with no reachable target). */
const MAX_ATTEMPTS = 10_000;

/** A per-task seed from (seed, i), so task i is the same whatever `count` is. */
function taskSeed(seed: number, i: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(i + 1, 0xc2b2ae35)) >>> 0;
}

/** A sub-expression: its exact value, its text, and its precedence (3 atom, 2 × ÷, 1 + −). */
interface Expr {
  value: number;
  text: string;
  prec: number;
}

type Op = "+" | "-" | "*" | "/";
const PREC: Record<Op, number> = { "+": 1, "-": 1, "*": 2, "/": 2 };

function apply(a: number, b: number, op: Op): number {
  if (op === "+") return a + b;
  if (op === "-") return a - b;
  return op === "*" ? a * b : a / b;
}

function combine(a: Expr, b: Expr, op: Op): Expr {
  const p = PREC[op];
  const left = a.prec < p ? `(${a.text})` : a.text;
  const right = b.prec < p || (b.prec === p && (op === "-" || op === "/")) ? `(${b.text})` : b.text;
  return { value: apply(a.value, b.value, op), text: `${left}${op}${right}`, prec: p };
}

/**
 * Ops that keep every intermediate a non-negative integer (a ≥ b is arranged by the caller). Among those, ops that
 * keep the value within `ceiling` and do not give 0 are preferred, so × and ÷ survive the target range.
 */
function validOps(a: Expr, b: Expr, ceiling: number): Op[] {
  const ops: Op[] = ["+", "-", "*"];
  if (b.value !== 0 && a.value % b.value === 0) ops.push("/");
  const preferred = ops.filter((op) => {
    const v = combine(a, b, op).value;
    return v > 0 && v <= ceiling;
  });
  return preferred.length > 0 ? preferred : ops;
}

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

/** One puzzle from a task seed: random numbers, combined pairwise in random order until one value remains. */
function generateOne(seed: number, o: z.output<typeof CountdownGeneratorOptions>): CountdownTaskMetadata {
  const rand = mulberry32(seed);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const span = o.maxNumber - o.minNumber + 1;
    const nums = Array.from({ length: o.numbersPerTask }, () => o.minNumber + Math.floor(rand() * span));
    const pool: Expr[] = nums.map((n) => ({ value: n, text: String(n), prec: 3 }));
    while (pool.length > 1) {
      const x = pool.splice(Math.floor(rand() * pool.length), 1)[0]!;
      const y = pool.splice(Math.floor(rand() * pool.length), 1)[0]!;
      const [a, b] = x.value >= y.value ? [x, y] : [y, x];
      pool.push(combine(a, b, pick(rand, validOps(a, b, o.maxTarget * 2))));
    }
    const { value: target, text: solution } = pool[0]!;
    if (Number.isSafeInteger(target) && target >= o.minTarget && target <= o.maxTarget) {
      return { target, nums, solution };
    }
  }
  throw new RangeError(
    `no Countdown target in [${o.minTarget}, ${o.maxTarget}] after ${MAX_ATTEMPTS} tries; widen the ranges`,
  );
}

/**
 * Generates `count` solvable Countdown tasks, deterministic in `seed` (task i does not depend on `count`).
 * Each task: id `<name>:gen-<seed>:<i>`, `main_query` from {@link buildCountdownPrompt}, metadata
 * `{ target, nums, solution }` where `solution` uses every number once and evaluates exactly to `target`.
 * Builds all `count` tasks in memory: a run reads them one at a time with {@link generateCountdownTask} instead.
 * @throws ZodError for invalid options; RangeError when the ranges admit no target.
 */
export function generateCountdownTasks(options: CountdownGeneratorOptions): Task[] {
  const o = CountdownGeneratorOptions.parse(options);
  return Array.from({ length: o.count }, (_, i) => countdownTaskAt(o, i));
}

/**
 * Task `i` of a generator (the same task {@link generateCountdownTasks} gives at position `i`), in O(1) memory:
 * what lets a run serve a generated dataset of any `count` without holding it.
 * @param i 0 ≤ i < count
 * @throws ZodError for invalid options; RangeError for `i` out of range or ranges that admit no target.
 */
export function generateCountdownTask(options: CountdownGeneratorOptions, i: number): Task {
  const o = CountdownGeneratorOptions.parse(options);
  if (!Number.isInteger(i) || i < 0 || i >= o.count) throw new RangeError(`task ${i} is outside the generator's ${o.count} tasks`);
  return countdownTaskAt(o, i);
}

function countdownTaskAt(o: z.output<typeof CountdownGeneratorOptions>, i: number): Task {
  const puzzle = generateOne(taskSeed(o.seed, i), o);
  return {
    main_query: buildCountdownPrompt(puzzle),
    init_messages: [],
    task_id: `${o.name}:gen-${o.seed}:${i}`,
    env_type: NO_ENV,
    metadata: { ...puzzle },
  };
}
