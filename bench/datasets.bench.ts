/**
 * @module bench/datasets.bench — datasets of any size in flat memory, on the real stack: the Worker in local
 * workerd, `POST /runs` over URL JSONL files of 1,000,000 and then 3,000,000 rows (made on the fly by a 127.0.0.1
 * server with Range support), which the run's Durable Object indexes in one streaming pass after answering (phase `indexing`). Prints the answer
 * time, the index time (until the phase moves on)
 * (rows per second) and every workerd process's peak resident memory (VmHWM) after each, against the bound the
 * e2e test states (256 MiB). Local workerd enforces no isolate heap limit, so its RSS also holds garbage V8 has not
 * collected yet; the same index pass run in Node with the V8 heap capped at 48 MiB over 3,000,000 rows shows what
 * the pass itself needs (it would die of OOM if it held rows). Also: `POST /runs` with `generate.count` at its maximum
 * (a count of 1,000,000 was once 10 s of work and 1.76 GiB; tasks are now made lazily) and an
 * over-limit inline body (413) must answer fast.
 */
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { startLocalWorker } from "../src/cli/dev/worker.ts";
import { startDatasetServer } from "../test/support/dataset-server.ts";
import { processMemoryMiB, workerdPids } from "../test/support/process-memory.ts";
import { summarize, type BenchResult } from "./harness.ts";

/** The bound on each workerd process's peak RSS, MiB (test/e2e/datasets.test.ts states the same). */
const WORKERD_PEAK_BOUND_MIB = 256;
/** The V8 heap cap of the index-pass child, MiB: the pass over 3,000,000 rows must finish inside it. */
const INDEX_HEAP_CAP_MIB = 48;
/** An unroutable swarm: the run is created (datasets indexed) and never dispatches. */
const DEAD_SWARM = "http://127.0.0.1:9";

const base = { swarms: [{ url: DEAD_SWARM }], function: "countdown", batchSize: 2, numRepeat: 2, maxEnvWorker: 4, maxSteps: 10 };

/** Runs the dataset benchmarks (starts and stops its own local Worker and dataset server). */
export async function datasetBenchmarks(): Promise<BenchResult[]> {
  const server = await startDatasetServer();
  const worker = await startLocalWorker();
  const results: BenchResult[] = [];
  const auth = { authorization: `Bearer ${worker.token}` };
  const post = async (body: unknown): Promise<{ status: number; ms: number; answerMs: number; body: Record<string, unknown> }> => {
    const t0 = performance.now();
    const res = await fetch(`${worker.url}/runs`, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify(body) });
    const json = (await res.json()) as Record<string, unknown>;
    const answerMs = performance.now() - t0;
    // a large file is indexed after the answer (phase `indexing`): the index time runs until the phase moves on
    let phase = json["phase"];
    while (res.status === 201 && phase === "indexing") {
      await new Promise((r) => setTimeout(r, 50));
      phase = ((await (await fetch(`${worker.url}/runs/${String(json["runId"])}`, { headers: auth })).json()) as Record<string, unknown>)["phase"];
    }
    const ms = performance.now() - t0;
    if (res.status === 201) await fetch(`${worker.url}/runs/${String(json["runId"])}/stop`, { method: "POST", headers: auth });
    return { status: res.status, ms, answerMs, body: json };
  };
  const peakMiB = () => Math.max(0, ...workerdPids(worker.hostPid).map((p) => processMemoryMiB(p).peakMiB));
  try {
    await post({ ...base, datasets: [{ name: "warm", kind: "countdown", generate: { count: 8, seed: 1 } }] }); // starts the Worker's workerd
    const idle = peakMiB();
    for (const rows of [1_000_000, 3_000_000]) {
      const r = await post({ ...base, datasets: [{ name: `cd${rows}`, kind: "countdown", url: `${server.url}/countdown-${rows}.jsonl` }] });
      if (r.status !== 201) throw new Error(`POST /runs over ${rows} rows → ${r.status}: ${JSON.stringify(r.body)}`);
      const peak = peakMiB();
      const result = summarize(`datasets: index a ${rows.toLocaleString("en-US")}-row URL JSONL`, [r.ms], { targetMs: rows / 100, note: `POST /runs answered in ${r.answerMs.toFixed(0)} ms (phase ${String(r.body["phase"])}), indexed ${Math.round(rows / (r.ms / 1000)).toLocaleString("en-US")} rows/s; workerd peak RSS ${peak.toFixed(0)} MiB (idle ${idle.toFixed(0)} MiB)` });
      results.push({ ...result, memoryMiB: peak, memoryTargetMiB: WORKERD_PEAK_BOUND_MIB, metTarget: result.metTarget !== false && peak < WORKERD_PEAK_BOUND_MIB });
    }
    // the same index pass in Node with the V8 heap capped: it finishes, so its memory does not grow with the rows
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    const child = fileURLToPath(new URL("./index-heap.child.ts", import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, [`--max-old-space-size=${INDEX_HEAP_CAP_MIB}`, "--import", tsx, child, `${server.url}/countdown-3000000.jsonl`]);
    const heap = JSON.parse(stdout.trim().split("\n").pop()!) as { rows: number; ms: number; heapPeakMiB: number };
    const capped = summarize(`datasets: index 3,000,000 rows, V8 heap capped at ${INDEX_HEAP_CAP_MIB} MiB`, [heap.ms], { note: `${heap.rows.toLocaleString("en-US")} rows indexed; largest heap seen ${heap.heapPeakMiB.toFixed(1)} MiB (Node, the Worker's own indexJsonl)` });
    results.push({ ...capped, memoryMiB: heap.heapPeakMiB, memoryTargetMiB: INDEX_HEAP_CAP_MIB, metTarget: heap.rows === 3_000_000 && heap.heapPeakMiB < INDEX_HEAP_CAP_MIB });
    const gen = await post({ ...base, datasets: [{ name: "gen", kind: "countdown", generate: { count: 100_000, seed: 7 } }] });
    if (gen.status !== 201) throw new Error(`POST /runs with generate 100,000 → ${gen.status}`);
    results.push(summarize("datasets: POST /runs, generate.count 100,000 (lazy)", [gen.ms], { targetMs: 1000, note: "the AJET_MAX_GENERATED_TASKS maximum; tasks are made when first dispatched" }));
    const inline = Array.from({ length: 50_001 }, () => ({ target: 1, nums: [1] }));
    const big = await post({ ...base, datasets: [{ name: "big", kind: "countdown", tasks: inline }] });
    if (big.status !== 413) throw new Error(`POST /runs with 50,001 inline rows → ${big.status}, expected 413`);
    const peak = peakMiB();
    const over = summarize("datasets: POST /runs, 50,001 inline rows → 413", [big.ms], { targetMs: 1000, note: `workerd peak RSS after all: ${peak.toFixed(0)} MiB` });
    results.push({ ...over, memoryMiB: peak, memoryTargetMiB: WORKERD_PEAK_BOUND_MIB, metTarget: over.metTarget !== false && peak < WORKERD_PEAK_BOUND_MIB });
  } finally {
    await worker.dispose();
    await server.close();
  }
  return results;
}
