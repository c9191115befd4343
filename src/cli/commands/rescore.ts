/**
 * @module cli/commands/rescore — `ajet-edge rescore RUN --reward FILE | --function NAME [--worker URL] [--json]`:
 * re-scores every stored transcript of a run with another reward (cli/rescore/rescore), here in Node: the CLI reads
 * the run's attempts and transcripts from the Worker (`GET /runs/:id/attempts`, `/episodes/:key`) and nothing else —
 * no claim, no LLM call, no request to a swarm server. `--reward FILE` is a module exporting `score(transcript,
 * task)` (or a default function); `--function NAME` takes the `score` export of the project's `functions/NAME.ts` as
 * it is on disk now (the function's reward code at this version). Prints the old and new mean reward per step, the
 * share of episodes whose reward changed, the groups whose GRPO signal appears or disappears, and what was skipped.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Command } from "commander";
import { helpOf, parseFlags } from "../args.ts";
import { CliError, type CliCommand } from "../command.ts";
import { processIo, type DevIo } from "../dev/output.ts";
import { findProject } from "../dev/project.ts";
import { formatReward, table } from "../dev/render.ts";
import { callFailure, defineWorkerFlags, workerApi } from "../dev/worker-call.ts";
import { rescore, type RescoreReport, type Rescorer } from "../rescore/rescore.ts";

function defineRescoreFlags(cmd: Command): void {
  cmd.description("Re-scores the stored transcripts of a run with another reward (no claim, no LLM call, no swarm server).").argument("<run>", "the run id (from `ajet-edge runs`)");
  defineWorkerFlags(cmd);
  cmd
    .option("--reward <file>", "a module exporting score(transcript, task) → number | { reward } (or a default function)")
    .option("--function <name>", "the score export of the project's functions/NAME.ts, as it is on disk now")
    .option("--json", "print the comparison as JSON (every re-scored episode included)");
}

/**
 * Loads the scorer a flag names.
 * @throws CliError naming the file and what it must export
 */
export async function loadRescorer(values: Record<string, unknown>, cwd = process.cwd()): Promise<{ name: string; score: Rescorer }> {
  const file = values["reward"] as string | undefined;
  const fn = values["function"] as string | undefined;
  if ((file === undefined) === (fn === undefined)) throw new CliError("give one reward to re-score with: --reward FILE (a module exporting score) or --function NAME");
  let path: string;
  if (file !== undefined) path = resolve(cwd, file);
  else {
    if (!/^[a-z0-9][a-z0-9-]*$/.test(fn!)) throw new CliError(`--function must be a function's kebab-case name, e.g. countdown; got ${JSON.stringify(fn)}`);
    path = join(findProject(cwd).root, "functions", `${fn}.ts`);
  }
  if (!existsSync(path)) throw new CliError(`${path} does not exist; ${file !== undefined ? "--reward takes a module file" : "--function names a file in functions/"}`);
  const { tsImport } = await import("tsx/esm/api");
  const mod = (await tsImport(pathToFileURL(path).href, import.meta.url)) as { score?: unknown; default?: unknown };
  const score = typeof mod.score === "function" ? mod.score : file !== undefined && typeof mod.default === "function" ? mod.default : null;
  if (!score) throw new CliError(`${path} must export a function score(transcript, task) returning a reward (a number or { reward })`);
  return { name: file !== undefined ? file : `functions/${fn}.ts score`, score: score as Rescorer };
}

/** The comparison as text: one row per step, then totals, signal changes and skips. */
export function renderRescore(r: RescoreReport): string {
  const rows = [["step", "episodes", "old mean", "new mean", "changed"]];
  for (const s of r.steps) rows.push([s.window === null ? "eval" : String(s.window), String(s.episodes), formatReward(s.oldMean), formatReward(s.newMean), String(s.changed)]);
  rows.push(["total", String(r.episodes), formatReward(r.oldMean), formatReward(r.newMean), String(r.rescored.filter((e) => Math.abs(e.newReward - e.oldReward) > 1e-9).length)]);
  const share = r.changedShare === null ? "-" : `${(r.changedShare * 100).toFixed(1)}%`;
  const list = (keys: string[]) => (keys.length ? `${keys.length} (${keys.slice(0, 8).join(", ")}${keys.length > 8 ? ", …" : ""})` : "0");
  const skippedTotal = Object.values(r.skipped).reduce((a, b) => a + b, 0);
  const skips = Object.entries(r.skipped).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(", ");
  return [
    `re-scored run ${r.runId} with ${r.scorer}:`,
    r.steps.length ? table(rows, rows[0]!.map((_, i) => i > 0)) : "no transcript to re-score",
    `reward changed for ${share} of the re-scored episodes`,
    `GRPO signal appears in ${list(r.signalAppears)} groups, disappears from ${list(r.signalDisappears)}`,
    `skipped: ${skippedTotal ? skips : "none"}`,
    ...r.skipNotes.map((n) => `  e.g. ${n}`),
  ].join("\n");
}

/**
 * Runs the command with injectable I/O and environment.
 * @returns 0 re-scored; 1 no such run / the Worker failed; 2 a refused token
 * @throws CliError on a usage error (no reward, a file without `score`)
 */
export async function runRescoreCommand(argv: string[], io: DevIo = processIo, env: NodeJS.ProcessEnv = process.env, fetchFn: typeof fetch = fetch, cwd = process.cwd()): Promise<number> {
  const flags = parseFlags("rescore", defineRescoreFlags, argv);
  if (!flags) {
    io.out(`${helpOf("rescore", defineRescoreFlags)}\n`);
    return 0;
  }
  const runId = flags.positionals[0]!;
  const scorer = await loadRescorer(flags.values, cwd);
  const { api, worker } = workerApi(flags.values, env, fetchFn);
  let report: RescoreReport;
  try {
    const rows = await api.attempts(runId);
    if (rows.length >= 10_000) io.err("ajet-edge rescore: the run has 10,000 reported attempts or more; the first 10,000 are re-scored\n");
    report = await rescore(runId, scorer, rows, (row) => api.transcript(runId, row.episodeKey, row.attempt));
  } catch (err) {
    const f = callFailure(err, { command: "rescore", workerUrl: worker.workerUrl, runId });
    io.err(`ajet-edge rescore: ${f.line}\n`);
    return f.code;
  }
  io.out(flags.values["json"] ? `${JSON.stringify(report, null, 2)}\n` : `${renderRescore(report)}\n`);
  return 0;
}

const command: CliCommand = { name: "rescore", run: (argv) => runRescoreCommand(argv) };
export default command;
