/**
 * Secrets at rest on a real local workerd (issue 18; edge/ground/secrets-at-rest): a run's secret is never written in
 * plaintext to the Worker's persist directory — not while the run runs, not after it ended, in no file (SQLite
 * databases, their write-ahead logs and shared memory included). While it runs the directory holds its sealed copy;
 * once it ended, its wrapped data key is gone from the live database, so what the WAL or a backup kept is ciphertext
 * without a key.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseDevArgs } from "../../src/cli/dev/options.ts";
import { buildDevPlan } from "../../src/cli/dev/plan.ts";
import { runsApi, waitForRun } from "../../src/cli/dev/runs-api.ts";
import { startDevSession, type DevSession } from "../../src/cli/dev/session.ts";
import { fetchWithTimeout } from "./_support.ts";

const SECRET = "sk-run-secret-at-rest-DO-NOT-LEAK-7f3a9c";

/** Every file under `dir`, recursively, with its bytes. */
function filesUnder(dir: string): Array<{ path: string; bytes: Buffer }> {
  const out: Array<{ path: string; bytes: Buffer }> = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...filesUnder(path));
    else out.push({ path, bytes: readFileSync(path) });
  }
  return out;
}

const holding = (dir: string, needle: string) => filesUnder(dir).filter((f) => f.bytes.includes(Buffer.from(needle, "utf8"))).map((f) => f.path);

describe("e2e: a run's secrets at rest in workerd's persist directory", () => {
  const dir = mkdtempSync(join(tmpdir(), "ajet-e2e-secrets-"));
  let session: DevSession | undefined;
  afterAll(async () => {
    await session?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("no plaintext byte of the secret in any file (WAL included) while the run runs or after it ended; the sealed copy is dropped at the end", { timeout: 180_000 }, async () => {
    const options = parseDevArgs(["--steps", "2", "--batch-size", "2", "--num-repeat", "2"]);
    if (!options) throw new Error("no options");
    session = await startDevSession(await buildDevPlan(options), { persistDir: dir });
    const api = runsApi(session.worker.url, fetchWithTimeout, { token: session.worker.token });
    const created = await api.create({ ...(session.spec as Record<string, unknown>), secrets: { MY_API_KEY: SECRET } } as never);
    // let some episodes run (the consumer gets the secret decrypted in memory), then look while the run is live
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
      const view = await api.get(created.runId);
      if (view.totals.episodesEnded >= 2 || view.phase === "finished") break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const files = filesUnder(dir);
    expect(files.some((f) => f.path.endsWith(".sqlite") || f.path.endsWith("-wal"))).toBe(true);
    expect(holding(dir, SECRET)).toEqual([]);
    expect(holding(dir, "wrappedKey").length).toBeGreaterThan(0); // the sealed copy is there while the run runs

    await api.stop(created.runId);
    const { outcome } = await waitForRun(api, created.runId, { timeoutMs: 90_000 });
    expect(outcome).toBe("finished");
    expect(holding(dir, SECRET)).toEqual([]);
    // the live database no longer holds the sealed secrets: the run's row was rewritten without them
    const view = await api.get(created.runId);
    expect(JSON.stringify(view)).not.toContain(SECRET);

    await session.close(); // workerd checkpoints and lets go of the files: still no plaintext anywhere
    session = undefined;
    expect(holding(dir, SECRET)).toEqual([]);
  });
});
