/**
 * Dataset files over http(s): ranged reads against a real socket on 127.0.0.1, a server without Range support
 * refused up front (it would make every row read download the whole file), a file replaced after indexing refused
 * (If-Match → 412), and a 100,000-row file indexed in one pass, then read row by row.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DatasetLoadError, DatasetNoRangeError, entryAt, chunkFromBytes, httpByteSource, indexJsonl, parseR2Url, readJsonlTask } from "../../../src/tasks/index.ts";
import { countdownRow, ROW_BYTES, startDatasetServer, type DatasetServer } from "../../support/dataset-server.ts";

let server: DatasetServer;
beforeAll(async () => {
  server = await startDatasetServer();
});
afterAll(async () => {
  await server.close();
});

describe("httpByteSource", () => {
  it("stat gives the size and ETag from a Range answer; read gives exactly the asked bytes", async () => {
    server.put("a.txt", new TextEncoder().encode("hello, dataset"));
    const source = httpByteSource(`${server.url}/files/a.txt`);
    const stat = await source.stat();
    expect(stat.size).toBe(14);
    expect(stat.etag).toMatch(/^"v\d+"$/);
    expect(new TextDecoder().decode(await source.read(7, 7, stat.etag))).toBe("dataset");
  });

  it("refuses a server that ignores Range requests, naming the URL and what to do", async () => {
    server.put("b.txt", new TextEncoder().encode("whole"));
    const err = await httpByteSource(`${server.url}/no-range/files/b.txt`).stat().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatasetLoadError);
    expect((err as Error).message).toBe(
      `dataset ${server.url}/no-range/files/b.txt is served without Range support (HTTP 200 to a Range request); ` +
        "serve it from a server that answers Range requests (any static file server, R2, S3), or put it in R2 (r2://BUCKET/KEY); " +
        "a Worker with the R2 bucket DATASETS bound copies such a file there itself",
    );
    expect(err).toBeInstanceOf(DatasetNoRangeError);
  });

  it("refuses a read of a file replaced since it was indexed (If-Match → 412)", async () => {
    server.put("c.txt", new TextEncoder().encode("version one"));
    const source = httpByteSource(`${server.url}/files/c.txt`);
    const { etag } = await source.stat();
    server.put("c.txt", new TextEncoder().encode("version two"));
    await expect(source.read(0, 7, etag)).rejects.toThrow(`dataset ${server.url}/files/c.txt changed since the run indexed it (ETag differs); start a new run`);
  });

  it("names the URL and status for a missing file", async () => {
    await expect(httpByteSource(`${server.url}/files/missing`).stat()).rejects.toThrow(`cannot fetch dataset ${server.url}/files/missing: HTTP 404`);
  });

  it("indexes a 100,000-row file in one streaming pass, then reads any row alone", async () => {
    const n = 100_000;
    const source = httpByteSource(`${server.url}/countdown-${n}.jsonl`);
    const { size, etag } = await source.stat();
    expect(size).toBe(n * ROW_BYTES);
    const chunks: Float64Array[] = [];
    const options = { name: "cd", kind: "countdown" as const, split: "big" };
    const before = server.bytesSent();
    const found = await indexJsonl(await source.stream(etag), options, { putChunk: (_c, e) => void chunks.push(e), claimId: () => undefined }, { maxRowBytes: 1024, maxRows: n, limitName: "AJET_MAX_DATASET_ROWS" });
    expect(found).toMatchObject({ count: n, rejected: 0 });
    expect(server.bytesSent() - before).toBe(size);
    const entry = entryAt(chunkFromBytes(new Uint8Array(chunks[12]!.buffer)), 345);
    const i = 12 * 4096 + 345;
    expect(entry).toEqual({ offset: i * ROW_BYTES, length: ROW_BYTES - 1, index: i, line: i + 1, digest: expect.any(Number) });
    const afterIndex = server.bytesSent();
    const task = await readJsonlTask(source, etag, entry, options);
    expect(server.bytesSent() - afterIndex).toBe(ROW_BYTES - 1); // one row's bytes, not the file
    expect(task).toMatchObject({ task_id: `cd:big:${i}`, metadata: countdownRow(i) });
  });
});

describe("parseR2Url", () => {
  it("splits r2://BUCKET/KEY (the key may hold slashes) and refuses anything else", () => {
    expect(parseR2Url("r2://DATASETS/gsm8k/train.jsonl")).toEqual({ bucket: "DATASETS", key: "gsm8k/train.jsonl" });
    expect(["r2://DATASETS/", "r2://bad-name/x", "https://x/y", "r2:/DATASETS/x"].map(parseR2Url)).toEqual([null, null, null, null]);
  });
});
