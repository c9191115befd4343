/**
 * `ajet-edge run --worker URL` against a Worker in local workerd and an emulator started separately (its own
 * process, `ajet-edge emulator`, engine OFFLINE: the Worker starts it): exits 0 with the same summary table as
 * `npm start`; then `runs`, `status` and
 * `stop` against the same Worker; a wrong token is one line naming --token / AJET_API_TOKEN, exit 2.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runRunCommand } from "../../src/cli/commands/run.ts";
import { runRunsCommand } from "../../src/cli/commands/runs.ts";
import { runStatusCommand } from "../../src/cli/commands/status.ts";
import { runStopCommand } from "../../src/cli/commands/stop.ts";
import { memoryIo } from "../../src/cli/dev/output.ts";
import { runsApi } from "../../src/cli/dev/runs-api.ts";
import { startLocalWorker, type LocalWorker } from "../../src/cli/dev/worker.ts";
import { fetchWithTimeout } from "./_support.ts";

const BIN = fileURLToPath(new URL("../../bin/ajet-edge.mjs", import.meta.url));

/** Starts `ajet-edge emulator --port 0 --profile dev` as its own process; resolves with its URL from the ready line. */
function startEmulatorProcess(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, "emulator", "--port", "0", "--profile", "dev"], { stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the emulator did not print its ready line within 30 s")), 30_000);
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const m = /ready at (http:\/\/127\.0\.0\.1:\d+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]! });
      }
    });
    child.once("exit", (code) => reject(new Error(`the emulator exited (${code})`)));
  });
}

let emulator: { child: ChildProcess; url: string };
let worker: LocalWorker;
let runId = "";

beforeAll(async () => {
  // the emulator's engine is OFFLINE: the Worker syncs the job and starts it (nothing here does)
  [emulator, worker] = await Promise.all([startEmulatorProcess(), startLocalWorker()]);
}, 120_000);

afterAll(async () => {
  await worker?.dispose();
  emulator?.child.kill("SIGTERM");
});

describe("e2e: ajet-edge run / runs / status / stop against a Worker", () => {
  it("run --worker --swarm-url --steps 3 exits 0 with the summary table", async () => {
    const io = memoryIo();
    const code = await runRunCommand(["--worker", worker.url, "--swarm-url", emulator.url, "--steps", "3"], io, { AJET_API_TOKEN: worker.token });
    const out = io.stdout.join("");
    expect(code, `${out}\n${io.stderr.join("")}`).toBe(0);
    expect(out).toContain(`  swarm default: ${emulator.url}\n`);
    expect(out).toContain(`  Worker: ${worker.url}\n`);
    runId = /run (run-\S+) created/.exec(out)![1]!;
    expect(out).toMatch(/step\s+global step\s+episodes\s+mean reward\s+wall time\n\s+1\s+\d+\s+32\/32\s+\d\.\d{3}\s+\d+\.\ds\n/);
    expect(out).toMatch(/\ntotal\s+96\s+\d\.\d{3}\s+\d+\.\ds\n/);
    expect(out).toContain("stop reason: maxSteps");
  });

  it("runs lists the run, finished", async () => {
    const io = memoryIo();
    const code = await runRunsCommand(["--worker", worker.url, "--token", worker.token], io, {});
    expect(code, io.stderr.join("")).toBe(0);
    const row = io.stdout.join("").split("\n").find((l) => l.startsWith(runId));
    expect(row).toMatch(new RegExp(`^${runId}\\s+countdown\\s+finished\\s+`));
  });

  it("status shows the run: phase, engines, episodes by state and its three steps", async () => {
    const io = memoryIo();
    const code = await runStatusCommand([runId, "--worker", worker.url], io, { AJET_API_TOKEN: worker.token });
    expect(code, io.stderr.join("")).toBe(0);
    const out = io.stdout.join("");
    expect(out).toMatch(new RegExp(`^run ${runId}  function countdown  phase finished  stop reason maxSteps  created \\d+s ago\\n`));
    expect(out).toMatch(/engines: default ROLLING \(global step \d+\)/);
    // the live states in flight (none: the run finished), then what ended, failed or was dropped from the run's totals
    expect(out).toMatch(/in flight\s+queued\s+dispatched\s+running\s+reporting\n\s+0\s+0\s+0\s+0\s+0\n/);
    const soFar = /so far: (\d+) episodes ended, 0 attempts failed, 0 groups dropped\n/.exec(out);
    expect(soFar, out).not.toBeNull();
    expect(Number(soFar![1])).toBeGreaterThanOrEqual(3 * 32);
    expect(out).toMatch(/\n\s+3\s+\d+\s+32\s+\d\.\d{3}\s+\d+\.\ds\n/);
  });

  it("stop drains a running run and waits until it is finished; status of an unknown run is one line, exit 1", async () => {
    const api = runsApi(worker.url, fetchWithTimeout, { token: worker.token });
    const created = await api.create({
      swarms: [{ name: "default", url: emulator.url }],
      function: "countdown",
      job: { batchSize: 8, numRepeat: 4, maxEnvWorker: 32 },
      datasets: [{ name: "countdown", kind: "countdown", generate: { count: 400, seed: 5 } }],
      maxSteps: 50,
    });
    const io = memoryIo();
    const code = await runStopCommand([created.runId, "--worker", worker.url, "--token", worker.token], io, {});
    expect(code, io.stderr.join("")).toBe(0);
    expect(io.stdout.join("")).toMatch(new RegExp(`run ${created.runId} stopped \\(stop reason stopRequested; \\d+ episodes ended\\)`));
    expect((await api.get(created.runId)).phase).toBe("finished");

    const missing = memoryIo();
    expect(await runStatusCommand(["run-nope", "--worker", worker.url], missing, { AJET_API_TOKEN: worker.token })).toBe(1);
    expect(missing.stderr.join("")).toBe(`ajet-edge status: no run run-nope on ${worker.url}; list the runs with \`ajet-edge runs --worker ${worker.url}\`\n`);
  });

  it("a wrong token: one line naming --token and AJET_API_TOKEN, exit 2, no run created", async () => {
    const io = memoryIo();
    const code = await runRunCommand(["--worker", worker.url, "--swarm-url", emulator.url, "--token", "wrong-token"], io, {});
    expect(code).toBe(2);
    expect(io.stderr.join("")).toMatch(/^ajet-edge run: POST \/runs: HTTP 401: .*\n {2}give the Worker's API token with --token TOKEN or the AJET_API_TOKEN environment variable/);
  });
});
