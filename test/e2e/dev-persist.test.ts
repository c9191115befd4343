/**
 * `ajet-edge dev --persist DIR` keeps the Worker's state: a dev CLI killed mid-run (SIGKILL: no drain, as a crash
 * or a closed laptop) leaves the run unfinished in DIR; a later `dev --persist DIR` re-attaches to that run (no
 * new run), on a fresh emulator at the same port (its engine restarted: the batch it had not trained is wiped and
 * its groups run again), and follows it to its end.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runDevCommand } from "../../src/cli/commands/dev.ts";
import { memoryIo } from "../../src/cli/dev/output.ts";
import { PERSIST_STATE_FILE, type PersistState } from "../../src/cli/dev/run-dev.ts";
import type { DevSummaryJson } from "../../src/cli/dev/summary-json.ts";

const BIN = fileURLToPath(new URL("../../bin/ajet-edge.mjs", import.meta.url));

/** Pids of the live children of `ppid` (the dev CLI's Worker host is one; it leads its own process group). */
function childrenOf(ppid: number): number[] {
  return execFileSync("ps", ["-eo", "pid=,ppid=,stat="], { encoding: "utf8" })
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter(([, parent, stat]) => Number(parent) === ppid && stat !== undefined && !stat.startsWith("Z"))
    .map(([pid]) => Number(pid));
}

/** Whether anything of the process group `pgid` still runs (zombies aside). */
function groupAlive(pgid: number): boolean {
  return execFileSync("ps", ["-eo", "pgid=,stat="], { encoding: "utf8" })
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .some(([group, stat]) => Number(group) === pgid && stat !== undefined && !stat.startsWith("Z"));
}
const dir = mkdtempSync(join(tmpdir(), "ajet-e2e-persist-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("e2e: dev --persist DIR resumes the unfinished run", () => {
  it("a killed dev leaves its run in DIR; the next dev --persist DIR re-attaches to it and finishes it", async () => {
    const argv = ["dev", "--persist", dir, "--steps", "4"];
    const child = spawn(process.execPath, [BIN, ...argv], { stdio: ["ignore", "pipe", "pipe"] });
    let runId = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the first dev did not reach the end of step 2 within 90 s")), 90_000);
      createInterface({ input: child.stdout! }).on("line", (line) => {
        runId ||= /run (run-\S+) created/.exec(line)?.[1] ?? "";
        // killed between steps (no episode in flight): in-flight episodes of a killed workerd come back only when
        // their leases expire (minutes), which this test does not wait for
        if (runId && / step 2\/4 \(training\).* in flight 0$/.test(line)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("exit", (code) => reject(new Error(`the first dev exited early (${code})`)));
    });
    const hosts = childrenOf(child.pid!);
    expect(hosts.length).toBeGreaterThan(0);
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const state = JSON.parse(readFileSync(join(dir, PERSIST_STATE_FILE), "utf8")) as PersistState;
    expect(state.runId).toBe(runId);
    expect(Object.keys(state.emulatorPorts ?? {})).toEqual(["default"]);

    // the killed CLI's Worker host notices the closed IPC channel and stops workerd: wait until its whole process
    // group is gone (it has let go of DIR), however long a loaded machine takes
    for (const deadline = Date.now() + 60_000; hosts.some(groupAlive) && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 100));
    expect(hosts.filter(groupAlive)).toEqual([]);
    const io = memoryIo();
    const code = await runDevCommand(["--persist", dir, "--steps", "4", "--json"], io);
    const progress = io.stderr.join("");
    expect(code, progress).toBe(0);
    // the Worker carries the run on as soon as workerd is up, so it may be running or already finished here
    expect(progress, progress).toMatch(new RegExp(`resuming run ${runId} \\(phase (running|finishing|finished), \\d+ steps so far\\)`));
    expect(progress).not.toMatch(/run \S+ created/);
    const summary = JSON.parse(io.stdout.join("")) as DevSummaryJson;
    expect(summary).toMatchObject({ runId, outcome: "finished", stopReason: "maxSteps", claimedLeft: 0 });
    expect(summary.steps.map((s) => [s.step, s.episodes])).toEqual([[1, 32], [2, 32], [3, 32], [4, 32]]);
    expect(existsSync(dir)).toBe(true); // kept: a persist dir is the user's
    // its end was seen: the dir no longer names it, so the next dev --persist DIR starts a new run
    expect((JSON.parse(readFileSync(join(dir, PERSIST_STATE_FILE), "utf8")) as PersistState).runId).toBeUndefined();
  }, 240_000);
});
