/**
 * Datasets of any size in flat memory, end to end: `ajet-edge dev --dataset URL` over a 1,000,000-row JSONL file
 * behind a 127.0.0.1 HTTP server (rows made on the fly, Range requests), and then a run over a Parquet file from
 * the same server; the Worker in local workerd reads both itself (an index pass, then one ranged read per task).
 * Both runs train their steps, and every workerd process (Worker, Durable Object and queue together) stays under
 * WORKERD_PEAK_BOUND_MIB (256) over its whole life (the kernel's high-water mark, VmHWM).
 */
import { parquetWriteBuffer } from "hyparquet-writer";
import { afterAll, describe, expect, it } from "vitest";
import { waitForRun } from "../../src/cli/dev/runs-api.ts";
import { startDatasetServer, ROW_BYTES, type DatasetServer } from "../support/dataset-server.ts";
import { processMemoryMiB, workerdPids } from "../support/process-memory.ts";
import { startRig, stepsByGlobalStep, type E2eRig } from "./_support.ts";

/**
 * The bound on each workerd process's peak resident memory over its life, MiB. The process holds the runtime, the
 * Worker's and the Durable Object's isolates, their SQLite and V8 garbage it has not collected yet (local workerd
 * enforces no isolate limit, so V8 lets its heap grow lazily): measured about 80 MiB idle and 140–150 MiB peak over
 * both runs, and a further 3,000,000-row index adds under 20 MiB (`npm run bench`), so it does not grow with the
 * rows. Before this work, 100,000 inline tasks took workerd from 47 MiB to 1.1 GiB.
 */
const WORKERD_PEAK_BOUND_MIB = 256;
const ROWS = 1_000_000;

describe("e2e: a 1,000,000-row URL JSONL and a Parquet file, read by the Worker in flat memory", () => {
  let rig: E2eRig | undefined;
  let server: DatasetServer | undefined;
  afterAll(async () => {
    await rig?.session.close();
    await server?.close();
  });

  it("both runs train their steps and workerd's peak memory stays under the bound", { timeout: 240_000 }, async () => {
    server = await startDatasetServer();
    const url = `${server.url}/countdown-${ROWS}.jsonl`;
    rig = await startRig(["--dataset", url, "--batch-size", "4", "--num-repeat", "2", "--steps", "2"]);
    expect(rig.session.spec.datasets).toEqual([{ name: "countdown", kind: "countdown", split: `countdown-${ROWS}`, url }]);
    // every workerd process of the local Worker (wrangler runs its dev proxy's and, started on first use, the Worker's)
    const memory = () => workerdPids(rig!.session.worker.hostPid).map((p) => ({ pid: p, ...processMemoryMiB(p) }));
    const before = memory();

    const sentBefore = server.bytesSent();
    const t0 = Date.now();
    const created = await rig.api.create(rig.session.spec);
    const createMs = Date.now() - t0; // the file is over AJET_BACKGROUND_INDEX_BYTES: indexed after the answer
    expect(created).toMatchObject({ phase: "indexing", datasets: {} });
    const jsonl = await waitForRun(rig.api, created.runId, { timeoutMs: 90_000 });
    expect(jsonl.outcome).toBe("finished");
    expect(jsonl.status).toMatchObject({ stopReason: "maxSteps", totals: { episodesEnded: 16 } });
    expect(jsonl.status?.datasets).toEqual({ countdown: { accepted: ROWS, rejected: 0, namespace: `countdown:countdown-${ROWS}` } });
    // the file was read once whole (the index), then one row per task served: 2 steps × 4 tasks
    const read = server.bytesSent() - sentBefore;
    expect(read).toBeGreaterThanOrEqual(ROWS * ROW_BYTES);
    expect(read).toBeLessThan(ROWS * ROW_BYTES + 100 * ROW_BYTES);
    const afterJsonl = memory();

    // a Parquet file (gsm8k columns, 5 row groups) from the same server, through the same Worker
    const n = 5000;
    server.put("gsm8k-test.parquet", new Uint8Array(parquetWriteBuffer({
      columnData: [
        { name: "question", data: Array.from({ length: n }, (_, i) => `What is ${i} + 2?`), type: "STRING" },
        { name: "answer", data: Array.from({ length: n }, (_, i) => `${i} + 2 = ${i + 2}\n#### ${i + 2}`), type: "STRING" },
      ],
      rowGroupSize: 1000,
    })));
    const parquetSpec = { ...rig.session.spec, function: "math-agent", datasets: [{ name: "gsm8k", kind: "gsm8k" as const, split: "test", url: `${server.url}/files/gsm8k-test.parquet` }] };
    const pq = await rig.api.create(parquetSpec);
    expect(pq.datasets).toEqual({ gsm8k: { accepted: n, rejected: 0, namespace: "gsm8k:test" } });
    const parquet = await waitForRun(rig.api, pq.runId, { timeoutMs: 60_000 });
    expect(parquet.outcome).toBe("finished");
    expect(parquet.status).toMatchObject({ stopReason: "maxSteps", totals: { episodesEnded: 16 } });
    const trained = [...stepsByGlobalStep(rig.emulator).values()].flatMap((s) => s.completedTaskIds);
    expect(trained.filter((id) => id.startsWith("gsm8k:test:"))).toHaveLength(8);
    expect(trained.filter((id) => id.startsWith(`countdown:countdown-${ROWS}:`))).toHaveLength(8);

    const after = memory();
    console.log(JSON.stringify({ workerdMiB: { before, afterJsonl, after }, createMs, bytesRead: read }));
    expect(after.length).toBeGreaterThan(0);
    for (const m of after) expect(m.peakMiB).toBeLessThan(WORKERD_PEAK_BOUND_MIB);
  });
});
