/**
 * The lazy dataset index: one streaming pass over a JSONL file (in chunks that split lines and UTF-8 characters
 * anywhere) or a Parquet file (row group by row group) accepts and refuses exactly the rows the in-memory loader
 * does, and reading one task back from its entry gives the loader's task, id included.
 */
import { parquetWriteBuffer } from "hyparquet-writer";
import { describe, expect, it, vi } from "vitest";
import {
  chunkFromBytes,
  DatasetChangedError,
  DatasetLoadError,
  DatasetSlowError,
  entryAt,
  LEGACY_INDEX_FIELDS,
  INDEX_FIELDS,
  formatOf,
  INDEX_CHUNK_ENTRIES,
  indexJsonl,
  indexParquet,
  parquetFile,
  parquetMetadata,
  parseTasks,
  readJsonlTask,
  readParquetTask,
  tasksFromObjects,
  type ByteSource,
  type IndexSink,
} from "../../../src/tasks/index.ts";

/** A file in memory as a ByteSource (what an http server with Range support or R2 gives). */
function memorySource(bytes: Uint8Array): ByteSource {
  return {
    where: "mem://test",
    stat: async () => ({ size: bytes.byteLength, etag: null }),
    stream: async () => streamOf(bytes, 3),
    read: async (offset, length) => bytes.slice(offset, offset + length),
  };
}

/** The bytes as a stream of `size`-byte chunks (so lines, CRLFs, BOMs and UTF-8 sequences are split). */
function streamOf(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.byteLength) return c.close();
      c.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

/** A sink that keeps chunks and ids in maps (the Durable Object keeps them in SQLite). */
function memorySink(): IndexSink & { chunks: Map<number, Uint8Array>; entries(): ReturnType<typeof entryAt>[] } {
  const chunks = new Map<number, Uint8Array>();
  const ids = new Map<string, number>();
  return {
    chunks,
    putChunk: (chunk, entries) => void chunks.set(chunk, new Uint8Array(entries.buffer.slice(0))),
    claimId: (id, line) => {
      const first = ids.get(id);
      if (first === undefined) ids.set(id, line);
      return first;
    },
    entries() {
      return [...chunks.keys()].sort((a, b) => a - b).flatMap((k) => {
        const c = chunkFromBytes(chunks.get(k)!);
        return Array.from({ length: c.length / INDEX_FIELDS }, (_, i) => entryAt(c, i));
      });
    },
  };
}

const LIMITS = { maxRowBytes: 1024, maxRows: 1_000_000, limitName: "AJET_MAX_DATASET_ROWS" };
const GSM = { name: "gsm8k", kind: "gsm8k" as const, split: "test" };

describe("indexJsonl", () => {
  const text =
    "\uFEFF" +
    [
      JSON.stringify({ question: "2 + 3 = ?  (ünïcödé, 😀)", answer: "so #### 5" }),
      "",
      "   ",
      JSON.stringify({ question: "no gold", answer: "none" }),
      "{not json",
      JSON.stringify({ question: "with an own id", answer: "#### 7", task_id: "a" }),
      JSON.stringify({ question: "same own id", answer: "#### 8", task_id: "a" }),
      JSON.stringify({ question: "line sep \u2028 inside", answer: "#### 9" }) + "\r",
      "[1, 2]",
      JSON.stringify({ question: "last, no newline", answer: "#### 10" }),
    ].join("\n");
  const bytes = new TextEncoder().encode(text);

  it("accepts and refuses the lines parseTasks does, and each entry reads back as parseTasks's task (ids included)", async () => {
    const sink = memorySink();
    const found = await indexJsonl(streamOf(bytes, 3), GSM, sink, LIMITS);
    const expected = parseTasks(text, GSM);
    expect(found.count).toBe(expected.tasks.length);
    expect(found.rejected).toBe(expected.report.rejected.length);
    expect(found.samples.map((r) => r.line)).toEqual(expected.report.rejected.map((r) => r.line));
    expect(found.samples.find((r) => r.line === 7)?.reason).toContain('duplicate task_id "a" (first at line 6)');
    const source = memorySource(bytes);
    const read = await Promise.all(sink.entries().map((e) => readJsonlTask(source, null, e, GSM)));
    expect(read).toEqual(expected.tasks);
    expect(read.map((t) => t.task_id)).toEqual(["gsm8k:test:0", "gsm8k:test:id=a", "gsm8k:test:5", "gsm8k:test:7"]);
  });

  it("a row replaced by one of the same byte length (no validator changed) is refused on read, naming the line; an old 4-number index reads as before", async () => {
    const rows = (swap: boolean) => new TextEncoder().encode([0, 1, 2].map((i) => JSON.stringify({ question: swap && i === 1 ? "b?" : "a?", answer: `#### ${i}` })).join("\n"));
    const sink = memorySink();
    await indexJsonl(streamOf(rows(false), 7), GSM, sink, LIMITS);
    const entries = sink.entries();
    expect(entries.every((e) => typeof e.digest === "number")).toBe(true);
    const swapped = memorySource(rows(true));
    expect(swapped.stat).toBeDefined();
    await expect(readJsonlTask(swapped, null, entries[0]!, GSM)).resolves.toMatchObject({ task_id: "gsm8k:test:0" });
    const err = await readJsonlTask(swapped, null, entries[1]!, GSM).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatasetChangedError);
    expect((err as Error).message).toBe("dataset mem://test line 2 is not the row the run indexed (its bytes differ); the file was replaced during the run: start a new run on the new file");
    // a chunk stored before digests (4 numbers per entry) reads without a digest
    const legacy = new Float64Array([entries[1]!.offset, entries[1]!.length, 1, 2]);
    expect(entryAt(legacy, 0, LEGACY_INDEX_FIELDS)).toEqual({ offset: entries[1]!.offset, length: entries[1]!.length, index: 1, line: 2, digest: null });
  });

  it("refuses a line over maxRowBytes without holding it, and the rows after it keep their ids", async () => {
    const long = JSON.stringify({ question: "x".repeat(5000), answer: "#### 1" });
    const t = [JSON.stringify({ question: "a", answer: "#### 1" }), long, JSON.stringify({ question: "b", answer: "#### 2" })].join("\n");
    const sink = memorySink();
    const found = await indexJsonl(streamOf(new TextEncoder().encode(t), 100), GSM, sink, LIMITS);
    expect(found).toMatchObject({ count: 2, rejected: 1 });
    expect(found.samples[0]).toEqual({ line: 2, reason: "the line is over 1024 bytes; shorten it or raise AJET_MAX_ROW_BYTES" });
    expect(sink.entries().map((e) => e.index)).toEqual([0, 2]);
  });

  it("writes entries in chunks of INDEX_CHUNK_ENTRIES and stops with the limit's name past maxRows", async () => {
    const n = INDEX_CHUNK_ENTRIES + 10;
    const many = new TextEncoder().encode(Array.from({ length: n }, (_, i) => JSON.stringify({ question: `q${i}`, answer: `#### ${i}` })).join("\n"));
    const sink = memorySink();
    expect((await indexJsonl(streamOf(many, 4096), GSM, sink, LIMITS)).count).toBe(n);
    expect([...sink.chunks.keys()]).toEqual([0, 1]);
    expect(chunkFromBytes(sink.chunks.get(1)!).length).toBe(10 * INDEX_FIELDS);
    const err = await indexJsonl(streamOf(many, 4096), GSM, memorySink(), { ...LIMITS, maxRows: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatasetLoadError);
    expect((err as Error).message).toContain("more than 100 usable rows (AJET_MAX_DATASET_ROWS)");
  });
});

describe("indexParquet", () => {
  it("indexes row group by row group and reads single rows back as tasks (INT64 columns as numbers)", async () => {
    const rows = Array.from({ length: 25 }, (_, i) => ({ question: `q${i}`, answer: i === 3 ? "no gold" : `#### ${i}`, level: BigInt(i) }));
    const buffer = parquetWriteBuffer({
      columnData: [
        { name: "question", data: rows.map((r) => r.question), type: "STRING" },
        { name: "answer", data: rows.map((r) => r.answer), type: "STRING" },
        { name: "level", data: rows.map((r) => r.level), type: "INT64" },
      ],
      rowGroupSize: 10,
    });
    const bytes = new Uint8Array(buffer);
    const file = parquetFile(memorySource(bytes), bytes.byteLength, null);
    const expected = tasksFromObjects(rows, GSM);
    expect(expected.report.rejected.map((r) => r.line)).toEqual([4]);
    const sink = memorySink();
    const found = await indexParquet("mem://gsm.parquet", file, GSM, sink, LIMITS);
    expect(found).toMatchObject({ count: 24, rejected: 1, samples: [{ line: 4 }] });
    const metadata = await parquetMetadata("mem://gsm.parquet", file);
    expect(metadata.row_groups.map((g) => Number(g.num_rows))).toEqual([10, 10, 5]);
    const read = await Promise.all(sink.entries().map((e) => readParquetTask("mem://gsm.parquet", file, metadata, e, GSM)));
    expect(read).toEqual(expected.tasks);
    expect(read[20]).toMatchObject({ task_id: "gsm8k:test:21", metadata: { level: 21, gold: "21" } });
  });

  it("has a total time budget (the clock driven here): past it the pass fails naming the file, the budget and its setting", async () => {
    const rows = Array.from({ length: 25 }, (_, i) => ({ question: `q${i}`, answer: `#### ${i}` }));
    const buffer = parquetWriteBuffer({ columnData: [{ name: "question", data: rows.map((r) => r.question), type: "STRING" }, { name: "answer", data: rows.map((r) => r.answer), type: "STRING" }], rowGroupSize: 5 });
    const bytes = new Uint8Array(buffer);
    let nowMs = 0;
    let reads = 0;
    // every ranged read takes 1 s of the driven clock (each within its own bounds; together past the budget)
    const slow: ByteSource = { ...memorySource(bytes), read: async (offset, length) => ((nowMs += 1000), reads++, bytes.slice(offset, offset + length)) };
    const budget = { deadlineAtMs: 3000, seconds: 3, setting: "AJET_INDEX_BUDGET_SECONDS", now: () => nowMs };
    const err = await indexParquet("https://h/slow.parquet", parquetFile(slow, bytes.byteLength, null), GSM, memorySink(), LIMITS, budget).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatasetSlowError);
    expect((err as Error).message).toBe("Parquet dataset https://h/slow.parquet: its index pass took longer than its budget of 3 s (AJET_INDEX_BUDGET_SECONDS); serve the file from a faster host, or put it in R2 (r2://BUCKET/KEY)");
    expect(reads).toBeLessThanOrEqual(4); // no read is asked for once the budget is spent

    // the same file within an ample budget: every row
    nowMs = 0;
    const found = await indexParquet("https://h/slow.parquet", parquetFile(slow, bytes.byteLength, null), GSM, memorySink(), LIMITS, { ...budget, deadlineAtMs: 1_000_000 });
    expect(found).toMatchObject({ count: 25, rejected: 0 });
  });

  it("a read that never answers fails the pass when the budget ends (timers driven, no real wait)", async () => {
    const rows = Array.from({ length: 5 }, (_, i) => ({ question: `q${i}`, answer: `#### ${i}` }));
    const bytes = new Uint8Array(parquetWriteBuffer({ columnData: [{ name: "question", data: rows.map((r) => r.question), type: "STRING" }, { name: "answer", data: rows.map((r) => r.answer), type: "STRING" }] }));
    vi.useFakeTimers();
    try {
      const stalled: ByteSource = { ...memorySource(bytes), read: () => new Promise<Uint8Array>(() => undefined) };
      const budget = { deadlineAtMs: Date.now() + 600_000, seconds: 600, setting: "AJET_INDEX_BUDGET_SECONDS" };
      const pass = indexParquet("https://h/stalled.parquet", parquetFile(stalled, bytes.byteLength, null), GSM, memorySink(), LIMITS, budget).catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(599_000);
      let settled = false;
      void pass.then(() => (settled = true));
      await vi.advanceTimersByTimeAsync(0);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1_000);
      const err = await pass;
      expect(err).toBeInstanceOf(DatasetSlowError);
      expect((err as Error).message).toMatch(/^Parquet dataset https:\/\/h\/stalled\.parquet: its index pass took longer than its budget of 600 s \(AJET_INDEX_BUDGET_SECONDS\)/);
    } finally {
      vi.useRealTimers();
    }
  });

  it("names the file when it is not Parquet", async () => {
    const bytes = new TextEncoder().encode('{"question": "not parquet"}\n');
    const err = await indexParquet("mem://x.parquet", parquetFile(memorySource(bytes), bytes.byteLength, null), GSM, memorySink(), LIMITS).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatasetLoadError);
    expect((err as Error).message).toMatch(/^cannot read Parquet dataset mem:\/\/x\.parquet: /);
  });
});

describe("formatOf", () => {
  it("reads .parquet (before a query) as Parquet and anything else as JSONL", () => {
    expect(["https://h/a.parquet", "r2://DATASETS/x/train.PARQUET?v=1", "https://h/a.jsonl", "https://h/a"].map(formatOf)).toEqual(["parquet", "parquet", "jsonl", "jsonl"]);
  });
});
