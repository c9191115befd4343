/** @module test/unit/tasks/countdown-generator — determinism and solvability of the seeded Countdown generator. */
import { describe, expect, it } from "vitest";
import { buildCountdownPrompt, generateCountdownTasks } from "../../../src/tasks/index.ts";

/** An exact rational p/q (q > 0) with BigInt parts. */
type Frac = [bigint, bigint];

/**
 * A tiny recursive-descent evaluator for + - * / and parentheses over integers, in exact rationals. Returns the
 * value and the integer literals it used; throws on anything else (no eval).
 */
function evaluate(expr: string): { value: Frac; numbers: number[] } {
  const tokens = expr.match(/\d+|[-+*/()]/g) ?? [];
  if (tokens.join("") !== expr.replace(/\s+/g, "")) throw new Error(`bad characters in ${expr}`);
  const numbers: number[] = [];
  let pos = 0;
  const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? (a < 0n ? -a : a) : gcd(b, a % b));
  const norm = ([p, q]: Frac): Frac => {
    if (q === 0n) throw new Error("division by zero");
    const g = gcd(p, q) || 1n;
    return q < 0n ? [-p / g, -q / g] : [p / g, q / g];
  };
  const factor = (): Frac => {
    const t = tokens[pos++];
    if (t === "(") {
      const v = sum();
      if (tokens[pos++] !== ")") throw new Error("missing )");
      return v;
    }
    if (t === undefined || !/^\d+$/.test(t)) throw new Error(`unexpected ${t}`);
    numbers.push(Number(t));
    return [BigInt(t), 1n];
  };
  const product = (): Frac => {
    let v = factor();
    while (tokens[pos] === "*" || tokens[pos] === "/") {
      const op = tokens[pos++];
      const [p, q] = factor();
      v = norm(op === "*" ? [v[0] * p, v[1] * q] : [v[0] * q, v[1] * p]);
    }
    return v;
  };
  const sum = (): Frac => {
    let v = product();
    while (tokens[pos] === "+" || tokens[pos] === "-") {
      const op = tokens[pos++];
      const [p, q] = product();
      v = norm([op === "+" ? v[0] * q + p * v[1] : v[0] * q - p * v[1], v[1] * q]);
    }
    return v;
  };
  const value = sum();
  if (pos !== tokens.length) throw new Error(`trailing input in ${expr}`);
  return { value, numbers };
}

const sorted = (xs: readonly number[]) => [...xs].sort((a, b) => a - b);

describe("generateCountdownTasks", () => {
  it("is deterministic in the seed, and task i does not depend on count", () => {
    const a = generateCountdownTasks({ count: 50, seed: 1234 });
    const b = generateCountdownTasks({ count: 50, seed: 1234 });
    const longer = generateCountdownTasks({ count: 80, seed: 1234 });
    expect(b).toEqual(a);
    expect(longer.slice(0, 50)).toEqual(a);
    const other = generateCountdownTasks({ count: 50, seed: 1235 });
    expect(other.map((t) => t.metadata)).not.toEqual(a.map((t) => t.metadata));
  });

  it("ids are <name>:gen-<seed>:<i>", () => {
    const tasks = generateCountdownTasks({ count: 3, seed: 7 });
    expect(tasks.map((t) => t.task_id)).toEqual(["countdown:gen-7:0", "countdown:gen-7:1", "countdown:gen-7:2"]);
    expect(generateCountdownTasks({ count: 1, seed: 7, name: "cd3" })[0]!.task_id).toBe("cd3:gen-7:0");
  });

  it.each([3, 4] as const)("every %i-number task is solvable: its solution uses each number once and hits the target", (n) => {
    const tasks = generateCountdownTasks({ count: 300, seed: 42, numbersPerTask: n });
    for (const task of tasks) {
      const { target, nums, solution } = task.metadata as { target: number; nums: number[]; solution: string };
      expect(nums).toHaveLength(n);
      expect(nums.every((x) => Number.isInteger(x) && x >= 1 && x <= 100)).toBe(true);
      expect(target).toBeGreaterThanOrEqual(10);
      expect(target).toBeLessThanOrEqual(100);
      const { value, numbers } = evaluate(solution);
      expect(value, `${solution} = ${target}`).toEqual([BigInt(target), 1n]);
      expect(sorted(numbers)).toEqual(sorted(nums));
      expect(task.main_query).toBe(buildCountdownPrompt({ target, nums }));
      expect(task.env_type).toBe("no_env");
    }
  });

  it("keeps every parenthesised intermediate result a non-negative integer", () => {
    // Re-evaluate every parenthesised sub-expression of each solution.
    for (const task of generateCountdownTasks({ count: 200, seed: 3 })) {
      const solution = String(task.metadata["solution"]);
      for (const inner of solution.match(/\([^()]*\)/g) ?? []) {
        const [p, q] = evaluate(inner.slice(1, -1)).value;
        expect(q, inner).toBe(1n);
        expect(p >= 0n, inner).toBe(true);
      }
    }
  });

  it("honours custom ranges and refuses impossible ones", () => {
    const tasks = generateCountdownTasks({ count: 20, seed: 5, numbersPerTask: 3, maxNumber: 9, minTarget: 20, maxTarget: 50 });
    for (const t of tasks) {
      expect(t.metadata["target"]).toBeGreaterThanOrEqual(20);
      expect((t.metadata["nums"] as number[]).every((x) => x <= 9)).toBe(true);
    }
    expect(() => generateCountdownTasks({ count: 1, seed: 1, minTarget: 50, maxTarget: 10 })).toThrow(/maxTarget/);
    expect(() => generateCountdownTasks({ count: 1, seed: 1, numbersPerTask: 5 as 4 })).toThrow();
    expect(() =>
      generateCountdownTasks({ count: 1, seed: 1, numbersPerTask: 3, maxNumber: 1, minTarget: 500, maxTarget: 600 }),
    ).toThrow(/no Countdown target in \[500, 600\]/);
  });
});

describe("the test's evaluator", () => {
  it("evaluates exactly and rejects what it does not know", () => {
    expect(evaluate("(25-5)*4").value).toEqual([80n, 1n]);
    expect(evaluate("8/(3-8/3)").value).toEqual([24n, 1n]);
    expect(() => evaluate("9**9")).toThrow();
    expect(() => evaluate("5/(3-3)")).toThrow("division by zero");
  });
});
