/**
 * @module cli/commands/metrics — `ajet-edge metrics RUN --worker URL [--format csv|jsonl|json]`: one run's metrics
 * export (`GET /runs/:id/metrics`) on stdout, for a W&B or TensorBoard logger: one row (CSV) or object (JSON Lines)
 * per window × source × swarm, the reward statistics, the learning signals and the `log_metrics` means
 * (edge/run/board/metrics); `json` is the whole export, the run's cost included.
 */
import type { Command } from "commander";
import { z } from "zod";
import { helpOf, parseFlags } from "../args.ts";
import { CliError, type CliCommand } from "../command.ts";
import { processIo, type DevIo } from "../dev/output.ts";
import { callFailure, defineWorkerFlags, workerApi } from "../dev/worker-call.ts";

function defineMetricsFlags(cmd: Command): void {
  cmd.description("Prints one run's metrics export (per step, source and swarm: rewards, learning signals, log_metrics).").argument("<run>", "the run id (from `ajet-edge runs`)");
  defineWorkerFlags(cmd);
  cmd.option("--format <format>", "csv (default), jsonl (one JSON object per row) or json (the whole export with the run's cost)");
}

const Format = z.enum(["csv", "jsonl", "json"], { error: "--format must be csv, jsonl or json, e.g. --format jsonl" }).default("csv");

/**
 * Runs the command with injectable I/O and environment.
 * @returns 0 printed; 1 no such run / the Worker failed; 2 a refused token
 * @throws CliError on a usage error
 */
export async function runMetricsCommand(argv: string[], io: DevIo = processIo, env: NodeJS.ProcessEnv = process.env, fetchFn: typeof fetch = fetch): Promise<number> {
  const flags = parseFlags("metrics", defineMetricsFlags, argv);
  if (!flags) {
    io.out(`${helpOf("metrics", defineMetricsFlags)}\n`);
    return 0;
  }
  const runId = flags.positionals[0]!;
  const format = Format.safeParse(flags.values["format"]);
  if (!format.success) throw new CliError(format.error.issues[0]!.message);
  const { api, worker } = workerApi(flags.values, env, fetchFn);
  try {
    const text = format.data === "json" ? `${JSON.stringify(await api.metrics(runId), null, 2)}\n` : await api.metricsText(runId, format.data);
    io.out(text);
  } catch (err) {
    const f = callFailure(err, { command: "metrics", workerUrl: worker.workerUrl, runId });
    io.err(`ajet-edge metrics: ${f.line}\n`);
    return f.code;
  }
  return 0;
}

const command: CliCommand = { name: "metrics", run: (argv) => runMetricsCommand(argv) };
export default command;
