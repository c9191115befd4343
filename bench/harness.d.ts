/** Statistics of one benchmark. Times are milliseconds per call. */
export interface BenchResult {
    name: string;
    calls: number;
    meanMs: number;
    p50Ms: number;
    p99Ms: number;
    maxMs: number;
    opsPerSec: number;
    /** an optional target, e.g. BC-16's "under 50 ms", and whether the p99 met it */
    targetMs?: number;
    metTarget?: boolean;
    note?: string;
}
/** Options: run for at least `minTimeMs` (default 300) and `minCalls` (default 20) calls. */
export interface BenchOptions {
    minTimeMs?: number;
    minCalls?: number;
    targetMs?: number;
    note?: string;
}
/** Times `fn` (sync or async) and returns its statistics. */
export declare function bench(name: string, fn: () => unknown, options?: BenchOptions): Promise<BenchResult>;
/** The statistics of measured call times (milliseconds each), with the target and note of `options`. */
export declare function summarize(name: string, times: readonly number[], options?: Pick<BenchOptions, "targetMs" | "note">): BenchResult;
/** Renders results as an aligned table. */
export declare function formatResults(results: readonly BenchResult[]): string;
