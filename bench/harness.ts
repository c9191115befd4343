/**
 * @module bench/harness — a tiny timing harness for `npm run bench`: runs a function repeatedly for a minimum
 * time and reports per-call statistics in milliseconds. Numbers are printed and written to a file; no test
 * asserts on them.
 */
import { performance } from "node:perf_hooks";

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
  /** a memory figure of the run (MiB) and its bound, e.g. workerd's peak RSS under 256 MiB */
  memoryMiB?: number;
  memoryTargetMiB?: number;
  note?: string;
}

/** Options: run for at least `minTimeMs` (default 300) and `minCalls` (default 20) calls. */
export interface BenchOptions {
  minTimeMs?: number;
  minCalls?: number;
  targetMs?: number;
  note?: string;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

/** Times `fn` (sync or async) and returns its statistics. */
export async function bench(name: string, fn: () => unknown, options: BenchOptions = {}): Promise<BenchResult> {
  const minTimeMs = options.minTimeMs ?? 300;
  const minCalls = options.minCalls ?? 20;
  for (let i = 0; i < 3; i++) await fn(); // warm-up
  const times: number[] = [];
  const start = performance.now();
  while (times.length < minCalls || performance.now() - start < minTimeMs) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return summarize(name, times, options);
}

/** The statistics of measured call times (milliseconds each), with the target and note of `options`. */
export function summarize(name: string, times: readonly number[], options: Pick<BenchOptions, "targetMs" | "note"> = {}): BenchResult {
  const sorted = [...times].sort((a, b) => a - b);
  const total = times.reduce((a, b) => a + b, 0);
  const p99Ms = quantile(sorted, 0.99);
  return {
    name,
    calls: times.length,
    meanMs: total / Math.max(1, times.length),
    p50Ms: quantile(sorted, 0.5),
    p99Ms,
    maxMs: sorted[sorted.length - 1] ?? 0,
    opsPerSec: total > 0 ? (times.length / total) * 1000 : 0,
    ...(options.targetMs !== undefined ? { targetMs: options.targetMs, metTarget: p99Ms <= options.targetMs } : {}),
    ...(options.note ? { note: options.note } : {}),
  };
}

/** Renders results as an aligned table. */
export function formatResults(results: readonly BenchResult[]): string {
  const rows = results.map((r) => [
    r.name,
    String(r.calls),
    r.meanMs.toFixed(4),
    r.p50Ms.toFixed(4),
    r.p99Ms.toFixed(4),
    r.opsPerSec >= 100 ? r.opsPerSec.toFixed(0) : r.opsPerSec.toFixed(2),
    [
      r.targetMs === undefined ? "" : `${r.p99Ms <= r.targetMs ? "ok" : "MISSED"} (≤${r.targetMs} ms)`,
      r.memoryTargetMiB === undefined ? "" : `${(r.memoryMiB ?? Infinity) < r.memoryTargetMiB ? "ok" : "MISSED"} (${(r.memoryMiB ?? NaN).toFixed(0)} < ${r.memoryTargetMiB} MiB)`,
    ].filter(Boolean).join(", "),
  ]);
  const head = ["benchmark", "calls", "mean ms", "p50 ms", "p99 ms", "ops/s", "target"];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}
