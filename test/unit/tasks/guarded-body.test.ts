import { describe, expect, it } from "vitest";
import { DatasetLoadError, guardedBody, httpByteSource } from "../../../src/tasks/index.ts";

const timing = { firstByteMs: 200, idleMs: 150, minBytesPerSecond: 1000, rateGraceMs: 100 };

/** A body that sends `chunks` (bytes each) every `everyMs`, then ends (or never does: `end: false`). */
function paced(chunks: number[], everyMs: number, end = true): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    async pull(c) {
      await new Promise((r) => setTimeout(r, everyMs));
      if (i < chunks.length) return c.enqueue(new Uint8Array(chunks[i++]!));
      if (end) return c.close();
      await new Promise(() => undefined);
    },
  });
}

const drain = async (s: ReadableStream<Uint8Array>) => new Uint8Array(await new Response(s).arrayBuffer()).byteLength;

describe("guardedBody", () => {
  it("passes a steady body through whole", async () => {
    expect(await drain(guardedBody(paced([500, 500, 500], 5), "http://h/x", timing))).toBe(1500);
  });
  it("cuts a body that goes silent, naming what arrived and the fix", async () => {
    const err = await drain(guardedBody(paced([500], 5, false), "http://h/x", timing)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatasetLoadError);
    expect((err as Error).message).toMatch(/^dataset http:\/\/h\/x: the host sent nothing for 0\.15 s \(500 bytes in 0 s\); serve the file from a host that sends it steadily, or put it in R2/);
  });
  it("cuts a body that trickles under the least rate once past the grace", async () => {
    const err = await drain(guardedBody(paced(Array(50).fill(4), 20), "http://h/x", timing)).catch((e: unknown) => e);
    expect((err as Error).message).toContain("the host sends under 1000 bytes/s");
  });
  it("cuts a body past its deadline", async () => {
    const err = await drain(guardedBody(paced(Array(50).fill(500), 20), "http://h/x", { ...timing, idleMs: 10_000 }, Date.now() + 120)).catch((e: unknown) => e);
    expect((err as Error).message).toContain("the read took longer than its budget");
  });
});

describe("httpByteSource timing", () => {
  it("gives up on a host that sends no headers within firstByteMs", async () => {
    const never: typeof fetch = (_input, init) => new Promise((_, reject) => init?.signal?.addEventListener("abort", () => reject(new Error("aborted"))));
    const err = await httpByteSource("http://h/x", { fetch: never, timing }).stat().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatasetLoadError);
    expect((err as Error).message).toBe("dataset http://h/x: the host sent no answer (headers) within 0.2 s; serve the file from a host that answers, or put it in R2 (r2://BUCKET/KEY)");
  });
});
