import type { BenchResult } from "./harness.ts";
/** Runs the scheduler benchmark (three runs; the median is reported). */
export declare function schedulerBenchmarks(): Promise<BenchResult[]>;
