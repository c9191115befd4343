/**
 * `npm run chaos`: every scenario of test/chaos/scenarios.ts on the real stack, one table row each (episodes,
 * lost, doubled, left claimed, stranded, re-run, run verdict, wall time). Exit code 1 when a row is not clean.
 * `npm run chaos -- NAME…` runs only the scenarios whose name contains one of the words. `CHAOS_DUMP=<dir>` also writes
 * each row's journal and its runs' views, ledgers and reports there (test/chaos/harness).
 */
import { ChaosStack, DIRTY_NOTE, formatTable, stallBoundSeconds, withinPlan, type ChaosRow } from "./harness.ts";
import { SCENARIOS } from "./scenarios.ts";

const filters = process.argv.slice(2).map((a) => a.toLowerCase());
const chosen = SCENARIOS.filter((s) => !filters.length || filters.some((f) => s.name.toLowerCase().includes(f)));
const stack = new ChaosStack();
const rows: ChaosRow[] = [];
/** rows that may end with no episode (a dataset host may refuse or fail the run before any) */
const mayBeEmpty = new Set<ChaosRow>();
try {
  for (const s of chosen) {
    process.stderr.write(`chaos: ${s.name} …\n`);
    const row = await stack.run(s);
    if (!withinPlan(row, 1 + (s.alsoRuns ?? 0) + (s.otherWorkerRuns ?? 0))) row.notes.push(`accepted ${row.episodes} rewards, more than planned ${row.planned} + one batch per run`);
    if (s.stallBound && (row.longestStepSeconds ?? 0) > stallBoundSeconds(s)) row.notes.push(`a step took ${row.longestStepSeconds} s, more than the stall bound ${stallBoundSeconds(s)} s`);
    rows.push(row);
    if (s.datasetHost) mayBeEmpty.add(row);
    process.stderr.write(`chaos: ${s.name}: ${row.episodes} episodes, ${row.lost} lost, ${row.doubled} doubled, ${row.leftClaimed} left claimed, ${row.stranded} stranded (${row.wallSeconds} s)\n`);
  }
} finally {
  await stack.close();
}
console.log(formatTable(rows));
const dirty = rows.filter(
  (r) =>
    (r.episodes === 0 && !mayBeEmpty.has(r)) || r.lost || r.doubled || r.leftClaimed || r.stranded || r.verdict.includes("MISMATCH") || r.notes.some((n) => DIRTY_NOTE.test(n) || n.includes("more than planned") || n.includes("more than the stall bound")) ||
    (r.sandboxes && (r.sandboxes.aliveAfter60s !== 0 || r.sandboxes.pastAttempt60s !== 0 || r.sandboxes.infraAsReward !== 0)),
);
process.exitCode = dirty.length ? 1 : 0;
