/**
 * A dataset host that stalls or trickles (issue 18), end to end on local workerd with the host on 127.0.0.1: one
 * that never answers, one that sends its headers and then nothing, and one that sends 32 bytes a second. `POST /runs`
 * answers each with a 400 naming the dataset, what arrived and the fix, within the caps' bound (edge/ground/caps
 * `postRunsBoundSeconds`: 10 s to the headers, 20 s of inline index pass, 5 s of the Worker's own work) — before,
 * they held it past 300 s and 67 s. No run is left behind: the token's quota slot is given back each time.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { CAPS, postRunsBoundSeconds } from "../../src/edge/ground/caps.ts";
import { startRig, type E2eRig } from "./_support.ts";

const ROW = `${JSON.stringify({ target: 10, nums: [1, 2, 3, 4] })}\n`;
const FILE = ROW.repeat(40); // 1.4 KB

/** The misbehaving host: `/stall` answers nothing, `/silent` sends its headers then nothing, `/trickle` 32 B/s. Ranged probes (`bytes=0-0`) of the last two answer at once. */
async function startSlowHost(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path.startsWith("/stall")) return; // never answers
    const probe = req.headers.range === "bytes=0-0";
    if (probe) return void res.writeHead(206, { "content-range": `bytes 0-0/${FILE.length}`, "content-length": "1", etag: '"v1"' }).end(FILE.slice(0, 1));
    res.writeHead(200, { "content-length": String(FILE.length), etag: '"v1"' });
    if (path.startsWith("/silent")) return void res.flushHeaders();
    let at = 0;
    const timer = setInterval(() => {
      if (at >= FILE.length || res.destroyed) return void clearInterval(timer);
      res.write(FILE.slice(at, at + 32));
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

describe("e2e: a dataset host that stalls or trickles", () => {
  let rig: E2eRig | undefined;
  let host: Awaited<ReturnType<typeof startSlowHost>> | undefined;
  afterAll(async () => {
    await rig?.session.close();
    await host?.close();
  });

  it("POST /runs answers 400 within its bound, naming the dataset and the fix", { timeout: 240_000 }, async () => {
    host = await startSlowHost();
    rig = await startRig(["--steps", "1", "--batch-size", "2", "--num-repeat", "2"]);
    const { url, token } = rig.session.worker;
    const defaults = { firstByteSeconds: CAPS.firstByteSeconds.default, inlineIndexSeconds: CAPS.inlineIndexSeconds.default };
    const boundMs = postRunsBoundSeconds(defaults, 1) * 1000 + 10_000; // + 10 s for a loaded 2-core machine
    const cases: Array<[string, RegExp]> = [
      ["stall", /the host sent no answer \(headers\) within 10 s/],
      ["silent", /the host sent nothing for 10 s/],
      ["trickle", /the host sends under 16384 bytes\/s/],
    ];
    const seen: Record<string, number> = {};
    for (const [path, why] of cases) {
      const spec = { ...(rig.session.spec as Record<string, unknown>), datasets: [{ name: "cd", kind: "countdown", url: `${host.url}/${path}/cd.jsonl` }] };
      const t0 = Date.now();
      const res = await fetch(`${url}/runs`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(spec) });
      const ms = Date.now() - t0;
      const text = await res.text();
      expect(text, `${path} after ${ms} ms`).toMatch(/^\{/);
      const body = JSON.parse(text) as { error: { issues: Array<{ path: string; message: string }> } };
      seen[path] = ms;
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(body.error.issues[0]).toMatchObject({ path: "datasets.0", message: expect.stringMatching(why) });
      expect(body.error.issues[0]!.message).toContain("R2");
      expect(ms, path).toBeLessThan(boundMs);
    }
    // nothing held: the runs list has no run of these specs
    const runs = (await (await fetch(`${url}/runs`, { headers: { authorization: `Bearer ${token}` } })).json()) as { runs: unknown[] };
    expect(runs.runs).toEqual([]);
    console.log(JSON.stringify({ answerMs: seen, boundMs }));
  });
});
