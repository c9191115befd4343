/**
 * @module bench/harness — a tiny timing harness for `npm run bench`: runs a function repeatedly for a minimum
 * time and reports per-call statistics in milliseconds. Numbers are printed and written to a file; no test
 * asserts on them.
 */
import { performance } from "node:perf_hooks";
function quantile(sorted, q) {
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}
/** Times `fn` (sync or async) and returns its statistics. */
export async function bench(name, fn, options = {}) {
    const minTimeMs = options.minTimeMs ?? 300;
    const minCalls = options.minCalls ?? 20;
    for (let i = 0; i < 3; i++)
        await fn(); // warm-up
    const times = [];
    const start = performance.now();
    while (times.length < minCalls || performance.now() - start < minTimeMs) {
        const t0 = performance.now();
        await fn();
        times.push(performance.now() - t0);
    }
    return summarize(name, times, options);
}
/** The statistics of measured call times (milliseconds each), with the target and note of `options`. */
export function summarize(name, times, options = {}) {
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
export function formatResults(results) {
    const rows = results.map((r) => [
        r.name,
        String(r.calls),
        r.meanMs.toFixed(4),
        r.p50Ms.toFixed(4),
        r.p99Ms.toFixed(4),
        r.opsPerSec >= 100 ? r.opsPerSec.toFixed(0) : r.opsPerSec.toFixed(2),
        r.targetMs === undefined ? "" : `${r.metTarget ? "ok" : "MISSED"} (≤${r.targetMs} ms)`,
    ]);
    const head = ["benchmark", "calls", "mean ms", "p50 ms", "p99 ms", "ops/s", "target"];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
    return [line(head), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}
