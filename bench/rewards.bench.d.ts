import { type BenchResult } from "./harness.ts";
/** Runs the reward benchmarks. */
export declare function rewardBenchmarks(): Promise<BenchResult[]>;
