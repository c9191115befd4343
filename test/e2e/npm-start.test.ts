/**
 * `npm start` (= `ajet-edge dev` with no options) run in-process through the command's own entry point: 3 Countdown
 * steps against the emulator, mean reward rising under the simulated policy, exit code 0 and the summary table. And
 * Ctrl-C in the middle of a step: the run drains (nothing left claimed), the Worker host is gone, exit code 130. At a terminal, dev keeps the Worker and its dashboard up after the run until Ctrl-C.
 */
import { describe, expect, it } from "vitest";
import { runDevCommand } from "../../src/cli/commands/dev.ts";
import { memoryIo } from "../../src/cli/dev/output.ts";
import type { DevSession } from "../../src/cli/dev/session.ts";
import type { DevSummaryJson } from "../../src/cli/dev/summary-json.ts";
import { liveProcessesInGroup } from "./_support.ts";

function lastJson(stdout: string[]): DevSummaryJson {
  return JSON.parse(stdout.join("")) as DevSummaryJson;
}

describe("e2e: npm start", () => {
  it("runs 3 Countdown steps with rising mean reward, prints the summary table and exits 0", async () => {
    const io = memoryIo();
    const code = await runDevCommand(["--json"], io);
    const progress = io.stderr.join("");
    expect(code, progress).toBe(0);
    const summary = lastJson(io.stdout);
    expect(summary.outcome).toBe("finished");
    expect(summary.stopReason).toBe("maxSteps");
    expect(summary.steps.map((s) => [s.step, s.globalStep, s.episodes])).toEqual([[1, 1, 32], [2, 2, 32], [3, 3, 32]]);
    expect(summary.steps[2]!.meanReward!).toBeGreaterThan(summary.steps[0]!.meanReward!);
    expect(summary.claimedLeft).toBe(0);
    expect(progress).toMatch(/step\s+global step\s+episodes\s+mean reward\s+wall time\n\s+1\s+1\s+32\/32\s+\d\.\d{3}\s+\d+\.\ds\n/);
    expect(progress).toMatch(/\ntotal\s+96\s+\d\.\d{3}\s+\d+\.\ds\n/);
    // the learning signals per step and the run's estimated cost follow the table (issue 22)
    expect(progress).toMatch(/\nlearning signals:\nstep\s+no-signal groups \(0s\/1s\)/);
    expect(progress).toMatch(/\nestimated cost on Cloudflare: \$[0-9.e-]+ \(\$[0-9.e-]+ per step, \$[0-9.e-]+ per 1,000 episodes; /);
  });

  it("Ctrl-C during a step drains the run, leaves nothing claimed, stops workerd and exits 130", async () => {
    const io = memoryIo();
    let session: DevSession | undefined;
    let interrupted = false;
    const err = io.err;
    // Interrupt at the first progress line that shows episodes in flight.
    io.err = (text) => {
      err(text);
      if (!interrupted && /in flight [1-9]/.test(text)) {
        interrupted = true;
        io.interrupt("SIGINT");
      }
    };
    const code = await runDevCommand(["--json"], io, { onSession: (s) => (session = s) });
    expect(code, io.stderr.join("")).toBe(130);
    expect(interrupted).toBe(true);
    const summary = lastJson(io.stdout);
    expect(summary.outcome).toBe("interrupted");
    expect(summary.stopReason).toBe("stopRequested");
    expect(summary.claimedLeft).toBe(0);
    expect(io.stderr.join("")).toContain("interrupted: stopping the run");
    // the Worker host led its own process group; nothing of it (host, workerd, esbuild) runs any more — esbuild's
    // service exits when its parent's pipe closes, which the kernel may report a moment after the group was killed
    const hostPid = session!.worker.hostPid;
    await expect.poll(() => liveProcessesInGroup(hostPid), { timeout: 10_000, interval: 200 }).toEqual([]);
    expect(io.quitCode).toBeNull();
  });

  it("at a terminal the Worker and the dashboard stay up after the run until Ctrl-C (and say so)", async () => {
    const io = memoryIo({ interactive: true });
    let session: DevSession | undefined;
    let stayLine = "";
    let resolveStay: () => void = () => {};
    const stayed = new Promise<void>((resolve) => (resolveStay = resolve));
    const out = io.out;
    io.out = (text) => {
      out(text);
      if (text.includes("stay up")) {
        stayLine = text;
        resolveStay();
      }
    };
    const running = runDevCommand(["--steps", "1"], io, { onSession: (s) => (session = s) });
    await stayed;
    expect(stayLine).toMatch(/^the Worker and the dashboard stay up: http:\/\/127\.0\.0\.1:\d+\/runs\/run-\S+ \(sign in with this session's token [0-9a-f]{64}\); Ctrl-C to stop them/);
    // the printed dashboard URL answers after the run (it used to die with the run)
    const url = /stay up: (\S+)/.exec(stayLine)![1]!;
    const page = await fetch(url, { headers: { authorization: `Bearer ${session!.worker.token}` }, signal: AbortSignal.timeout(30_000) });
    expect(page.status).toBe(200);
    expect(((await page.json()) as { phase: string }).phase).toBe("finished");
    io.interrupt("SIGINT");
    expect(await running, io.stdout.join("")).toBe(0); // the run's own exit code: closing it was asked for
    expect(io.stdout.join("")).toContain("stopping the Worker and the emulators");
    expect(io.quitCode).toBeNull();
    await expect.poll(() => liveProcessesInGroup(session!.worker.hostPid), { timeout: 10_000, interval: 200 }).toEqual([]);
  });
});
