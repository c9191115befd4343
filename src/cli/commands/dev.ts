/**
 * @module cli/commands/dev — `ajet-edge dev` (= `npm start`, issue 3 §6, issue 8 §3): the same run client as
 * `ajet-edge run`, against the Worker in local workerd and the local swarm emulator (or `--swarm-url`). The
 * orchestration lives in `src/cli/dev/` (shared with the e2e tests).
 */
import { helpOf } from "../args.ts";
import { defineDevFlags, parseDevArgs } from "../dev/options.ts";
import { processIo, type DevIo } from "../dev/output.ts";
import { runDev, type RunDevExtras } from "../dev/run-dev.ts";
import type { CliCommand } from "../command.ts";
import { errorSummaryJson } from "../dev/summary-json.ts";

/**
 * Runs the command with injectable I/O (tests run it in-process).
 * @returns the exit code (0 finished, 1 failed or timed out, 2 bad input, 130 Ctrl-C, 143 SIGTERM)
 * @throws CliError on a usage error (main prints it and a pointer to --help, exit code 2)
 */
export async function runDevCommand(argv: string[], io: DevIo = processIo, extras?: RunDevExtras): Promise<number> {
  const options = parseDevArgs(argv);
  if (!options) {
    io.out(`${helpOf("dev", defineDevFlags)}\n`);
    return 0;
  }
  return (await runDev(options, io, extras)).exitCode;
}

const command: CliCommand = {
  name: "dev",
  run: (argv) => runDevCommand(argv),
  jsonError: (error, exitCode) => errorSummaryJson({ error, exitCode }),
};
export default command;
