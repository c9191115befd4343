/**
 * @module test/unit/mutation/report — how `npm run mutation` reads a Stryker report: room scores, survivors matched
 * to their committed reasons, the files changed since the baseline, the CI estimate and verdict.
 */
import { describe, expect, it } from "vitest";
import {
  changedFiles, changedLineCount, estimateSeconds, mergeReports, mutateGlobs, originalText, renderMarkdown, roomOf, scoreLines, summarise, verdict,
  type FullMutationReport, type MutationReport, type ReportMutant, type SurvivorReason,
} from "../../../scripts/mutation/report.ts";

const at = (line: number, column: number, endLine: number, endColumn: number) => ({ start: { line, column }, end: { line: endLine, column: endColumn } });
const mutant = (id: string, status: ReportMutant["status"], location = at(1, 1, 1, 2), mutatorName = "EqualityOperator", replacement = "<"): ReportMutant => ({
  id, status, location, mutatorName, replacement,
});

const LEASES = "if (a > b) return;\nlog(\"x\");\n";
const report: MutationReport = {
  files: {
    "src/scheduler/leases.ts": {
      source: LEASES,
      mutants: [
        mutant("1", "Killed"), mutant("2", "Timeout"), mutant("3", "Killed"), mutant("4", "Killed"), mutant("5", "Killed"),
        mutant("6", "Survived", at(1, 5, 1, 10), "EqualityOperator", "a >= b"),
        mutant("7", "NoCoverage", at(2, 5, 2, 8), "StringLiteral", '""'),
        mutant("8", "Ignored"), mutant("9", "CompileError"),
      ],
    },
    "src/rewards/math.ts": { source: "x", mutants: [mutant("10", "Killed")] },
    "src/edge/worker.ts": { source: "x", mutants: [mutant("11", "Survived")] },
    "src/scheduler/index.ts": { source: "x", mutants: [mutant("12", "Survived")] },
  },
};

describe("rooms", () => {
  it("a room is a folder of src among the mutated ones; barrels and other folders are none", () => {
    expect(roomOf("src/scheduler/leases.ts")).toBe("scheduler");
    expect(roomOf("src/client/sub/deep.ts")).toBe("client");
    expect(roomOf("src/scheduler/index.ts")).toBeNull();
    expect(roomOf("src/edge/worker.ts")).toBeNull();
    expect(roomOf("test/unit/scheduler/leases.test.ts")).toBeNull();
    expect(mutateGlobs(["port", "rewards"])).toEqual(["src/port/**/*.ts", "src/rewards/**/*.ts", "!src/**/index.ts"]);
  });
});

describe("summarise", () => {
  it("scores detected / (detected + undetected): timeouts count as detected, ignored and compile errors not at all", () => {
    const s = summarise(report, []);
    expect(s.rooms.scheduler).toEqual({ files: 1, killed: 4, timeout: 1, survived: 1, noCoverage: 1, ignored: 1, errors: 1, score: 71.43 });
    expect(s.rooms.rewards?.score).toBe(100);
    expect(Object.keys(s.rooms).sort()).toEqual(["rewards", "scheduler"]); // edge and the barrel are not rooms
  });

  it("lists each survivor with the code it changed and the reason the survivors file gives, and the entries that match nothing", () => {
    const reasons: SurvivorReason[] = [
      { file: "src/scheduler/leases.ts", mutator: "StringLiteral", original: '"x"', reason: "log text only" },
      { file: "src/scheduler/leases.ts", mutator: "EqualityOperator", original: "a > b", replacement: "a <= b", reason: "not this replacement" },
      { file: "src/rewards/math.ts", mutator: "BlockStatement", original: "{", reason: "fixed since" },
    ];
    const s = summarise(report, reasons);
    expect(s.survivors).toEqual([
      { file: "src/scheduler/leases.ts", line: 1, column: 5, mutator: "EqualityOperator", status: "Survived", original: "a > b", replacement: "a >= b", reason: null },
      { file: "src/scheduler/leases.ts", line: 2, column: 5, mutator: "StringLiteral", status: "NoCoverage", original: '"x"', replacement: '""', reason: "log text only" },
    ]);
    expect(s.staleReasons.map((r) => r.reason)).toEqual(["not this replacement", "fixed since"]);
    const md = renderMarkdown(s, "header", { scheduler: 27 });
    expect(md).toContain("| scheduler | 71.43 % (target ≥ 85 %) | 1 of 27 | 4 | 1 | 1 | 1 | 1 |");
    expect(scoreLines(s, { scheduler: 27 })[0]).toBe("scheduler   71.43 %  (4 killed, 1 timeout, 1 survived, 1 no coverage, 1 ignored, 1 of 27 files measured) target ≥ 85 %");
    // a room measured over all its files says so too: every score names the files it is over
    expect(scoreLines(s, { scheduler: 27, rewards: 1 }).find((l) => l.startsWith("rewards"))).toContain("1 of 1 files measured");
    expect(md).toContain("src/scheduler/leases.ts:1:5 EqualityOperator `a > b` → `a >= b` — **no reason yet**");
    // each measured file of a target room has its own line: score, counts and the survivors still without a reason
    expect(s.files["src/scheduler/leases.ts"]).toEqual({ files: 1, killed: 4, timeout: 1, survived: 1, noCoverage: 1, ignored: 1, errors: 1, score: 71.43 });
    expect(md).toContain("| src/scheduler/leases.ts | 71.43 % | 4 | 1 | 1 | 1 | 1 |");
    expect(md).toContain("## Stale entries");
  });

  it("reads a multi-line mutated span (a removed block) and matches a reason on its first words, whitespace collapsed", () => {
    const source = "function f() {\n  doIt();\n  more();\n}\n";
    expect(originalText(source, mutant("b", "Survived", at(1, 14, 4, 2)))).toBe("{\n  doIt();\n  more();\n}");
    const one: MutationReport = { files: { "src/port/abort.ts": { source, mutants: [mutant("b", "Survived", at(1, 14, 4, 2), "BlockStatement", "{}")] } } };
    const s = summarise(one, [{ file: "src/port/abort.ts", mutator: "BlockStatement", original: "{ doIt();", reason: "r" }]);
    expect(s.survivors[0]?.reason).toBe("r");
  });

  it("an entry may name a kind of mutant: any file of a glob, any mutator, on a line containing a text (log calls)", () => {
    const source = 'const a = 1;\n  d.log("warn", "message", { k });\n';
    const logged: MutationReport = {
      files: {
        "src/scheduler/x.ts": { source, mutants: [mutant("1", "Survived", at(2, 9, 2, 15), "StringLiteral", '""'), mutant("2", "Survived", at(2, 28, 2, 33), "ObjectLiteral", "{}"), mutant("3", "Survived", at(1, 11, 1, 12))] },
        "src/scheduler/deep/y.ts": { source, mutants: [mutant("4", "Survived", at(2, 9, 2, 15), "StringLiteral", '""')] },
      },
    };
    const s = summarise(logged, [{ file: "src/scheduler/*.ts", mutator: "*", line: "d.log(", reason: "log text" }]);
    expect(s.survivors.map((v) => [v.file, v.line, v.reason])).toEqual([
      ["src/scheduler/deep/y.ts", 2, null], // `*` stays within its folder
      ["src/scheduler/x.ts", 1, null],
      ["src/scheduler/x.ts", 2, "log text"],
      ["src/scheduler/x.ts", 2, "log text"],
    ]);
    expect(summarise(logged, [{ file: "src/**/*.ts", mutator: "StringLiteral", line: "d.log(", reason: "r" }]).survivors.filter((v) => v.reason).length).toBe(2);
  });

  it("counts only the given files when asked (the changed files of a CI check)", () => {
    expect(summarise(report, [], new Set(["src/rewards/math.ts"])).rooms).toEqual({ rewards: expect.objectContaining({ killed: 1, score: 100 }) });
  });
});

describe("changed files and the CI estimate", () => {
  it("a file differs from the baseline by the lines it does not share with the baseline's copy; new files count whole", () => {
    expect(changedLineCount("a\nb\nc\n", "a\nb\nc\n")).toBe(0);
    expect(changedLineCount("a\nb\nc\n", "c\na\nb\n")).toBe(0); // moved lines are not changed ones
    expect(changedLineCount("a\nb\n", "a\nB\nb\nb\n")).toBe(2); // a second copy of a line is a change
    const current = new Map([
      ["src/scheduler/leases.ts", LEASES],
      ["src/rewards/math.ts", "y\n"],
      ["src/port/new.ts", "1\n2\n3"],
      ["src/edge/worker.ts", "changed"],
    ]);
    expect(changedFiles(report, current)).toEqual([
      { file: "src/port/new.ts", room: "port", lines: 3, changedLines: 3, baselineMutants: null },
      { file: "src/rewards/math.ts", room: "rewards", lines: 2, changedLines: 1, baselineMutants: 1 },
    ]);
  });

  it("estimates the slowest dry run involved plus the mutants on changed lines at each room's measured rate; unknown rooms give null", () => {
    const timing = { port: { dryRunSeconds: 100, secondsPerMutant: 2, mutantsPerLine: 0.5 }, rewards: { dryRunSeconds: 60, secondsPerMutant: 1, mutantsPerLine: 1 } };
    expect(estimateSeconds([], timing)).toBe(0);
    const changed = [
      { file: "src/port/new.ts", room: "port" as const, lines: 10, changedLines: 10, baselineMutants: null }, // 5 mutants × 2 s
      { file: "src/rewards/math.ts", room: "rewards" as const, lines: 100, changedLines: 10, baselineMutants: 300 }, // 30 × 1 s
    ];
    expect(estimateSeconds(changed, timing)).toBe(100 + 10 + 30);
    expect(estimateSeconds([{ ...changed[0]!, room: "tasks" }], timing)).toBeNull();
  });

  it("fails CI only for an unexplained survivor in a changed file of a target room that the change leaves below its target score", () => {
    const whole = summarise(report, []);
    const changed = new Set(["src/scheduler/leases.ts"]);
    const v = verdict(whole, changed);
    expect(v.fail).toBe(true); // scheduler at 71.43 % < 85 %, two survivors without reasons
    expect(v.lines[0]).toMatch(/^scheduler: 2 surviving mutant\(s\) in changed files, room score 71\.43 % < 85 %/);
    expect(verdict(whole, new Set(["src/rewards/math.ts"]))).toEqual({ fail: false, lines: [] });
    // the same survivors in a room that still meets its target are printed, not fatal
    const strong: MutationReport = { files: { "src/scheduler/leases.ts": { source: LEASES, mutants: [...Array.from({ length: 20 }, (_, i) => mutant(`k${i}`, "Killed")), mutant("s", "Survived", at(1, 5, 1, 10))] } } };
    const ok = verdict(summarise(strong, []), changed);
    expect(ok.fail).toBe(false);
    expect(ok.lines).toHaveLength(2);
    // a room that was already below its target before the change fails only if the change lowers its score
    expect(verdict(whole, changed, { scheduler: { ...whole.rooms.scheduler!, score: 60 } }).fail).toBe(false);
    expect(verdict(whole, changed, { scheduler: { ...whole.rooms.scheduler!, score: 80 } })).toMatchObject({ fail: true, lines: expect.arrayContaining([expect.stringContaining("room score 71.43 % (baseline 80 %) < 85 %")]) });
    // runtime and tasks are reported, never fatal
    const runtime: MutationReport = { files: { "src/runtime/x.ts": { source: LEASES, mutants: [mutant("s", "Survived")] } } };
    expect(verdict(summarise(runtime, []), new Set(["src/runtime/x.ts"])).fail).toBe(false);
  });
});

describe("a partial run merged into the baseline", () => {
  // the baseline: two files measured, tests numbered in that report
  const before: FullMutationReport = {
    files: {
      "src/scheduler/leases.ts": { source: "old leases", mutants: [{ ...mutant("1", "Killed"), killedBy: ["0"], coveredBy: ["0", "1"] }] },
      "src/rewards/math.ts": { source: "math as measured", mutants: [{ ...mutant("2", "Survived"), coveredBy: ["1", "2"] }, { ...mutant("3", "Killed"), killedBy: ["2"], coveredBy: ["2"] }] },
      "src/port/gone.ts": { source: "deleted since", mutants: [mutant("4", "Survived")] },
    },
    testFiles: {
      "test/unit/a.test.ts": { tests: [{ id: "0", name: "leases hold" }, { id: "1", name: "shared" }] },
      "test/unit/b.test.ts": { tests: [{ id: "2", name: "removed since" }] },
    },
    schemaVersion: "1.0",
  };
  // the run mutated leases.ts only; Stryker wrote math.ts with its CURRENT source and renumbered the tests
  const after: FullMutationReport = {
    files: {
      "src/scheduler/leases.ts": { source: "new leases", mutants: [{ ...mutant("0", "Survived"), coveredBy: ["7"] }] },
      "src/rewards/math.ts": { source: "math changed on main", mutants: [] },
    },
    testFiles: { "test/unit/a.test.ts": { tests: [{ id: "7", name: "shared" }, { id: "8", name: "leases hold" }] } },
    schemaVersion: "1.0",
  };
  const merged = mergeReports(before, after, new Set(["src/scheduler/leases.ts"]), (f) => f !== "src/port/gone.ts");

  it("takes the run's results for the files it mutated and keeps every other file's measured source and mutants", () => {
    expect(Object.keys(merged.files)).toEqual(["src/rewards/math.ts", "src/scheduler/leases.ts"]);
    expect(merged.files["src/scheduler/leases.ts"]).toEqual(after.files["src/scheduler/leases.ts"]);
    // the kept file stays as measured: a later --changed sees it changed and a later run re-tests what changed
    expect(merged.files["src/rewards/math.ts"]?.source).toBe("math as measured");
    expect(merged.files["src/rewards/math.ts"]?.mutants.map((m) => [m.id, m.status])).toEqual([["2", "Survived"], ["3", "Killed"]]);
    expect(summarise(merged, []).rooms).toMatchObject({ rewards: { killed: 1, survived: 1 }, scheduler: { survived: 1 } });
    expect(merged.schemaVersion).toBe("1.0");
  });

  it("re-points the kept mutants' tests at the run's ids by test file and name", () => {
    const kept = merged.files["src/rewards/math.ts"]!.mutants;
    expect(kept[0]?.coveredBy?.[0]).toBe("7"); // "shared" is 7 in the run's report
    expect(merged.testFiles?.["test/unit/a.test.ts"]?.tests).toEqual(after.testFiles?.["test/unit/a.test.ts"]?.tests);
  });

  it("keeps the baseline's tests the run did not know (another run's) under fresh ids, so their kills stay reusable", () => {
    const kept = merged.files["src/rewards/math.ts"]!.mutants;
    const b = merged.testFiles?.["test/unit/b.test.ts"]?.tests ?? [];
    expect(b.map((t) => t.name)).toEqual(["removed since"]);
    const id = b[0]!.id;
    expect(Object.values(merged.testFiles ?? {}).flatMap((f) => f.tests.map((t) => t.id)).filter((x) => x === id)).toHaveLength(1); // unique
    expect(kept[0]).toMatchObject({ coveredBy: ["7", id] });
    expect(kept[1]).toMatchObject({ killedBy: [id], coveredBy: [id] });
  });

  it("leaves out a file of the run's scope that has no mutants now, and is whole when there was no baseline", () => {
    const none = mergeReports(before, { ...after, files: {} }, new Set(["src/scheduler/leases.ts"]), () => true);
    expect(Object.keys(none.files)).toEqual(["src/port/gone.ts", "src/rewards/math.ts"]);
    expect(mergeReports(null, after, new Set(["src/scheduler/leases.ts"]), () => true).files).toEqual({ "src/scheduler/leases.ts": after.files["src/scheduler/leases.ts"] });
  });
});
