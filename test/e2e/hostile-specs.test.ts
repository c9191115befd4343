/**
 * Hostile run specs on a fresh local Worker (issue 18): the bodies that took workerd to 3.3 GB (2,000 swarms, a
 * 156 KiB body) and to a 500 after 12 s (10,000 datasets, SQLITE_TOOBIG) now get a 413 naming the field and the cap
 * within ANSWER_BOUND_MS, `/health` keeps answering, and every workerd process of the Worker stays under
 * WORKERD_PEAK_BOUND_MIB over its whole life (the kernel's high-water mark, VmHWM).
 */
import { afterAll, describe, expect, it } from "vitest";
import { processMemoryMiB, workerdPids } from "../support/process-memory.ts";
import { startRig, type E2eRig } from "./_support.ts";

/** Each workerd process's peak resident memory over its life, MiB (as test/e2e/datasets.test.ts). */
const WORKERD_PEAK_BOUND_MIB = 256;
/** The answer to a hostile body, ms: generous for a loaded 2-core machine; before the caps there was no answer in 180 s. */
const ANSWER_BOUND_MS = 10_000;

describe("e2e: hostile run specs get a fast 4xx without growing workerd", () => {
  let rig: E2eRig | undefined;
  afterAll(async () => {
    await rig?.session.close();
  });

  it("2,000 swarms and 10,000 datasets → 413 naming the field and the cap, /health answers, workerd stays under the bound", { timeout: 180_000 }, async () => {
    rig = await startRig(["--steps", "1", "--batch-size", "2", "--num-repeat", "2"]);
    const { url, token } = rig.session.worker;
    const memory = () => workerdPids(rig!.session.worker.hostPid).map((p) => ({ pid: p, ...processMemoryMiB(p) }));
    const post = async (body: unknown) => {
      const text = JSON.stringify(body);
      const t0 = Date.now();
      const res = await fetch(`${url}/runs`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: text });
      const json = (await res.json()) as { error: { issues: Array<{ path: string; message: string }> } };
      return { status: res.status, json, ms: Date.now() - t0, bytes: text.length };
    };
    const spec = rig.session.spec as Record<string, unknown>;
    const swarmUrl = (spec.swarms as Array<{ url: string }>)[0]!.url;
    const before = memory();

    const swarms = Array.from({ length: 2000 }, (_, i) => ({ name: `swarm-${i}`, url: swarmUrl, headers: { "X-Team": "research" }, engine: { start: "never" } }));
    const many = await post({ ...spec, swarms });
    expect(many.bytes).toBeGreaterThan(150_000);
    expect(many.status).toBe(413);
    expect(many.json.error.issues[0]).toMatchObject({ path: "swarms", message: expect.stringContaining("2000 entries is over the cap of 16 (AJET_MAX_SWARMS") });
    expect(many.ms).toBeLessThan(ANSWER_BOUND_MS);

    const datasets = Array.from({ length: 10_000 }, (_, i) => ({ name: `d${i}`, kind: "countdown", url: `http://127.0.0.1:9/d${i}.jsonl` }));
    const lots = await post({ ...spec, datasets });
    expect(lots.bytes).toBeGreaterThan(600_000);
    expect(lots.status).toBe(413);
    expect(lots.json.error.issues[0]).toMatchObject({ path: "datasets", message: expect.stringContaining("10000 entries is over the cap of 64 (AJET_MAX_DATASETS") });
    expect(lots.ms).toBeLessThan(ANSWER_BOUND_MS);

    // ten more of each, back to back: nothing accumulates
    for (let i = 0; i < 10; i++) {
      expect((await post({ ...spec, swarms })).status).toBe(413);
      expect((await post({ ...spec, datasets })).status).toBe(413);
    }
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);

    const after = memory();
    console.log(JSON.stringify({ workerdMiB: { before, after }, answerMs: { swarms: many.ms, datasets: lots.ms }, bodyBytes: { swarms: many.bytes, datasets: lots.bytes } }));
    expect(after.length).toBeGreaterThan(0);
    for (const m of after) expect(m.peakMiB).toBeLessThan(WORKERD_PEAK_BOUND_MIB);
  });
});
