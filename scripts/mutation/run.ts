/**
 * @module scripts/mutation/run — `npm run mutation`: StrykerJS over the rooms that decide what trains, incremental
 * against the committed baseline (reports/mutation/stryker-incremental.json), then the score of each room printed and
 * written to reports/mutation/summary.{md,json} with every survivor and its reason (test/mutation/survivors.yaml).
 * A partial run (`--files`, `--room`) is merged into the baseline: the files it did not mutate keep their results.
 *
 *   npm run mutation                          every room, incremental (only what changed since the baseline runs)
 *   npm run mutation -- --room scheduler      one room (repeat the flag or give a comma list for more)
 *   npm run mutation -- --room port --full    re-test every mutant of the room (ignore the baseline's results)
 *   npm run mutation -- --files src/scheduler/leases.ts,src/port/abort.ts   only these files
 *   npm run mutation -- --files src/scheduler/batches.ts --tests 'test/unit/scheduler/**'   judged by these unit
 *                                             tests only (a short run; a mutant other tests would kill may survive)
 *   npm run mutation -- --summary             re-read the last report (after editing survivors.yaml), run nothing
 *   npm run mutation -- --changed             CI: only the files that differ from the baseline, when estimated to
 *                                             take under --budget-minutes (default 10); never writes the baseline
 *
 * Exit codes: 0 done (or skipped, with one line saying why); 1 a `--changed` check found unexplained survivors in a
 * target room that is below its target score; 2 bad arguments.
 */
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";
import { parse as parseYaml } from "yaml";
import {
  ROOMS, changedFiles, estimateSeconds, mergeReports, mutateGlobs, renderMarkdown, roomOf, scoreLines, summarise, verdict,
  type FullMutationReport, type Room, type RoomTiming, type Summary, type SurvivorReason,
} from "./report.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const DIR = "reports/mutation";
const BASELINE = `${DIR}/stryker-incremental.json`;
const SUMMARY_JSON = `${DIR}/summary.json`;
const SURVIVORS = "test/mutation/survivors.yaml";
const STRYKER_BIN = "node_modules/@stryker-mutator/core/bin/stryker.js";

interface SummaryFile {
  rooms: Summary["rooms"];
  /** the counts of each measured file */
  files?: Summary["files"];
  survivors: number;
  unexplained: number;
  /** files of the rooms that existed when the baseline was written but are not in it (never measured): a
   * `--changed` check leaves them out instead of taking them for new files */
  unmeasured?: string[];
  /** measured per room on its last run alone (the `--changed` estimate reads it) */
  timing: Partial<Record<Room, RoomTiming & { wallSeconds: number; testedMutants: number; reusedMutants: number; concurrency: number }>>;
}

function fail(message: string): never {
  console.error(`npm run mutation: ${message}`);
  process.exit(2);
}

function readSurvivorReasons(): SurvivorReason[] {
  const path = join(ROOT, SURVIVORS);
  if (!existsSync(path)) return [];
  const list = parseYaml(readFileSync(path, "utf8")) ?? [];
  if (!Array.isArray(list)) fail(`${SURVIVORS} must be a YAML list of {file, mutator, original | line, replacement?, reason}`);
  for (const [i, e] of list.entries()) {
    for (const key of ["file", "mutator", "reason"]) {
      if (typeof e?.[key] !== "string" || e[key] === "") fail(`${SURVIVORS} entry ${i + 1} has no ${key}; each entry names file, mutator, original (or line) and a one-line reason`);
    }
    if (typeof e.original !== "string" && typeof e.line !== "string") fail(`${SURVIVORS} entry ${i + 1} (${e.file}) names neither original nor line: give the mutated code's start or a text of its line`);
  }
  return list as SurvivorReason[];
}

function readReport(path: string): FullMutationReport | null {
  return existsSync(join(ROOT, path)) ? (JSON.parse(readFileSync(join(ROOT, path), "utf8")) as FullMutationReport) : null;
}

/** The run's report merged into the baseline (see {@link mergeReports}): the other files keep their measured results. */
function mergedReport(before: FullMutationReport | null, runFile: string, scope: ReadonlySet<string>): FullMutationReport | null {
  const after = readReport(runFile);
  return after && mergeReports(before, after, scope, (f) => existsSync(join(ROOT, f)));
}

function readSummaryFile(): SummaryFile {
  const path = join(ROOT, SUMMARY_JSON);
  return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as SummaryFile) : { rooms: {}, survivors: 0, unexplained: 0, timing: {} };
}

/** Every `.ts` file of the rooms now: repository-relative path → content. */
function roomFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const room of ROOMS) {
    const dir = join(ROOT, "src", room);
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
      const file = relative(ROOT, join(dir, entry)).replaceAll("\\", "/");
      if (roomOf(file)) files.set(file, readFileSync(join(ROOT, file), "utf8"));
    }
  }
  return files;
}

/** What a Stryker run printed that the timing needs (its log lines carry HH:MM:SS stamps). */
interface RunLog {
  wallSeconds: number;
  dryRunSeconds: number | null;
  instrumented: number | null;
  reused: number;
  timedOut: boolean;
  exitCode: number | null;
}

/** Runs Stryker in its own process group (killed whole on `limitSeconds`), echoing its output. */
function runStryker(args: string[], limitSeconds: number | null, quiet: boolean, tests?: string): Promise<RunLog> {
  const started = Date.now();
  const env = { ...process.env, FORCE_COLOR: "0", NO_COLOR: "1", ...(tests ? { MUTATION_TESTS: tests } : {}) };
  const child = spawn(process.execPath, [STRYKER_BIN, "run", "stryker.config.mjs", ...args], {
    cwd: ROOT, detached: true, stdio: ["ignore", "pipe", "pipe"], env,
  });
  let text = "";
  let dryStart: number | null = null;
  let dryEnd: number | null = null;
  const onData = (chunk: Buffer, out: NodeJS.WriteStream) => {
    const s = chunk.toString();
    text += s.replace(/\x1b\[[0-9;]*m/g, ""); // Stryker colours some numbers whatever FORCE_COLOR says
    if (/Starting initial test run/.test(s)) dryStart ??= Date.now();
    if (/Initial test run succeeded/.test(s)) dryEnd ??= Date.now();
    if (!quiet) out.write(s);
  };
  child.stdout.on("data", (c: Buffer) => onData(c, process.stdout));
  child.stderr.on("data", (c: Buffer) => onData(c, process.stderr));
  let timedOut = false;
  const timer = limitSeconds === null ? null : setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-child.pid!, "SIGTERM");
    } catch {}
  }, limitSeconds * 1000);
  // this script's own end (Ctrl-C) ends Stryker and its test runners too
  const stop = () => {
    try {
      process.kill(-child.pid!, "SIGTERM");
    } catch {}
    process.exit(130);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return new Promise((resolve) => {
    child.on("close", (code) => {
      if (timer) clearTimeout(timer);
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      const instrumented = /Instrumented \d+ source file\(s\) with (\d+) mutant/.exec(text);
      const reused = /(\d+) of \d+ mutant result\(s\) are reused/.exec(text);
      resolve({
        wallSeconds: Math.round((Date.now() - started) / 1000),
        dryRunSeconds: dryStart !== null && dryEnd !== null ? Math.round((dryEnd - dryStart) / 1000) : null,
        instrumented: instrumented ? Number(instrumented[1]) : null,
        reused: reused ? Number(reused[1]) : 0,
        timedOut, exitCode: code,
      });
    });
  });
}

/** Files per room now (a room's score over fewer files is a partial measure, and says so). */
function roomFileCounts(): Partial<Record<Room, number>> {
  const counts: Partial<Record<Room, number>> = {};
  for (const file of roomFiles().keys()) {
    const room = roomOf(file)!;
    counts[room] = (counts[room] ?? 0) + 1;
  }
  return counts;
}

function writeSummary(summary: Summary, header: string, dir: string): void {
  mkdirSync(join(ROOT, dir), { recursive: true });
  writeFileSync(join(ROOT, dir, "summary.md"), renderMarkdown(summary, header, roomFileCounts()) + "\n");
}

function printScores(summary: Summary, title: string, part = false): void {
  console.log(`\n${title}`);
  for (const line of scoreLines(summary, roomFileCounts())) console.log(`  ${line}`);
  const unexplained = summary.survivors.filter((s) => s.reason === null).length;
  const stale = !part && summary.staleReasons.length ? `; ${summary.staleReasons.length} stale entries there` : "";
  console.log(`  ${summary.survivors.length} survivors, ${unexplained} without a reason in ${SURVIVORS}${stale}`);
}

/** The usage lines `--help` prints: this module's header, as written there. */
function usage(): string {
  const header = readFileSync(new URL(import.meta.url), "utf8").split("*/")[0] ?? "";
  return header.split("\n").slice(1).map((l) => l.replace(/^ \* ?/, "")).join("\n").trim();
}

async function main(): Promise<void> {
  const options = {
    room: { type: "string", multiple: true },
    files: { type: "string" },
    full: { type: "boolean", default: false },
    summary: { type: "boolean", default: false },
    changed: { type: "boolean", default: false },
    "budget-minutes": { type: "string", default: "10" },
    concurrency: { type: "string", default: "2" },
    tests: { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  } as const;
  let values: ReturnType<typeof parseArgs<{ options: typeof options }>>["values"];
  try {
    ({ values } = parseArgs({ options }));
  } catch (err) {
    fail(`${(err as Error).message}; npm run mutation -- --help lists the options`);
  }
  if (values.help) {
    console.log(usage());
    return;
  }
  const rooms = (values.room ?? []).flatMap((r) => r.split(",")).map((r) => r.trim()).filter(Boolean);
  for (const r of rooms) if (!(ROOMS as readonly string[]).includes(r)) fail(`--room ${r}: not a mutated room; choose from ${ROOMS.join(", ")}`);
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1) fail(`--concurrency ${values.concurrency}: give a whole number of test runner processes ≥ 1`);
  const budgetSeconds = Number(values["budget-minutes"]) * 60;
  if (!(budgetSeconds > 0)) fail(`--budget-minutes ${values["budget-minutes"]}: give a positive number of minutes`);
  const reasons = readSurvivorReasons();

  if (values.changed) return checkChanged(reasons, budgetSeconds, concurrency);

  const chosen: Room[] = rooms.length ? (rooms as Room[]) : [...ROOMS];
  let stored = readSummaryFile();
  if (!values.summary) {
    const files = values.files?.split(",").map((f) => f.trim()).filter(Boolean);
    for (const f of files ?? []) if (!roomOf(f) || !existsSync(join(ROOT, f))) fail(`--files ${f}: not a source file of the rooms (${ROOMS.map((r) => `src/${r}/`).join(", ")})`);
    // Stryker works on a copy of its own (and in a sandbox of its own): a run that fails leaves the baseline as it
    // was, a partial one is merged into the baseline as it is when the run ends, so two runs of different files can
    // share the checkout
    const runFile = `${DIR}/run/${process.pid}.json`;
    mkdirSync(join(ROOT, DIR, "run"), { recursive: true });
    if (existsSync(join(ROOT, BASELINE))) copyFileSync(join(ROOT, BASELINE), join(ROOT, runFile));
    else rmSync(join(ROOT, runFile), { force: true });
    const args = [
      "--mutate", files ? files.join(",") : mutateGlobs(chosen).join(","), "--incremental", "--incrementalFile", runFile,
      "--concurrency", String(concurrency), "--tempDirName", `.stryker-tmp/run-${process.pid}`,
    ];
    if (values.full) args.push("--force");
    const log = await runStryker(args, null, false, values.tests);
    if (log.exitCode !== 0) {
      console.error(`npm run mutation: Stryker exited with code ${log.exitCode}; the report was not updated (see its output above)`);
      process.exit(log.exitCode ?? 1);
    }
    const scope = new Set(files ?? [...roomFiles().keys()].filter((f) => chosen.includes(roomOf(f)!)));
    const report = mergedReport(readReport(BASELINE), runFile, scope);
    if (!report) fail(`Stryker finished but wrote no ${runFile}`);
    writeFileSync(join(ROOT, BASELINE), JSON.stringify(report, null, 2) + "\n");
    rmSync(join(ROOT, runFile), { force: true });
    stored = readSummaryFile(); // as another run may have left it
    const scored = summarise(report, reasons);
    const ranRooms = files ? [...new Set(files.map((f) => roomOf(f)!))] : chosen;
    // a run judged by fewer tests (--tests) is faster than CI's check would be: its rate is not recorded
    if (ranRooms.length === 1 && log.dryRunSeconds !== null && !values.tests) {
      const room = ranRooms[0]!;
      const files = Object.entries(report.files).filter(([f]) => roomOf(f) === room);
      const ignored = scored.rooms[room]?.ignored ?? 0;
      const tested = Math.max(0, (log.instrumented ?? 0) - log.reused - ignored);
      const lines = files.reduce((n, [, f]) => n + f.source.split("\n").length, 0);
      const mutants = files.reduce((n, [, f]) => n + f.mutants.length, 0);
      const previous = stored.timing[room];
      stored.timing[room] = {
        dryRunSeconds: log.dryRunSeconds,
        // an incremental run that tested a handful of mutants says little about the rate: keep the measured one
        secondsPerMutant: tested >= 20 || !previous ? Math.round(((log.wallSeconds - log.dryRunSeconds) / Math.max(1, tested)) * 100) / 100 : previous.secondsPerMutant,
        mutantsPerLine: lines > 0 ? Math.round((mutants / lines) * 1000) / 1000 : 0,
        wallSeconds: log.wallSeconds, testedMutants: tested, reusedMutants: log.reused, concurrency,
      };
    }
    console.log(`\nnpm run mutation: ${files ? files.join(", ") : chosen.join(", ")} in ${log.wallSeconds} s (initial test run ${log.dryRunSeconds ?? "?"} s, ${log.reused} mutant results reused from the baseline, concurrency ${concurrency})`);
  }
  const report = readReport(BASELINE);
  if (!report) fail(`no ${BASELINE} yet: run \`npm run mutation -- --room <room>\` first`);
  const summary = summarise(report, reasons);
  const unmeasured = [...roomFiles().keys()].filter((f) => !report.files[f]);
  const counts = { survivors: summary.survivors.length, unexplained: summary.survivors.filter((s) => s.reason === null).length };
  writeFileSync(join(ROOT, SUMMARY_JSON), JSON.stringify({ rooms: summary.rooms, ...counts, unmeasured, files: summary.files, timing: stored.timing } satisfies SummaryFile, null, 2) + "\n");
  writeSummary(summary, `Scores over the unit project, each room's over the files measured (how many of its files: the table); a file measured with \`--tests\` was judged by the unit tests that state its rules only, so its score is a lower bound. The full report is ${BASELINE} (mutation-testing-report-schema JSON, also Stryker's incremental baseline) and reports/mutation/index.html (not committed).`, DIR);
  printScores(summary, `mutation score per room (${DIR}/summary.md):`);
}

/** CI: test the files that differ from the baseline when that fits the budget; one line when it is skipped. */
async function checkChanged(reasons: readonly SurvivorReason[], budgetSeconds: number, concurrency: number): Promise<void> {
  const baseline = readReport(BASELINE);
  if (!baseline) return console.log(`mutation check skipped: no baseline ${BASELINE} (make one with npm run mutation)`);
  // a room the baseline has never measured has nothing to compare with (and no timing): it is left out, and said so
  const measured = new Set(Object.keys(baseline.files).map(roomOf).filter((r) => r !== null));
  const unmeasured = ROOMS.filter((r) => !measured.has(r));
  const note = unmeasured.length ? ` (rooms not in the baseline, not checked: ${unmeasured.join(", ")})` : "";
  const stored = readSummaryFile();
  const unmeasuredFiles = new Set(stored.unmeasured ?? []);
  const changed = changedFiles(baseline, roomFiles()).filter((c) => measured.has(c.room) && !unmeasuredFiles.has(c.file));
  if (changed.length === 0) return console.log(`mutation check: no file of the mutated rooms differs from the baseline; nothing to test${note}`);
  const estimate = estimateSeconds(changed, stored.timing);
  const names = changed.map((c) => c.file);
  if (estimate === null) return console.log(`mutation check skipped: no measured timing for room(s) of ${names.join(", ")} in ${SUMMARY_JSON} (run npm run mutation -- --room <room> once)`);
  if (estimate > budgetSeconds) {
    return console.log(`mutation check skipped: ${changed.length} changed file(s) (${changed.reduce((n, c) => n + c.changedLines, 0)} changed lines) estimated at ${Math.ceil(estimate / 60)} min, over the ${budgetSeconds / 60} min budget; run npm run mutation and commit ${BASELINE} to make it cheap again`);
  }
  console.log(`mutation check: ${names.length} changed file(s) vs the baseline, estimated ${Math.ceil(estimate / 60)} min: ${names.join(", ")}${note}`);
  const dir = `${DIR}/changed`;
  mkdirSync(join(ROOT, dir), { recursive: true });
  const incremental = `${dir}/stryker-incremental.json`;
  copyFileSync(join(ROOT, BASELINE), join(ROOT, incremental)); // the committed baseline stays as it is
  const args = ["--mutate", names.join(","), "--incremental", "--incrementalFile", incremental, "--concurrency", String(concurrency)];
  // a hard stop at 1.5× the budget: an estimate that was wrong skips the check, it never hangs or fails CI
  const log = await runStryker(args, Math.round(budgetSeconds * 1.5), true);
  if (log.timedOut) return console.log(`mutation check skipped: Stryker had not finished after ${Math.round(budgetSeconds * 1.5 / 60)} min (estimate ${Math.ceil(estimate / 60)} min); stopped`);
  if (log.exitCode !== 0) return console.log(`mutation check skipped: Stryker exited with code ${log.exitCode} (an instrumented test run failed or timed out; run npm run mutation -- --changed to see why)`);
  const only = new Set(names);
  const report = mergedReport(baseline, incremental, only);
  if (!report) return console.log(`mutation check skipped: Stryker wrote no ${incremental}`);
  const part = summarise(report, reasons, only);
  const whole = summarise(report, reasons);
  writeSummary(part, `Changed files only (${names.join(", ")}), run ${log.wallSeconds} s.`, dir);
  printScores(part, `mutation check in ${log.wallSeconds} s (estimate ${estimate} s), score of the changed files per room:`, true);
  const { fail: failed, lines } = verdict(whole, only, summarise(baseline, reasons).rooms);
  for (const line of lines) console.log(`  ${line}`);
  if (failed) process.exit(1);
}

await main();
