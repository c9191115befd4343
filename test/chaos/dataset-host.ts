/**
 * @module test/chaos/dataset-host — the misbehaving dataset host of the chaos rows of issue 18, on 127.0.0.1 (port 0),
 * serving one Countdown JSONL file (40 rows, ~1.4 KB) with Range support (206, Content-Range) as the Worker needs:
 *  - `changed`: a weak ETag (`W/"same"`) that never changes; {@link ChaosDatasetHost.replace} swaps the file for rows
 *    of the same byte lengths (the numbers in another order), so no validator says it changed;
 *  - `stalled`: every request gets its headers, then nothing;
 *  - `trickling`: every body (whole or ranged) is sent at 32 bytes a second.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** How the host misbehaves. */
export type DatasetHostMode = "changed" | "stalled" | "trickling";

/** Rows of the served file. */
export const HOST_ROWS = 40;

/** Bytes a second the trickling host sends. */
export const TRICKLE_BYTES_PER_S = 32;

/** Row i before and after the replacement: the same target and byte length, the numbers in another order. */
function row(i: number, replaced: boolean): string {
  const nums = [(i % 9) + 1, (i % 7) + 2, 3, 4];
  return JSON.stringify({ target: nums.reduce((a, b) => a + b, 0), nums: replaced ? [...nums].reverse() : nums });
}

function file(replaced: boolean): Buffer {
  return Buffer.from(`${Array.from({ length: HOST_ROWS }, (_, i) => row(i, replaced)).join("\n")}\n`);
}

/** A running dataset host. */
export interface ChaosDatasetHost {
  /** the dataset's URL */
  url: string;
  /** the file's size, bytes */
  bytes: number;
  /** swaps the file for rows of the same byte lengths behind the same weak ETag; epoch ms of the swap */
  replace(): number;
  /** epoch ms of the swap, null before */
  replacedAt: number | null;
  close(): Promise<void>;
}

/** Starts the host in `mode`. */
export async function startChaosDatasetHost(mode: DatasetHostMode): Promise<ChaosDatasetHost> {
  let body = file(false);
  const timers = new Set<ReturnType<typeof setInterval>>();
  const server: Server = createServer((req, res) => {
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
    const start = range ? Number(range[1]) : 0;
    const end = range ? Math.min(body.length, range[2] ? Number(range[2]) + 1 : body.length) : body.length;
    const etag = mode === "changed" ? 'W/"same"' : '"v1"';
    if (req.headers["if-match"] !== undefined && req.headers["if-match"] !== etag) return void res.writeHead(412).end();
    if (range && start >= body.length) return void res.writeHead(416, { "content-range": `bytes */${body.length}` }).end();
    const headers = { "content-length": String(end - start), etag, "accept-ranges": "bytes", ...(range ? { "content-range": `bytes ${start}-${end - 1}/${body.length}` } : {}) };
    res.writeHead(range ? 206 : 200, headers);
    const bytes = body.subarray(start, end);
    if (mode === "stalled") return void res.flushHeaders();
    if (mode === "changed") return void res.end(bytes);
    let at = 0;
    const send = () => {
      if (res.destroyed || at >= bytes.length) {
        clearInterval(timer);
        timers.delete(timer);
        if (!res.destroyed) res.end();
        return;
      }
      res.write(bytes.subarray(at, at + TRICKLE_BYTES_PER_S));
      at += TRICKLE_BYTES_PER_S;
    };
    const timer = setInterval(send, 1000);
    timers.add(timer);
    send();
    res.on("close", () => (clearInterval(timer), timers.delete(timer)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const host: ChaosDatasetHost = {
    url: `http://127.0.0.1:${port}/${mode}/countdown.jsonl`,
    bytes: body.length,
    replacedAt: null,
    replace() {
      body = file(true);
      host.replacedAt = Date.now();
      return host.replacedAt;
    },
    close: () =>
      new Promise((resolve) => {
        for (const t of timers) clearInterval(t);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return host;
}
