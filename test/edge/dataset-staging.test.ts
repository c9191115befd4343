/**
 * A dataset host without Range support inside workerd (issue 18): the file is copied once into the R2 bucket DATASETS
 * (miniflare's) at `staged/<runId>/<name>` and read from there, and the copy is deleted when the run ends — finished,
 * stopped, or its creation failed — in the background (edge/run/dataset-staging `dropStagedLater`): the test waits
 * for the bucket's prefix to empty, with a generous bound.
 */
import { env, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { RunView } from "../../src/edge/run/run-views.ts";
import { apiFetch, CaptureServer, countdownSpec, createRun, DEAD_SWARM, type stubOf, TestEmulator, untilFinished } from "./support.ts";

const rows = Array.from({ length: 40 }, (_, i) => JSON.stringify({ target: 24, nums: [2, 3, 4], level: i })).join("\n") + "\n";

/** The keys of run `runId`'s copies in R2. */
async function stagedKeys(runId: string): Promise<string[]> {
  return (await env.DATASETS!.list({ prefix: `staged/${runId}/` })).objects.map((o) => o.key);
}

/** Waits (at most 20 s) until `check` holds; @returns its last value. */
async function until<T>(get: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
  let v = await get();
  for (let i = 0; i < 400 && !check(v); i++) {
    await new Promise((r) => setTimeout(r, 50));
    v = await get();
  }
  return v;
}

/** Runs the object's alarm until the run has left phase `indexing` (the background pass copies and indexes there). */
async function untilIndexed(stub: ReturnType<typeof stubOf>): Promise<RunView> {
  return until(
    async () => {
      await runDurableObjectAlarm(stub);
      return (await stub.status()) as unknown as RunView;
    },
    (v) => v.phase !== "indexing",
  );
}

describe("a dataset copied into R2 lives as long as its run", () => {
  it("a run read from its copy finishes: the copy is deleted", async () => {
    const host = await CaptureServer.serving(rows);
    const emu = await TestEmulator.start({ policy: { initialAccuracy: 1, malformedRate: 0 }, answerKey: [{ target: 24, nums: [2, 3, 4] }] });
    await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
    const spec = countdownSpec(emu.url, { maxSteps: 1, tuning: { statusPollRollingMs: 100, statusPollWaitingMs: 100 } });
    const { runId, view: created, stub } = await createRun({ ...spec, datasets: [{ name: "cd", kind: "countdown", url: `${host.url}/cd.jsonl` }] });
    expect(created.phase).toBe("indexing");
    const started = await untilIndexed(stub);
    expect(started.failure).toBeNull();
    expect(started.datasets).toEqual({ cd: { accepted: 40, rejected: 0, namespace: "cd:train" } });
    // while the run goes, its rows are read from the copy
    expect(await stagedKeys(runId)).toEqual([`staged/${runId}/cd`]);
    expect(await (await env.DATASETS!.get(`staged/${runId}/cd`))!.text()).toBe(rows);

    const view = await untilFinished(stub);
    expect(view).toMatchObject({ phase: "finished", stopReason: "maxSteps", totals: { episodesEnded: 4 } });
    expect(await until(() => stagedKeys(runId), (k) => k.length === 0)).toEqual([]);
    // the host saw its quick check and the one copy: no read per row
    expect((await host.received()).map((r) => r.method)).toEqual(["GET", "GET"]);
  });

  it("a run stopped while it goes: the copy is deleted", async () => {
    const host = await CaptureServer.serving(rows);
    const { runId, stub } = await createRun({ ...countdownSpec(DEAD_SWARM), datasets: [{ name: "cd", kind: "countdown", url: `${host.url}/cd.jsonl` }] });
    const started = await untilIndexed(stub);
    expect(started.failure).toBeNull();
    expect(await stagedKeys(runId)).toEqual([`staged/${runId}/cd`]);
    expect((await apiFetch(`/runs/${runId}/stop`, { method: "POST" })).status).toBe(200);
    const view = await until(async () => (await stub.status()) as unknown as RunView, (v) => v.phase === "finished");
    expect(view.stopReason).toBe("stopRequested");
    expect(await until(() => stagedKeys(runId), (k) => k.length === 0)).toEqual([]);
  });

  it("a creation that fails after the copy (no usable row): the run fails, naming the dataset, and the copy is deleted", async () => {
    const host = await CaptureServer.serving('{"question": "not a countdown row"}\n');
    const { runId, stub } = await createRun({ ...countdownSpec(DEAD_SWARM), datasets: [{ name: "cd", kind: "countdown", url: `${host.url}/cd.jsonl` }] });
    const view = await untilIndexed(stub);
    expect(view).toMatchObject({ phase: "finished", stopReason: "failed" });
    expect(view.failure).toContain('dataset "cd" has no usable task');
    expect((await host.received()).map((r) => r.method)).toEqual(["GET", "GET"]); // the quick check and the copy
    expect(await until(() => stagedKeys(runId), (k) => k.length === 0)).toEqual([]);
  });
});
