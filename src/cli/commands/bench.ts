/**
 * @module cli/commands/bench — `ajet-edge bench` (`npm run bench`): runs the benchmarks in `bench/`, prints a
 * table and writes `bench/results.json` (or `--out FILE`). Speed and memory targets live here, never in tests.
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import { parseFlags } from "../args.ts";
import { formatResults, type BenchResult } from "../../../bench/harness.ts";
import { datasetBenchmarks } from "../../../bench/datasets.bench.ts";
import { rewardBenchmarks } from "../../../bench/rewards.bench.ts";
import { runtimeBenchmarks } from "../../../bench/runtime.bench.ts";
import { schedulerBenchmarks } from "../../../bench/scheduler.bench.ts";
import { CliError, type CliCommand } from "../command.ts";

const GROUPS: Record<string, () => Promise<BenchResult[]>> = {
  rewards: rewardBenchmarks,
  scheduler: schedulerBenchmarks,
  runtime: runtimeBenchmarks,
  datasets: datasetBenchmarks,
};

const usage = `usage: ajet-edge bench [--only rewards|scheduler|runtime|datasets] [--out bench/results.json]`;

const command: CliCommand = {
  name: "bench",
  async run(argv) {
    const flags = parseFlags(argv, { only: { type: "string" }, out: { type: "string", default: "bench/results.json" } });
    if (!flags) {
      console.log(usage);
      return 0;
    }
    const only = flags.values["only"] as string | undefined;
    const out = flags.values["out"] as string;
    const names = only ? only.split(",") : Object.keys(GROUPS);
    const unknown = names.filter((n) => !GROUPS[n]);
    if (unknown.length) throw new CliError(`unknown benchmark group ${unknown.join(", ")}; known: ${Object.keys(GROUPS).join(", ")}`);
    const results: BenchResult[] = [];
    for (const n of names) results.push(...(await GROUPS[n]!()));
    const rssMiB = process.memoryUsage().rss / 2 ** 20;
    console.log(formatResults(results));
    for (const r of results.filter((x) => x.note)) console.log(`  ${r.name}: ${r.note}`);
    console.log(`peak-ish RSS of the bench process: ${rssMiB.toFixed(0)} MiB`);
    const report = { at: new Date().toISOString(), node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? "", rssMiB: Math.round(rssMiB), results };
    await writeFile(out, JSON.stringify(report, null, 2) + "\n");
    console.log(`written to ${out}`);
    return results.some((r) => r.metTarget === false) ? 1 : 0;
  },
};
export default command;
