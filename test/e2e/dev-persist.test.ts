/**
 * `ajet-edge dev --persist DIR` keeps the Worker's state: a dev CLI killed mid-run (SIGKILL: no drain, as a crash
 * or a closed laptop) leaves the run unfinished in DIR; a later `dev --persist DIR` re-attaches to that run (no
 * new run), on a fresh emulator at the same port (its engine restarted: the batch it had not trained is wiped and
 * its groups run again), and follows it to its end. Between the two, `ajet-edge dashboard --persist DIR` reopens the
 * unfinished run read-only: it is served as stored, nothing acts on it (its view does not change while the alarms
 * would have ticked, a write is refused) and DIR is left as it was for the resume.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runDashboardCommand } from "../../src/cli/commands/dashboard.ts";
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

    // read-only: the stored run is served; nothing acts on it
    const stateBefore = readFileSync(join(dir, PERSIST_STATE_FILE), "utf8");
    const board = memoryIo();
    const boardDone = runDashboardCommand(["--persist", dir], board);
    let shown: RegExpExecArray | null = null;
    for (const deadline = Date.now() + 120_000; !shown && Date.now() < deadline;) {
      shown = /dashboard: (\S+?)\/runs\/(\S+) \(runs: .* read token (\S+)\)/.exec(board.stdout.join(""));
      if (!shown) await new Promise((r) => setTimeout(r, 100));
    }
    expect(shown, board.stderr.join("")).not.toBeNull();
    const [, url, shownRun, readToken] = shown!;
    expect(shownRun).toBe(runId);
    const auth = { authorization: `Bearer ${readToken}` };
    const view = async () => {
      const res = await fetch(`${url}/runs/${runId}`, { headers: auth, signal: AbortSignal.timeout(30_000) });
      expect(res.status).toBe(200);
      return (await res.json()) as { phase: string; steps: unknown[] };
    };
    const first = await view();
    expect(first.phase).toBe("running");
    expect(first.steps.length).toBe(2);
    const page = await fetch(`${url}/runs/${runId}`, { headers: { ...auth, accept: "text/html" }, signal: AbortSignal.timeout(30_000) });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    // a Worker that acted would tick the run (its server is gone: the view would say so) within seconds
    await new Promise((r) => setTimeout(r, 8_000));
    expect(await view()).toEqual(first);
    const stop = await fetch(`${url}/runs/${runId}/stop`, { method: "POST", headers: auth, signal: AbortSignal.timeout(30_000) });
    expect(stop.status).toBe(403);
    board.interrupt();
    expect(await boardDone).toBe(0);
    expect(readFileSync(join(dir, PERSIST_STATE_FILE), "utf8")).toBe(stateBefore);

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
  }, 360_000);
});
