import { type BenchResult } from "./harness.ts";
/** Runs the runtime benchmarks. */
export declare function runtimeBenchmarks(): Promise<BenchResult[]>;
