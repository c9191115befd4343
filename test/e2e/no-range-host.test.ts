/**
 * A dataset served without Range support (python's `http.server`, the first thing a user tries; issue 18), end to end
 * on local workerd with the R2 bucket DATASETS bound (miniflare's R2): `POST /runs` answers 201 in phase `indexing`
 * within the caps' bound; the background pass copies the file once into R2 (edge/run/dataset-staging), indexes it
 * there and the run starts and finishes with rows read from the copy — the host sees its quick check and one GET,
 * never a read per row. Skips with a line when python3 is absent.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import { waitForRun } from "../../src/cli/dev/runs-api.ts";
import { CAPS, postRunsBoundSeconds } from "../../src/edge/ground/caps.ts";
import { startRig, type E2eRig } from "./_support.ts";

const hasPython = spawnSync("python3", ["--version"]).status === 0;
if (!hasPython) console.log("no-range-host: python3 is not installed; skipped");

/** `python3 -m http.server` on a free port of 127.0.0.1 serving `dir`; `requests` collects its access-log lines. */
async function startPythonServer(dir: string): Promise<{ url: string; requests: string[]; child: ChildProcess }> {
  const child = spawn("python3", ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", dir], { stdio: ["ignore", "pipe", "pipe"] });
  const requests: string[] = [];
  createInterface({ input: child.stderr! }).on("line", (l) => (/"GET /.test(l) ? requests.push(l) : undefined));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("python http.server did not start within 20 s")), 20_000);
    createInterface({ input: child.stdout! }).on("line", (l) => {
      const m = /port (\d+)/.exec(l);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  return { url: `http://127.0.0.1:${port}`, requests, child };
}

describe.skipIf(!hasPython)("e2e: a dataset host without Range support (python http.server)", () => {
  const dir = mkdtempSync(join(tmpdir(), "ajet-e2e-norange-"));
  let rig: E2eRig | undefined;
  let server: Awaited<ReturnType<typeof startPythonServer>> | undefined;
  afterAll(async () => {
    await rig?.session.close();
    server?.child.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  });

  it("is copied once into R2 and read from there: 201 indexing within the bound, the run starts and finishes", { timeout: 240_000 }, async () => {
    const rows = Array.from({ length: 60 }, (_, i) => JSON.stringify({ target: 10 + (i % 5), nums: [1, 2, 3, 4 + (i % 3)] })).join("\n");
    writeFileSync(join(dir, "cd.jsonl"), `${rows}\n`);
    server = await startPythonServer(dir);
    rig = await startRig(["--steps", "2", "--batch-size", "2", "--num-repeat", "2"]);
    const spec = { ...(rig.session.spec as Record<string, unknown>), datasets: [{ name: "cd", kind: "countdown", url: `${server.url}/cd.jsonl` }] };
    const boundMs = postRunsBoundSeconds({ firstByteSeconds: CAPS.firstByteSeconds.default, inlineIndexSeconds: CAPS.inlineIndexSeconds.default }, 1) * 1000 + 10_000;
    const t0 = Date.now();
    const created = await rig.api.create(spec as never);
    expect(Date.now() - t0).toBeLessThan(boundMs);
    expect(created.phase).toBe("indexing");
    const { outcome, status } = await waitForRun(rig.api, created.runId, { timeoutMs: 180_000 });
    expect(outcome, status?.failure ?? "").toBe("finished");
    expect(status?.stopReason, status?.failure ?? "").not.toBe("failed");
    expect(status?.datasets.cd).toMatchObject({ accepted: 60, rejected: 0 });
    expect(status?.totals.episodesEnded).toBeGreaterThanOrEqual(8);
    // the host saw the quick check (a Range request it answered whole) and the one copy: no read per row
    expect(server.requests.length, server.requests.join("\n")).toBe(2);
  });
});
