/**
 * @module cli/commands/dashboard — `ajet-edge dashboard --persist DIR`: reopens the state a `dev --persist DIR` left
 * (its runs, metrics, transcripts) in the local Worker, read-only, until Ctrl-C. The Worker runs on a copy of DIR
 * (DIR itself is never written, so a later `dev --persist DIR` resumes exactly what was there), with
 * `AJET_READ_ONLY=1` (no alarm acts: no dispatch, no status poll, no engine start; a run is shown as it was stored),
 * connects nowhere, and gives out only a read token (GET routes). Exit codes: 0 after Ctrl-C, 2 for a DIR without a
 * dev state, 1 when the Worker cannot start.
 */
import { existsSync } from "node:fs";
import { cp, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { helpOf, parseFlags } from "../args.ts";
import { CliError, type CliCommand } from "../command.ts";
import { processIo, type DevIo } from "../dev/output.ts";
import { PERSIST_STATE_FILE } from "../dev/run-dev.ts";
import { newSessionToken, startLocalWorker, type LocalWorker } from "../dev/worker.ts";

function defineDashboardFlags(cmd: Command): void {
  cmd
    .description(
      "Reopens the runs a `dev --persist DIR` kept, read-only: the local Worker on a copy of DIR serves the dashboard " +
        "and the GET routes (runs, metrics, transcripts) until Ctrl-C; nothing runs, nothing in DIR changes.",
    )
    .requiredOption("--persist <dir>", "the directory a `dev --persist DIR` wrote");
}

/** What a Worker shows first: the newest run's page, else the runs list. */
async function newestRun(worker: LocalWorker, readToken: string): Promise<string | null> {
  try {
    const res = await fetch(`${worker.url}/runs?limit=1`, { headers: { authorization: `Bearer ${readToken}` }, signal: AbortSignal.timeout(30_000) });
    const body = (await res.json()) as { runs?: { runId: string }[] };
    return body.runs?.[0]?.runId ?? null;
  } catch {
    return null;
  }
}

/**
 * Runs the command with injectable I/O (tests run it in-process).
 * @returns 0 after Ctrl-C; 1 when the Worker cannot start
 * @throws CliError (exit 2) for a missing `--persist` or a DIR without a dev state
 */
export async function runDashboardCommand(argv: string[], io: DevIo = processIo): Promise<number> {
  const flags = parseFlags("dashboard", defineDashboardFlags, argv);
  if (!flags) {
    io.out(`${helpOf("dashboard", defineDashboardFlags)}\n`);
    return 0;
  }
  const dir = resolve(String(flags.values["persist"]));
  const entries = existsSync(dir) ? await readdir(dir) : null;
  if (!entries?.includes(PERSIST_STATE_FILE)) {
    throw new CliError(`${dir} holds no dev state (no ${PERSIST_STATE_FILE}); give the directory of a \`ajet-edge dev --persist DIR\``);
  }
  const copy = await mkdtemp(join(tmpdir(), "ajet-dashboard-"));
  const stop = new AbortController();
  const unsubscribe = io.onInterrupt(() => {
    if (stop.signal.aborted) io.quit(130); // a second Ctrl-C: now
    io.err("stopping the Worker… (Ctrl-C again to quit now)\n");
    stop.abort();
  });
  let worker: LocalWorker | null = null;
  try {
    await cp(dir, copy, { recursive: true });
    const readToken = newSessionToken();
    io.err(`ajet-edge dashboard: starting the Worker in local workerd on a copy of ${dir} (read-only)…\n`);
    try {
      worker = await startLocalWorker({ persistDir: copy, allowedHosts: [], vars: { AJET_READ_ONLY: "1", AJET_READ_TOKEN: readToken }, signal: stop.signal, onLog: (line) => io.err(`  ${line}\n`) });
    } catch (err) {
      if (stop.signal.aborted) return 130;
      io.err(`ajet-edge dashboard: ${(err as Error).message}\n`);
      return 1;
    }
    const runId = await newestRun(worker, readToken);
    io.out(`dashboard: ${worker.url}/${runId ? `runs/${runId}` : ""} (runs: ${worker.url}/; sign in with the read token ${readToken})\n`);
    io.out("read-only: nothing runs and nothing in the directory changes; Ctrl-C to stop\n");
    await new Promise<void>((resolve) => (stop.signal.aborted ? resolve() : stop.signal.addEventListener("abort", () => resolve(), { once: true })));
    return 0;
  } finally {
    await worker?.dispose();
    await rm(copy, { recursive: true, force: true });
    unsubscribe();
  }
}

const command: CliCommand = { name: "dashboard", run: (argv) => runDashboardCommand(argv) };
export default command;
