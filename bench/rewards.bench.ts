/**
 * @module bench/rewards.bench — reward scoring speed: normal GSM8K answers, the BC-16 pathological output
 * (target: under 50 ms), the opt-in readers on a normal prose answer and on 300 KB of currency signs and inline math
 * (target: under 50 ms), Countdown equations and BC-19's `9**9**9` (target: under 1 ms).
 */
import { scoreCountdown, scoreMathAnswer } from "../src/rewards/index.ts";
import { bench, type BenchResult } from "./harness.ts";

/** Runs the reward benchmarks. */
export async function rewardBenchmarks(): Promise<BenchResult[]> {
  const normal = "Let me think. 16 - 3 - 4 = 9 eggs, 9 * 2 = 18 dollars.\nThe answer is \\boxed{18}.";
  const degenerate = "\\boxed{" + "\\frac{".repeat(20_000);
  const long = "reasoning ".repeat(50_000) + "\\boxed{42}";
  const readers = { readers: ["boxed", "hash", "final-answer", "final-number"] as const };
  const prose = "Janet sells 16 - 3 - 4 = 9 eggs a day at $2 each, so she makes $9 \\times 2 = 18$ dollars per day.";
  const dollars = "$1 $".repeat(75_000);
  return [
    await bench("math: normal GSM8K answer", () => scoreMathAnswer(normal, "18")),
    await bench("math: BC-16 \\frac{ ×20000 (120 KB)", () => scoreMathAnswer(degenerate, "42"), { targetMs: 50 }),
    await bench("math: 500 KB of reasoning then a box", () => scoreMathAnswer(long, "42"), { targetMs: 50 }),
    await bench("math: prose answer, all readers", () => scoreMathAnswer(prose, "18", { readers: [...readers.readers] })),
    await bench("math: 300 KB of $1 $, all readers", () => scoreMathAnswer(dollars, "1", { readers: [...readers.readers] }), { targetMs: 50 }),
    await bench("countdown: 8/(3-8/3) (BC-18)", () => scoreCountdown("<answer>8/(3-8/3)</answer>", 24, [8, 3, 8, 3])),
    await bench("countdown: 9**9**9 refused (BC-19)", () => scoreCountdown("<answer>9**9**9</answer>", 729, [9, 9, 9]), { targetMs: 1 }),
  ];
}
