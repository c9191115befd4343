/**
 * A dataset host that stalls or trickles (issue 18), end to end on local workerd with the host on 127.0.0.1: one
 * that never answers, one that sends its headers and then nothing, and one that sends 32 bytes a second. `POST /runs`
 * answers each within the caps' bound (edge/ground/caps `postRunsBoundSeconds`: 10 s to the headers, 20 s of inline
 * index pass, 5 s of the Worker's own work) — before, they held it past 300 s and 67 s. A host that answers nothing
 * is refused (400 naming the dataset and the fix); one too slow for the inline pass moves to the background pass
 * (201, phase `indexing`), which keeps its bounds: the silent host fails the run naming the dataset, the trickling
 * one delivers within the budget and the run starts. Every run gives its quota slot back (a limit of 1 in flight).
 */
import { afterAll, describe, expect, it } from "vitest";
import { CAPS, postRunsBoundSeconds } from "../../src/edge/ground/caps.ts";
import { startSlowHost, SLOW_FILE_ROWS, type SlowHost } from "../support/slow-host.ts";
import { startRig, type E2eRig } from "./_support.ts";

describe("e2e: a dataset host that stalls or trickles", () => {
  let rig: E2eRig | undefined;
  let host: SlowHost | undefined;
  afterAll(async () => {
    await rig?.session.close();
    await host?.close();
  });

  it("POST /runs answers within its bound: a host that never answers is refused; a slow one moves to the background pass, which fails the run (silent) or starts it (trickle); the quota slot comes back", { timeout: 300_000 }, async () => {
    host = await startSlowHost();
    // one run in flight per token: each next POST /runs proves the previous run gave its slot back
    rig = await startRig(["--steps", "1", "--batch-size", "2", "--num-repeat", "2"], undefined, { AJET_MAX_RUNS_IN_FLIGHT: "1" });
    const { url, token } = rig.session.worker;
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const defaults = { firstByteSeconds: CAPS.firstByteSeconds.default, inlineIndexSeconds: CAPS.inlineIndexSeconds.default, idleSeconds: CAPS.idleSeconds.default };
    const boundMs = postRunsBoundSeconds(defaults, 1) * 1000 + 10_000; // + 10 s for a loaded 2-core machine
    const seen: Record<string, number> = {};
    const post = async (path: string) => {
      const spec = { ...(rig!.session.spec as Record<string, unknown>), datasets: [{ name: "cd", kind: "countdown", url: `${host!.url}/${path}/cd.jsonl` }] };
      const t0 = Date.now();
      const res = await fetch(`${url}/runs`, { method: "POST", headers, body: JSON.stringify(spec) });
      const ms = Date.now() - t0;
      const text = await res.text();
      expect(text, `${path} after ${ms} ms`).toMatch(/^\{/);
      seen[path] = ms;
      expect(ms, path).toBeLessThan(boundMs);
      return { status: res.status, body: JSON.parse(text) as any };
    };
    /** Polls the run until `done` holds of its view (bounded). */
    const until = async (runId: string, done: (v: any) => boolean, withinMs: number) => {
      const t0 = Date.now();
      for (;;) {
        const view = (await (await fetch(`${url}/runs/${runId}`, { headers })).json()) as any;
        if (done(view)) return { view, ms: Date.now() - t0 };
        if (Date.now() - t0 > withinMs) throw new Error(`run ${runId} still ${view.phase} after ${withinMs} ms: ${view.waitingFor ?? view.failure}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    };

    // no headers at all, even to the quick check: refused at once, naming the dataset and the fix
    const stall = await post("stall");
    expect(stall.status, JSON.stringify(stall.body)).toBe(400);
    expect(stall.body.error.issues[0]).toMatchObject({ path: "datasets.0", message: expect.stringMatching(/the host sent no answer \(headers\) within 10 s/) });
    expect(stall.body.error.issues[0].message).toContain("R2");

    // headers, then nothing: too slow for the inline pass → background; there the idle bound fails the run
    const silent = await post("silent");
    expect(silent.status, JSON.stringify(silent.body)).toBe(201);
    expect(silent.body.phase).toBe("indexing");
    const failedBoundMs = (defaults.firstByteSeconds * 2 + defaults.idleSeconds) * 1000 + 30_000;
    const failed = await until(silent.body.runId, (v) => v.phase === "finished", failedBoundMs);
    expect(failed.view.stopReason).toBe("failed");
    expect(failed.view.failure).toMatch(/datasets\.0: .*http:\/\/127\.0\.0\.1:\d+\/silent\/cd\.jsonl: the host sent nothing for 10 s/);

    // 32 bytes a second: too slow for the inline pass's least rate → background, which has only its total budget
    // (600 s): the 1.4 KB file arrives in ~45 s and the run starts
    const trickle = await post("trickle");
    expect(trickle.status, JSON.stringify(trickle.body)).toBe(201);
    expect(trickle.body.phase).toBe("indexing");
    const started = await until(trickle.body.runId, (v) => v.phase !== "indexing", 150_000);
    expect(started.view.phase, started.view.failure).not.toBe("finished");
    expect(started.view.datasets.cd).toMatchObject({ accepted: SLOW_FILE_ROWS, rejected: 0 });
    await fetch(`${url}/runs/${trickle.body.runId}/stop`, { method: "POST", headers });
    await until(trickle.body.runId, (v) => v.phase === "finished", 90_000);

    // every slot came back: one more run is admitted (a limit of 1 in flight)
    const again = await fetch(`${url}/runs`, { method: "POST", headers, body: JSON.stringify(rig.session.spec) });
    expect(again.status).toBe(201);
    const againId = ((await again.json()) as { runId: string }).runId;
    await fetch(`${url}/runs/${againId}/stop`, { method: "POST", headers });
    console.log(JSON.stringify({ answerMs: seen, boundMs, silentFailedMs: failed.ms, trickleStartedMs: started.ms }));
  });
});
