/**
 * @module scripts/mutation/report — pure reading of a StrykerJS JSON report (mutation-testing-report-schema): the
 * score of each room, its surviving mutants with the reason a committed file gives for each (equivalent mutants
 * etc.), the files that changed since a baseline report and how long testing them is estimated to take. No I/O:
 * scripts/mutation/run.ts reads and writes the files.
 */

/** The rooms `npm run mutation` mutates: the code that decides what trains (issue 24). */
export const ROOMS = ["scheduler", "rewards", "client", "port", "runtime", "tasks"] as const;
export type Room = (typeof ROOMS)[number];

/** Rooms held to {@link TARGET_SCORE}; `runtime` and `tasks` are measured and reported only. */
export const TARGET_ROOMS: readonly Room[] = ["scheduler", "rewards", "client", "port"];

/** Mutation score (percent) each target room is held to. */
export const TARGET_SCORE = 85;

/** The mutate globs of some rooms (every `.ts` of the room but its barrel `index.ts`, which only re-exports). */
export function mutateGlobs(rooms: readonly Room[]): string[] {
  return [...rooms.map((r) => `src/${r}/**/*.ts`), "!src/**/index.ts"];
}

/** The room of a repository-relative path (`src/scheduler/leases.ts` → `scheduler`), or null outside the rooms. */
export function roomOf(file: string): Room | null {
  const m = /^src\/([^/]+)\/.+\.ts$/.exec(file.replaceAll("\\", "/"));
  if (!m || /(^|\/)index\.ts$/.test(file)) return null;
  return (ROOMS as readonly string[]).includes(m[1]!) ? (m[1] as Room) : null;
}

/** A mutant as the JSON report holds it (the fields read here). Lines and columns are 1-based. */
export interface ReportMutant {
  id: string;
  mutatorName: string;
  replacement?: string;
  status: "Killed" | "Survived" | "NoCoverage" | "Timeout" | "CompileError" | "RuntimeError" | "Ignored" | "Pending";
  statusReason?: string;
  location: { start: { line: number; column: number }; end: { line: number; column: number } };
}

/** The JSON report's shape, as read here: file name (relative to the project) → its source and mutants. */
export interface MutationReport {
  files: Record<string, { source: string; mutants: ReportMutant[] }>;
}

/**
 * One entry of the committed survivors file: which mutants (file, mutator, the code it changes, the replacement) and
 * why they stay. An entry names one mutant by `original` (+ `replacement`), or a kind of mutant by `line`: every
 * mutant of `mutator` on a source line containing that text (e.g. all mutants inside `d.log(` calls: log text).
 */
export interface SurvivorReason {
  /** repository-relative path; `*` matches within a folder, `**` across folders */
  file: string;
  /** Stryker's mutator name, or `*` for any */
  mutator: string;
  /** the start of the mutated code, whitespace collapsed (a prefix of the original text is enough) */
  original?: string;
  /** the replacement, whitespace collapsed; omitted = any replacement of that code by that mutator */
  replacement?: string;
  /** text the mutant's (first) source line contains */
  line?: string;
  /** one line: why no test should kill it (equivalent mutant, log text only, …) */
  reason: string;
}

/** Counts of one room (or file set) and its mutation score. */
export interface ScoreCounts {
  /** files of the room the report holds (a room measured in part has fewer than the room's files) */
  files: number;
  killed: number;
  timeout: number;
  survived: number;
  noCoverage: number;
  ignored: number;
  errors: number;
  /** detected / (detected + undetected) × 100, detected = killed + timeout, undetected = survived + no coverage; null when nothing was valid */
  score: number | null;
}

/** A mutant no test detected (Survived or NoCoverage), with its reason when the survivors file gives one. */
export interface Survivor {
  file: string;
  line: number;
  column: number;
  mutator: string;
  status: "Survived" | "NoCoverage";
  original: string;
  replacement: string;
  reason: string | null;
}

/** Collapses whitespace runs to one space (survivor entries are matched on this form). */
export const squash = (text: string): string => text.replace(/\s+/g, " ").trim();

/** The source text a mutant replaces (its location in the file's source). */
export function originalText(source: string, mutant: ReportMutant): string {
  const lines = source.split("\n");
  const { start, end } = mutant.location;
  if (start.line === end.line) return (lines[start.line - 1] ?? "").slice(start.column - 1, end.column - 1);
  const first = (lines[start.line - 1] ?? "").slice(start.column - 1);
  const middle = lines.slice(start.line, end.line - 1);
  const last = (lines[end.line - 1] ?? "").slice(0, end.column - 1);
  return [first, ...middle, last].join("\n");
}

/** `*` within a folder, `**` across folders; everything else literal. */
function globMatches(glob: string, file: string): boolean {
  if (!glob.includes("*")) return glob === file;
  const re = glob.split("**").map((part) => part.split("*").map((t) => t.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join("[^/]*")).join(".*");
  return new RegExp(`^${re}$`).test(file);
}

/**
 * Whether a survivors-file entry names this mutant.
 * @param sourceLine the full source line the mutant starts on
 */
export function reasonMatches(entry: SurvivorReason, file: string, mutator: string, original: string, replacement: string, sourceLine = ""): boolean {
  if (!globMatches(entry.file, file) || (entry.mutator !== "*" && entry.mutator !== mutator)) return false;
  if (entry.line !== undefined && !sourceLine.includes(entry.line)) return false;
  if (entry.original !== undefined && !squash(original).startsWith(squash(entry.original))) return false;
  return entry.replacement === undefined || squash(entry.replacement) === squash(replacement);
}

/** Adds one mutant to counts (the score is computed by {@link finishScore}). */
function count(counts: ScoreCounts, status: ReportMutant["status"]): void {
  if (status === "Killed") counts.killed++;
  else if (status === "Timeout") counts.timeout++;
  else if (status === "Survived") counts.survived++;
  else if (status === "NoCoverage") counts.noCoverage++;
  else if (status === "Ignored") counts.ignored++;
  else if (status === "CompileError" || status === "RuntimeError") counts.errors++;
}

function emptyCounts(): ScoreCounts {
  return { files: 0, killed: 0, timeout: 0, survived: 0, noCoverage: 0, ignored: 0, errors: 0, score: null };
}

function finishScore(c: ScoreCounts): ScoreCounts {
  const detected = c.killed + c.timeout;
  const valid = detected + c.survived + c.noCoverage;
  return { ...c, score: valid === 0 ? null : Math.round((detected / valid) * 10_000) / 100 };
}

/** What {@link summarise} returns: counts per room (rooms without files in the report are absent) and every survivor. */
export interface Summary {
  rooms: Partial<Record<Room, ScoreCounts>>;
  /** the same counts per measured file (repository-relative path), in path order */
  files: Record<string, ScoreCounts>;
  survivors: Survivor[];
  /** survivors-file entries that matched no surviving mutant (fixed code or killed since: delete them) */
  staleReasons: SurvivorReason[];
}

/**
 * Scores each room of the report and lists its survivors with their reasons.
 * @param only when given, only these files are counted (the changed files of a CI check)
 */
export function summarise(report: MutationReport, reasons: readonly SurvivorReason[], only?: ReadonlySet<string>): Summary {
  const rooms: Partial<Record<Room, ScoreCounts>> = {};
  const files: Record<string, ScoreCounts> = {};
  const survivors: Survivor[] = [];
  const used = new Set<SurvivorReason>();
  for (const [file, { source, mutants }] of Object.entries(report.files).sort(([a], [b]) => a.localeCompare(b))) {
    const room = roomOf(file);
    if (!room || (only && !only.has(file))) continue;
    const counts = (rooms[room] ??= emptyCounts());
    counts.files++;
    const own = (files[file] = { ...emptyCounts(), files: 1 });
    for (const m of [...mutants].sort((a, b) => a.location.start.line - b.location.start.line || a.location.start.column - b.location.start.column)) {
      count(counts, m.status);
      count(own, m.status);
      if (m.status !== "Survived" && m.status !== "NoCoverage") continue;
      const original = originalText(source, m);
      const replacement = m.replacement ?? m.mutatorName;
      const sourceLine = source.split("\n")[m.location.start.line - 1] ?? "";
      const entry = reasons.find((r) => reasonMatches(r, file, m.mutatorName, original, replacement, sourceLine));
      if (entry) used.add(entry);
      const { line, column } = m.location.start;
      survivors.push({ file, line, column, mutator: m.mutatorName, status: m.status, original, replacement, reason: entry?.reason ?? null });
    }
  }
  for (const room of Object.keys(rooms) as Room[]) rooms[room] = finishScore(rooms[room]!);
  for (const file of Object.keys(files)) files[file] = finishScore(files[file]!);
  return { rooms, files, survivors, staleReasons: reasons.filter((r) => !used.has(r)) };
}

const clip = (text: string, max = 70): string => {
  const s = squash(text);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};

/**
 * One line per room: `scheduler  91.20 %  (1200 killed, 30 timeout, 110 survived, 4 no coverage, 6 ignored, 20 of 28
 * files measured) target ≥ 85 %` — the score is over the files measured only.
 */
export function scoreLines(summary: Summary, roomFiles: Partial<Record<Room, number>> = {}): string[] {
  return ROOMS.filter((r) => summary.rooms[r]).map((r) => {
    const c = summary.rooms[r]!;
    const score = c.score === null ? "   n/a" : `${c.score.toFixed(2).padStart(6)} %`;
    const target = TARGET_ROOMS.includes(r) ? ` target ≥ ${TARGET_SCORE} %` : " (reported, no target)";
    const part = roomFiles[r] !== undefined ? `, ${c.files} of ${roomFiles[r]} files measured` : "";
    return `${r.padEnd(10)} ${score}  (${c.killed} killed, ${c.timeout} timeout, ${c.survived} survived, ${c.noCoverage} no coverage, ${c.ignored} ignored${part})${target}`;
  });
}

/** The summary as Markdown: the score table, then every survivor of the target rooms with its reason. */
export function renderMarkdown(summary: Summary, header: string, roomFiles: Partial<Record<Room, number>> = {}): string {
  const out = [`# Mutation testing (StrykerJS, unit project)`, "", header, "", "| room | score | files measured | killed | timeout | survived | no coverage | ignored (static) |", "|---|---|---|---|---|---|---|---|"];
  for (const r of ROOMS) {
    const c = summary.rooms[r];
    if (!c) continue;
    const target = TARGET_ROOMS.includes(r) ? ` (target ≥ ${TARGET_SCORE} %)` : "";
    const of = roomFiles[r] === undefined ? `${c.files}` : `${c.files} of ${roomFiles[r]}`;
    out.push(`| ${r} | ${c.score === null ? "n/a" : `${c.score.toFixed(2)} %`}${target} | ${of} | ${c.killed} | ${c.timeout} | ${c.survived} | ${c.noCoverage} | ${c.ignored} |`);
  }
  out.push("", "## Files of the target rooms", "", "| file | score | killed | timeout | survived | no coverage | survivors without a reason |", "|---|---|---|---|---|---|---|");
  for (const [file, c] of Object.entries(summary.files)) {
    if (!TARGET_ROOMS.includes(roomOf(file)!)) continue;
    const open = summary.survivors.filter((s) => s.file === file && s.reason === null).length;
    out.push(`| ${file} | ${c.score === null ? "n/a" : `${c.score.toFixed(2)} %`} | ${c.killed} | ${c.timeout} | ${c.survived} | ${c.noCoverage} | ${open} |`);
  }
  const unexplained = summary.survivors.filter((s) => s.reason === null);
  out.push("", `## Survivors (${summary.survivors.length}; ${unexplained.length} without a reason in test/mutation/survivors.yaml)`, "");
  for (const r of ROOMS) {
    const list = summary.survivors.filter((s) => roomOf(s.file) === r);
    if (list.length === 0) continue;
    out.push(`### ${r} (${list.length})`, "");
    for (const s of list) {
      const what = `\`${clip(s.original, 60)}\` → \`${clip(s.replacement, 40)}\``.replaceAll("|", "\\|");
      out.push(`- ${s.file}:${s.line}:${s.column} ${s.mutator}${s.status === "NoCoverage" ? " (no coverage)" : ""} ${what} — ${s.reason ?? "**no reason yet**"}`);
    }
    out.push("");
  }
  if (summary.staleReasons.length > 0) {
    out.push(`## Stale entries of test/mutation/survivors.yaml (${summary.staleReasons.length}: they match no survivor now)`, "");
    for (const e of summary.staleReasons) out.push(`- ${e.file} ${e.mutator} \`${clip(e.original ?? e.line ?? "", 60)}\``);
    out.push("");
  }
  return out.join("\n");
}

/** A file of the rooms whose content differs from the baseline report's copy (or that the baseline lacks). */
export interface ChangedFile {
  file: string;
  room: Room;
  /** lines of the current file that the baseline's copy does not have (a multiset line diff) */
  changedLines: number;
  /** mutants of the baseline's copy, or null for a file the baseline lacks */
  baselineMutants: number | null;
  lines: number;
}

/** Lines of `now` not found in `before` (each line of `before` used once): a cheap, order-free measure of a change. */
export function changedLineCount(before: string, now: string): number {
  const pool = new Map<string, number>();
  for (const line of before.split("\n")) pool.set(line.trim(), (pool.get(line.trim()) ?? 0) + 1);
  let changed = 0;
  for (const line of now.split("\n")) {
    const key = line.trim();
    const left = pool.get(key) ?? 0;
    if (left > 0) pool.set(key, left - 1);
    else if (key !== "") changed++;
  }
  return changed;
}

/**
 * The files of the rooms whose content differs from the baseline report.
 * @param current repository-relative path → content of every `.ts` file of the rooms now
 */
export function changedFiles(baseline: MutationReport, current: ReadonlyMap<string, string>): ChangedFile[] {
  const out: ChangedFile[] = [];
  for (const [file, content] of [...current].sort(([a], [b]) => a.localeCompare(b))) {
    const room = roomOf(file);
    if (!room) continue;
    const before = baseline.files[file];
    if (before && before.source === content) continue;
    out.push({
      file, room, lines: content.split("\n").length,
      changedLines: before ? changedLineCount(before.source, content) : content.split("\n").length,
      baselineMutants: before ? before.mutants.length : null,
    });
  }
  return out;
}

/** Measured cost of the last runs of a room: the initial (dry) test run and the seconds per tested mutant (wall clock). */
export interface RoomTiming {
  dryRunSeconds: number;
  secondsPerMutant: number;
  /** mutants per source line of the room (to estimate a file the baseline lacks) */
  mutantsPerLine: number;
}

/**
 * Estimated wall seconds of an incremental Stryker run over `changed`: the slowest dry run of the rooms involved (the
 * tests related to the changed files run once, with coverage) plus, per file, the mutants on its changed lines (the
 * rest are reused from the baseline) times the room's seconds per mutant. A room without timing counts as unknown
 * (returns null: the caller skips rather than guess).
 */
export function estimateSeconds(changed: readonly ChangedFile[], timing: Partial<Record<Room, RoomTiming>>): number | null {
  if (changed.length === 0) return 0;
  let dry = 0;
  let mutants = 0;
  for (const f of changed) {
    const t = timing[f.room];
    if (!t) return null;
    dry = Math.max(dry, t.dryRunSeconds);
    const perLine = f.baselineMutants !== null && f.lines > 0 ? f.baselineMutants / f.lines : t.mutantsPerLine;
    mutants += Math.ceil(perLine * f.changedLines) * t.secondsPerMutant;
  }
  return Math.round(dry + mutants);
}

/**
 * The CI verdict on a check of changed files: it fails only when a target room has a survivor in a changed file that
 * the survivors file does not explain AND that room's score (the whole room, the baseline's results for the files
 * that did not change) is below {@link TARGET_SCORE} AND below the baseline's score for the room — a change that
 * lowers a room under its target fails; a room already under it before the change does not block unrelated work.
 * A survivor in a room that meets its target is printed, not fatal: the score, not each mutant, is the contract,
 * and equivalent mutants do exist.
 * @param before the baseline's score per room (absent: the room was not measured, any score counts as a drop)
 */
export function verdict(whole: Summary, changed: ReadonlySet<string>, before: Summary["rooms"] = {}): { fail: boolean; lines: string[] } {
  const lines: string[] = [];
  let fail = false;
  for (const room of ROOMS) {
    const unexplained = whole.survivors.filter((s) => s.reason === null && changed.has(s.file) && roomOf(s.file) === room);
    if (unexplained.length === 0) continue;
    const score = whole.rooms[room]?.score ?? null;
    const was = before[room]?.score ?? null;
    const below = TARGET_ROOMS.includes(room) && score !== null && score < TARGET_SCORE && (was === null || score < was);
    fail ||= below;
    const drop = was !== null && score !== null && score < was ? ` (baseline ${was} %)` : "";
    lines.push(`${room}: ${unexplained.length} surviving mutant(s) in changed files, room score ${score ?? "n/a"} %${drop}${below ? ` < ${TARGET_SCORE} %: add a test that states the rule, or list an equivalent mutant in test/mutation/survivors.yaml with its reason` : ""}`);
    for (const s of unexplained) lines.push(`  ${s.file}:${s.line}:${s.column} ${s.mutator} \`${clip(s.original, 60)}\` → \`${clip(s.replacement, 40)}\``);
  }
  return { fail, lines };
}

/** A test as the JSON report's `testFiles` holds it (the fields read here). */
interface ReportTest {
  id: string;
  name: string;
}

/** The report with its test files (`testFiles`: test file → its tests; a mutant's `coveredBy`/`killedBy` hold test ids). */
export interface FullMutationReport {
  files: Record<string, { source: string; mutants: (ReportMutant & { coveredBy?: string[]; killedBy?: string[] })[] }>;
  testFiles?: Record<string, { source?: string; tests: ReportTest[] }> | null;
  [key: string]: unknown;
}

/**
 * The baseline after a partial run (`--files`, `--room`, `--changed`): the run's own results for the files it
 * mutated, and the previous baseline's results — source and mutants as measured then — for every other file still in
 * the project. Stryker itself writes a partial run's untouched files with their *current* source and only the old
 * mutants its diff could place, so a file changed since it was measured would look measured and fresh; keeping the
 * baseline's copy keeps it honestly stale (the next incremental run re-tests what changed in it).
 *
 * Test ids are only unique within one report: the kept files' `coveredBy`/`killedBy` are re-pointed at the run's ids
 * by test file and name. The baseline's tests the run's report lacks (another run's, when two runs of different
 * files overlap) are kept under fresh ids: Stryker checks each recorded test against the test files' current source
 * on its next run and re-tests a mutant whose killing test is gone or changed.
 * @param scope the files the run mutated (a scope file the run's report lacks has no mutants now: it is left out)
 * @param exists whether a file is still in the project (a deleted file's results are dropped)
 */
export function mergeReports<R extends FullMutationReport>(before: FullMutationReport | null, after: R, scope: ReadonlySet<string>, exists: (file: string) => boolean): R {
  const key = (file: string, name: string) => `${file}\u0000${name}`;
  const testFiles: NonNullable<FullMutationReport["testFiles"]> = {};
  const afterIds = new Map<string, string>();
  for (const [file, entry] of Object.entries(after.testFiles ?? {})) {
    testFiles[file] = { ...entry, tests: [...entry.tests] };
    for (const t of entry.tests) afterIds.set(key(file, t.name), t.id);
  }
  const beforeKeys = new Map<string, string>();
  let fresh = 0;
  for (const [file, entry] of Object.entries(before?.testFiles ?? {})) {
    for (const t of entry.tests) {
      const k = key(file, t.name);
      beforeKeys.set(t.id, k);
      if (afterIds.has(k)) continue;
      const id = `kept-${fresh++}`;
      afterIds.set(k, id);
      (testFiles[file] ??= { ...entry, tests: [] }).tests.push({ ...t, id });
    }
  }
  const remap = (ids: string[] | undefined) =>
    ids?.flatMap((id) => {
      const now = afterIds.get(beforeKeys.get(id) ?? "");
      return now === undefined ? [] : [now];
    });
  const files: FullMutationReport["files"] = {};
  for (const [file, entry] of Object.entries(after.files)) if (scope.has(file)) files[file] = entry;
  for (const [file, entry] of Object.entries(before?.files ?? {})) {
    if (scope.has(file) || !exists(file)) continue;
    files[file] = {
      ...entry,
      mutants: entry.mutants.map((m) => ({
        ...m,
        ...(m.coveredBy ? { coveredBy: remap(m.coveredBy) } : {}),
        ...(m.killedBy ? { killedBy: remap(m.killedBy) } : {}),
      })),
    };
  }
  const sorted = Object.fromEntries(Object.entries(files).sort(([a], [b]) => a.localeCompare(b)));
  return { ...after, files: sorted, testFiles };
}
