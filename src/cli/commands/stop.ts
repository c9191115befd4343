/**
 * @module cli/commands/stop — `ajet-edge stop RUN --worker URL`: drains one run (`POST /runs/:id/stop`: no new
 * dispatch; in-flight episodes finish or are aborted, so nothing stays claimed) and waits, bounded, until it is
 * finished.
 */
import type { Command } from "commander";
import { z } from "zod";
import { helpOf, parseFlags } from "../args.ts";
import { CliError, type CliCommand } from "../command.ts";
import { processIo, type DevIo } from "../dev/output.ts";
import { waitForRun } from "../dev/runs-api.ts";
import { callFailure, defineWorkerFlags, workerApi } from "../dev/worker-call.ts";

function defineStopFlags(cmd: Command): void {
  cmd.description("Stops (drains) one run of a Worker and waits until it is finished.").argument("<run>", "the run id (from `ajet-edge runs`)");
  defineWorkerFlags(cmd);
  cmd
    .option("--timeout <seconds>", "how long to wait for the drain (default 60)")
    .option("--no-wait", "ask for the stop and return at once");
}

const Timeout = z.coerce.number({ error: "--timeout must be a number of seconds, e.g. 60" })
  .positive({ error: "--timeout must be > 0 seconds, e.g. 60" }).default(60);

/**
 * Runs the command with injectable I/O and environment.
 * @returns 0 stopped (drained, or asked with --no-wait); 1 not drained in time, no such run or the Worker failed;
 *   2 a refused token
 * @throws CliError on a usage error
 */
export async function runStopCommand(argv: string[], io: DevIo = processIo, env: NodeJS.ProcessEnv = process.env, fetchFn: typeof fetch = fetch): Promise<number> {
  const flags = parseFlags("stop", defineStopFlags, argv);
  if (!flags) {
    io.out(`${helpOf("stop", defineStopFlags)}\n`);
    return 0;
  }
  const runId = flags.positionals[0]!;
  const timeout = Timeout.safeParse(flags.values["timeout"]);
  if (!timeout.success) throw new CliError(timeout.error.issues[0]!.message);
  const { api, worker, requestTimeoutSeconds } = workerApi(flags.values, env, fetchFn);
  try {
    const asked = await api.stop(runId);
    if (asked.phase === "finished") {
      io.out(`run ${runId} is already finished (stop reason ${asked.stopReason ?? "none"})\n`);
      return 0;
    }
    io.out(`stopping run ${runId}: draining ${asked.episodes.inFlight} episodes in flight…\n`);
    if (flags.values["wait"] === false) return 0;
    const { outcome, status } = await waitForRun(api, runId, { timeoutMs: timeout.data * 1000 });
    if (outcome !== "finished") {
      io.err(`ajet-edge stop: run ${runId} did not finish draining within ${timeout.data} s (phase ${status?.phase ?? "?"}, ${status?.episodes.inFlight ?? "?"} in flight); check again with \`ajet-edge status ${runId} --worker ${worker.workerUrl}\`\n`);
      return 1;
    }
    io.out(`run ${runId} stopped (stop reason ${status?.stopReason ?? "none"}; ${status?.totals.episodesEnded ?? 0} episodes ended)\n`);
    return 0;
  } catch (err) {
    const f = callFailure(err, { command: "stop", workerUrl: worker.workerUrl, runId, requestTimeoutSeconds });
    io.err(`ajet-edge stop: ${f.line}\n`);
    return f.code;
  }
}

const command: CliCommand = { name: "stop", run: (argv) => runStopCommand(argv) };
export default command;
