/**
 * @module test/support/slow-host — a dataset host on 127.0.0.1 (port 0) that misbehaves by path, for the issue-18
 * tests: `/stall/…` answers nothing, `/silent/…` sends its headers then nothing, `/trickle/…` sends {@link SLOW_FILE}
 * at 32 bytes a second. Ranged probes (`bytes=0-0`) of the last two answer at once.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

const ROW = `${JSON.stringify({ target: 10, nums: [1, 2, 3, 4] })}\n`;
/** The file the host serves: 40 Countdown rows, 1.4 KB. */
export const SLOW_FILE = ROW.repeat(40);
/** Rows of {@link SLOW_FILE}. */
export const SLOW_FILE_ROWS = 40;

/** A running slow host: its base URL and `close()` (drops every open connection). */
export interface SlowHost {
  url: string;
  close(): Promise<void>;
}

/** Starts the host on a free loopback port. */
export async function startSlowHost(): Promise<SlowHost> {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path.startsWith("/stall")) return; // never answers
    const probe = req.headers.range === "bytes=0-0";
    if (probe)
      return void res.writeHead(206, { "content-range": `bytes 0-0/${SLOW_FILE.length}`, "content-length": "1", etag: '"v1"' }).end(SLOW_FILE.slice(0, 1));
    res.writeHead(200, { "content-length": String(SLOW_FILE.length), etag: '"v1"' });
    if (path.startsWith("/silent")) return void res.flushHeaders();
    let at = 0;
    const timer = setInterval(() => {
      if (at >= SLOW_FILE.length || res.destroyed) return void clearInterval(timer);
      res.write(SLOW_FILE.slice(at, at + 32));
      at += 32;
    }, 1000);
    res.on("close", () => clearInterval(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}
