/** Runs the load benchmark alone: `node --import tsx bench/run-load.ts [inFlight] [holdMs]` (prints its lines). */
import { formatLoad, measureLoad } from "./load.bench.ts";

const inFlight = Number(process.argv[2] ?? 2_000);
const holdMs = Number(process.argv[3] ?? 8_000);
const r = await measureLoad(inFlight, holdMs, (l) => { if (process.env["AJET_BENCH_TRACE"]) console.log(l); });
for (const line of formatLoad(r)) console.log(line);
console.log(JSON.stringify(r));
