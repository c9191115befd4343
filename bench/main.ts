/**
 * @module bench/main — `npm run bench` (the project's benchmarks; not a command of the published CLI): runs the benchmarks in `bench/`, prints a
 * table and writes `bench/results.json` (or `--out FILE`). Speed and memory targets live here, never in tests.
 * Besides the timing groups, system benchmarks run on the real stack (emulator + the Worker in local workerd):
 * `swarm-cycle` (issue 11's timing shape at LLM 200 ms and 1000 ms, each beside the Python-client-like baseline on the
 * same cycle, with requests per trained step by route, ~10 min), `tail` (issue 23: the cycle with heavy-tailed LLM
 * latency, without and with over-provisioning, against the same cycle without the tail, ~10 min) and `load` (2,000 episodes in flight,
 * ~1–2 min), `sandboxes` (500 sandbox creations at once on the local backend, ~1.5 min) and `cost` (a 3-step run's
 * printed cost against a hand computation, < 5 % apart, ~30 s), `episode-worker` (the episode Worker's bundle,
 * its and the main Worker's cold start in workerd, CPU per episode, ~1 min) and `agree-cycle` (steps/hour in the all-agree mode against
 * finish_enough_tasks on the same emulator, ~3 min). `--skip swarm-cycle,load,sandboxes,cost,agree-cycle` leaves
 * them out; `--only` picks groups of either kind. `gsm8k-recall` is a
 * measurement, not a timing: the graders' recall per answer shape on the GSM8K test golds (a few seconds).
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import { pathToFileURL } from "node:url";
import type { Command } from "commander";
import { helpOf, parseFlags } from "../src/cli/args.ts";
import { formatResults, type BenchResult } from "./harness.ts";
import { datasetBenchmarks } from "./datasets.bench.ts";
import { measureGsm8kRecall } from "./gsm8k-recall.bench.ts";
import { rewardBenchmarks } from "./rewards.bench.ts";
import { runtimeBenchmarks } from "./runtime.bench.ts";
import { schedulerBenchmarks } from "./scheduler.bench.ts";
import { formatLoad, LOAD_TARGETS, measureLoad } from "./load.bench.ts";
import { formatCost, measureCost } from "./cost.bench.ts";
import { formatRequestRatio, formatSwarmCycle, formatTail, issueShape, measureSwarmCycle, metRequestTarget, metSwarmCycleTargets, TAIL_OVER_PROVISION, TAIL_TARGET_SHARE, tailShape } from "./swarm-cycle.bench.ts";
import { formatAgreeCycle, measureAgreeCycle } from "./agree-cycle.bench.ts";
import { formatSandboxes, measureSandboxes, metSandboxTargets } from "./sandbox.bench.ts";
import { formatEpisodeWorker, measureEpisodeWorker, metEpisodeWorkerTargets } from "./episode-worker.bench.ts";
import { CliError } from "../src/cli/command.ts";

const GROUPS: Record<string, () => Promise<BenchResult[]>> = {
  rewards: rewardBenchmarks,
  scheduler: schedulerBenchmarks,
  runtime: runtimeBenchmarks,
  datasets: datasetBenchmarks,
};

/** A system benchmark: its printed lines, its JSON for results.json, and whether it met its targets. */
interface SystemBench {
  lines: string[];
  json: unknown;
  met: boolean;
}

const SYSTEM: Record<string, () => Promise<SystemBench>> = {
  "swarm-cycle": async () => {
    const runs = [];
    const lines: string[] = [];
    let met = true;
    for (const llmMs of [200, 1_000]) {
      const ours = await measureSwarmCycle(issueShape(llmMs));
      const python = await measureSwarmCycle(issueShape(llmMs), undefined, "python");
      runs.push(ours, python);
      lines.push(...formatSwarmCycle(ours), ...formatSwarmCycle(python), formatRequestRatio(ours, python));
      met &&= metSwarmCycleTargets(ours) && metRequestTarget(ours, python);
    }
    return { lines, json: runs, met };
  },
  tail: async () => {
    const noTail = await measureSwarmCycle(tailShape(false));
    const tail = await measureSwarmCycle(tailShape(true));
    const provisioned = await measureSwarmCycle(tailShape(true, 10, TAIL_OVER_PROVISION));
    return { lines: formatTail(noTail, tail, provisioned), json: { noTail, tail, provisioned }, met: provisioned.stepsPerHour >= TAIL_TARGET_SHARE * noTail.stepsPerHour };
  },
  // issue 20 §3: steps/hour in the all-agree mode against finish_enough_tasks on the same emulator (~3 min)
  "agree-cycle": async () => {
    const r = await measureAgreeCycle();
    return { lines: formatAgreeCycle(r), json: r, met: r.allAgree.episodes > 0 };
  },
  cost: async () => {
    const r = await measureCost();
    return { lines: formatCost(r), json: r, met: r.difference < 0.05 };
  },
  load: async () => {
    const r = await measureLoad(2_000);
    return { lines: formatLoad(r), json: r, met: r.statusP95Ms < LOAD_TARGETS.statusP95Ms && r.workerdRssMiB < LOAD_TARGETS.memoryMiB && r.allClaimedS !== null && r.allClaimedS <= LOAD_TARGETS.allClaimedS };
  },
  sandboxes: async () => {
    const rs = await measureSandboxes();
    return { lines: formatSandboxes(rs), json: rs, met: metSandboxTargets(rs) };
  },
  "episode-worker": async () => {
    const r = await measureEpisodeWorker();
    return { lines: formatEpisodeWorker(r), json: r, met: metEpisodeWorkerTargets(r) };
  },
};

/** Measurements that are not timings, printed and written like the system benchmarks (in-process, seconds). */
const MEASURES: Record<string, () => Promise<SystemBench>> = {
  "gsm8k-recall": measureGsm8kRecall,
};

/** The command's flags (the help is generated from these). */
function defineBenchFlags(cmd: Command): void {
  cmd
    .description("Runs the benchmarks in bench/, prints a table and writes the results as JSON.")
    .option("--only <groups>", `comma-separated groups: ${[...Object.keys(GROUPS), ...Object.keys(MEASURES), ...Object.keys(SYSTEM)].join(", ")} (default: all)`)
    .option("--skip <groups>", "comma-separated groups to leave out, e.g. swarm-cycle,load (the system benchmarks take minutes)")
    .option("--out <file>", "where to write the results", "bench/results.json");
}

/**
 * Runs the benchmarks named by `argv` (`--only`, `--skip`, `--out`).
 * @returns 0 every target met; 1 a target missed (or a system benchmark did not finish)
 * @throws CliError naming an unknown group
 */
export async function runBench(argv: string[]): Promise<number> {
  const flags = parseFlags("bench", defineBenchFlags, argv);
  if (!flags) {
    console.log(helpOf("bench", defineBenchFlags).replace(/^Usage: ajet-edge bench/, "Usage: npm run bench --"));
    return 0;
  }
  const only = flags.values["only"] as string | undefined;
  const out = flags.values["out"] as string;
  const skip = new Set(((flags.values["skip"] as string | undefined) ?? "").split(",").filter(Boolean));
  const known = [...Object.keys(GROUPS), ...Object.keys(MEASURES), ...Object.keys(SYSTEM)];
  const names = (only ? only.split(",") : known).filter((n) => !skip.has(n));
  const unknown = [...names, ...skip].filter((n) => !known.includes(n));
  if (unknown.length) throw new CliError(`unknown benchmark group ${unknown.join(", ")}; known: ${known.join(", ")}`);
  const results: BenchResult[] = [];
  for (const n of names.filter((x) => GROUPS[x])) results.push(...(await GROUPS[n]!()));
  const rssMiB = process.memoryUsage().rss / 2 ** 20;
  if (results.length) {
    console.log(formatResults(results));
    for (const r of results.filter((x) => x.note)) console.log(`  ${r.name}: ${r.note}`);
  }
  const system: Record<string, unknown> = {};
  let systemMet = true;
  for (const n of names.filter((x) => MEASURES[x])) {
    const m = await MEASURES[n]!();
    for (const line of m.lines) console.log(line);
    system[n] = m.json;
    systemMet &&= m.met;
  }
  for (const n of names.filter((x) => SYSTEM[x])) {
    console.log(`${n} (${n === "sandboxes" ? "the local sandbox server in its own process" : "emulator + the Worker in local workerd"}) …`);
    // a system benchmark that cannot finish is reported as missed with its reason; the others still run
    const b = await SYSTEM[n]!().catch(
      (err: unknown): SystemBench => ({
        lines: [`${n}: did not finish (MISSED): ${err instanceof Error ? err.message : String(err)}`],
        json: { error: String(err) },
        met: false,
      }),
    );
    for (const line of b.lines) console.log(line);
    system[n] = b.json;
    systemMet &&= b.met;
  }
  console.log(`peak-ish RSS of the bench process: ${rssMiB.toFixed(0)} MiB`);
  const report = {
    at: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? "",
    loadAverage: os.loadavg(),
    rssMiB: Math.round(rssMiB),
    results,
    ...system,
  };
  await writeFile(out, JSON.stringify(report, null, 2) + "\n");
  console.log(`written to ${out}`);
  return results.some((r) => r.metTarget === false) || !systemMet ? 1 : 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await runBench(process.argv.slice(2)).catch((err: unknown) => {
    if (!(err instanceof CliError)) throw err;
    console.error(`npm run bench: ${err.message}`);
    return 2;
  });
}
