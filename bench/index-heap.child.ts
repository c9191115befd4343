/**
 * @module bench/index-heap.child — run by datasets.bench with a capped V8 heap (`--max-old-space-size`): indexes a
 * URL JSONL file with the Worker's own index pass (`indexJsonl` over `httpByteSource`) and prints, as one JSON line,
 * the rows, the time and the largest V8 heap seen (sampled at every index chunk). Finishing under the cap is the
 * proof that the pass runs in flat memory: a heap that grew with the rows would die of OOM.
 */
import { httpByteSource, indexJsonl } from "../src/tasks/index.ts";

const url = process.argv[2];
if (!url) throw new Error("usage: index-heap.child.ts URL");
const source = httpByteSource(url);
const { etag } = await source.stat();
let heapPeak = 0;
const t0 = performance.now();
const found = await indexJsonl(
  await source.stream(etag),
  { name: "cd", kind: "countdown", split: "bench" },
  { putChunk: () => void (heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed)), claimId: () => undefined },
  { maxRowBytes: 1 << 20, maxRows: 1e8, limitName: "AJET_MAX_DATASET_ROWS" },
);
console.log(JSON.stringify({ rows: found.count, ms: performance.now() - t0, heapPeakMiB: heapPeak / 2 ** 20 }));
