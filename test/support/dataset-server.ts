/**
 * @module test/support/dataset-server — a dataset file server on 127.0.0.1 (port 0) for tests and the bench, with
 * Range requests (206, Content-Range), a strong ETag and If-Match (412), like a static file server or S3:
 *  - `GET /countdown-<n>.jsonl`: n Countdown rows made on the fly (row i is a fixed-width line, so any byte range is
 *    computed without a file: 1,000,000 rows are 48 MB served from nothing);
 *  - `GET /files/<name>`: a buffer registered with `put(name, bytes)` (e.g. a Parquet file);
 *  - `GET /no-range/<path>`: the same, answering every request 200 with the whole body (a server without Range).
 * It counts the bytes it sent, so a test can show a dataset was read once, then row by row.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** Bytes per generated row, the newline included. */
export const ROW_BYTES = 48;

/** Row i of the generated Countdown file: four numbers and their sum (always solvable), padded to ROW_BYTES. */
export function countdownRow(i: number): { target: number; nums: number[] } {
  const nums = [(i % 97) + 1, (Math.floor(i / 97) % 89) + 1, (Math.floor(i / 8633) % 7) + 2, 3];
  return { target: nums.reduce((a, b) => a + b, 0), nums };
}

function rowLine(i: number): string {
  return JSON.stringify(countdownRow(i)).padEnd(ROW_BYTES - 1, " ") + "\n";
}

/** Bytes [start, end) of the generated file of n rows. */
function generatedBytes(n: number, start: number, end: number): Buffer {
  const first = Math.floor(start / ROW_BYTES);
  const last = Math.min(n, Math.ceil(end / ROW_BYTES));
  let text = "";
  for (let i = first; i < last; i++) text += rowLine(i);
  return Buffer.from(text, "latin1").subarray(start - first * ROW_BYTES, end - first * ROW_BYTES);
}

/** A running dataset server. */
export interface DatasetServer {
  /** e.g. `http://127.0.0.1:40123` */
  url: string;
  /** bytes sent in response bodies so far */
  bytesSent(): number;
  /**
   * serves `bytes` at `/files/<name>` (and `/no-range/files/<name>`); a new version gets a new ETag, unless `etag`
   * is given (e.g. a weak `W/"same"` kept across versions, as a server that derives it from size and mtime)
   */
  put(name: string, bytes: Uint8Array, options?: { etag?: string }): void;
  close(): Promise<void>;
}

/** Starts the server (see the module doc). */
export async function startDatasetServer(): Promise<DatasetServer> {
  const files = new Map<string, { bytes: Uint8Array; etag: string }>();
  let version = 0;
  let sent = 0;
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    let path = new URL(req.url ?? "/", "http://x").pathname;
    const noRange = path.startsWith("/no-range/");
    if (noRange) path = path.slice("/no-range".length);
    let size: number;
    let etag: string;
    let slice: (start: number, end: number) => Uint8Array;
    const generated = /^\/countdown-(\d+)\.jsonl$/.exec(path);
    if (generated) {
      const n = Number(generated[1]);
      size = n * ROW_BYTES;
      etag = `"countdown-${n}"`;
      slice = (s, e) => generatedBytes(n, s, e);
    } else if (path.startsWith("/files/") && files.has(path.slice(7))) {
      const f = files.get(path.slice(7))!;
      size = f.bytes.byteLength;
      etag = f.etag;
      slice = (s, e) => f.bytes.subarray(s, e);
    } else {
      res.writeHead(404).end("not found");
      return;
    }
    const ifMatch = req.headers["if-match"];
    if (!noRange && ifMatch !== undefined && ifMatch !== etag) {
      res.writeHead(412).end();
      return;
    }
    const range = noRange ? null : /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
    const start = range ? Number(range[1]) : 0;
    const end = range ? Math.min(size, range[2] ? Number(range[2]) + 1 : size) : size;
    if (range && start >= size) {
      res.writeHead(416, { "content-range": `bytes */${size}` }).end();
      return;
    }
    const headers = { etag, "accept-ranges": noRange ? "none" : "bytes", "content-length": String(end - start), "content-type": "application/octet-stream" };
    res.writeHead(range ? 206 : 200, range ? { ...headers, "content-range": `bytes ${start}-${end - 1}/${size}` } : headers);
    if (req.method === "HEAD") return void res.end();
    // in blocks, with back-pressure: a 48 MB body is never built at once
    const BLOCK = 1024 * ROW_BYTES;
    let at = start;
    const pump = () => {
      while (at < end) {
        const chunk = slice(at, Math.min(end, at + BLOCK));
        at += chunk.byteLength;
        sent += chunk.byteLength;
        if (!res.write(chunk)) return void res.once("drain", pump);
      }
      res.end();
    };
    pump();
  };
  const server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bytesSent: () => sent,
    put(name, bytes, options) {
      files.set(name, { bytes, etag: options?.etag ?? `"v${++version}"` });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
