/**
 * @module cli/commands/runs — `ajet-edge runs --worker URL`: the Worker's runs, newest first (`GET /runs`), one
 * row each: id, function, phase, engine, global step, last step's mean reward, age, and what it waits for.
 */
import type { Command } from "commander";
import { z } from "zod";
import { helpOf, parseFlags } from "../args.ts";
import { CliError, jsonErrorDocument, type CliCommand } from "../command.ts";
import { processIo, type DevIo } from "../dev/output.ts";
import { renderRunList } from "../dev/run-table.ts";
import type { RunListingView } from "../dev/runs-api.ts";
import { callFailure, defineWorkerFlags, workerApi } from "../dev/worker-call.ts";

function defineRunsFlags(cmd: Command): void {
  cmd.description("Lists the runs of a Worker, newest first.");
  defineWorkerFlags(cmd);
  cmd
    .option("--limit <n>", "runs to show (default 20; the API pages by 100 at most)")
    .option("--json", "print the runs as one JSON document on stdout ({runs}; on failure {runs: [], error, exitCode})");
}

const Limit = z.coerce.number({ error: "--limit must be a number, e.g. 20" }).int({ error: "--limit must be a whole number, e.g. 20" })
  .min(1, { error: "--limit must be ≥ 1, e.g. 20" }).max(10_000, { error: "--limit must be ≤ 10000" }).default(20);

/**
 * Runs the command with injectable I/O and environment.
 * @returns 0 listed; 1 the Worker failed or is unreachable; 2 a refused token
 * @throws CliError on a usage error
 */
export async function runRunsCommand(argv: string[], io: DevIo = processIo, env: NodeJS.ProcessEnv = process.env, fetchFn: typeof fetch = fetch): Promise<number> {
  const flags = parseFlags("runs", defineRunsFlags, argv);
  if (!flags) {
    io.out(`${helpOf("runs", defineRunsFlags)}\n`);
    return 0;
  }
  const limit = Limit.safeParse(flags.values["limit"]);
  if (!limit.success) throw new CliError(limit.error.issues[0]!.message);
  const { api, worker, requestTimeoutSeconds } = workerApi(flags.values, env, fetchFn);
  const runs: RunListingView[] = [];
  try {
    let cursor: string | undefined;
    do {
      const page = await api.list({ limit: Math.min(100, limit.data - runs.length), ...(cursor !== undefined ? { cursor } : {}) });
      runs.push(...page.runs);
      cursor = page.next ?? undefined;
    } while (cursor !== undefined && runs.length < limit.data);
  } catch (err) {
    const f = callFailure(err, { command: "runs", workerUrl: worker.workerUrl, requestTimeoutSeconds });
    io.err(`ajet-edge runs: ${f.line}\n`);
    if (flags.values["json"]) io.out(`${JSON.stringify({ runs: [], ...jsonErrorDocument(f.line, f.code) }, null, 2)}\n`);
    return f.code;
  }
  io.out(flags.values["json"] ? `${JSON.stringify({ runs }, null, 2)}\n` : `${renderRunList(runs, io.now())}\n`);
  return 0;
}

const command: CliCommand = { name: "runs", run: (argv) => runRunsCommand(argv), jsonError: (error, exitCode) => ({ runs: [], ...jsonErrorDocument(error, exitCode) }) };
export default command;
