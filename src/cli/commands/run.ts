/**
 * @module cli/commands/run — `ajet-edge run --worker URL` (issue 8 §3): creates a run on a deployed or `wrangler
 * dev` Worker with the flags of `ajet-edge dev` (or `--spec FILE`) and follows it with the same client: live
 * progress, summary, `--json`, exit codes. The token comes from `--token` or `AJET_API_TOKEN`.
 */
import { helpOf } from "../args.ts";
import { defineRunCommandFlags, parseRunArgs } from "../dev/options.ts";
import { processIo, type DevIo } from "../dev/output.ts";
import { runOnWorker } from "../dev/run-dev.ts";
import type { CliCommand } from "../command.ts";
import { errorSummaryJson } from "../dev/summary-json.ts";

/**
 * Runs the command with injectable I/O and environment (tests run it in-process).
 * @returns the exit code (0 finished, 1 failed or timed out, 2 bad input or refused token, 130 Ctrl-C, 143 SIGTERM)
 * @throws CliError on a usage error
 */
export async function runRunCommand(argv: string[], io: DevIo = processIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const options = parseRunArgs(argv, env);
  if (!options) {
    io.out(`${helpOf("run", defineRunCommandFlags)}\n`);
    return 0;
  }
  return (await runOnWorker(options, io)).exitCode;
}

const command: CliCommand = {
  name: "run",
  run: (argv) => runRunCommand(argv),
  jsonError: (error, exitCode) => errorSummaryJson({ error, exitCode }),
};
export default command;
