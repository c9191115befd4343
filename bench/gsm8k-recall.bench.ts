/**
 * @module bench/gsm8k-recall.bench — the GSM8K grader measurement of `test/unit/rewards/gsm8k-recall.test.ts`,
 * printed: recall per answer shape under each reader setting, over the 1,319 GSM8K test golds of `../shared/data`,
 * and the near misses (gold + 1) scored 1.0 anyway. Its target: 100% recall wherever the shape's reader is on, and no
 * false positive. Without the shared data it says so in one line and is not counted as missed.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { formatRecallTable, loadGsm8kGolds, measureRecall } from "../test/support/gsm8k-recall.ts";
import { SHARED_DIR } from "../test/support/shared.ts";

/** What the measurement printed, its JSON for `bench/results.json`, and whether it met its target. */
export interface RecallBench {
  lines: string[];
  json: unknown;
  met: boolean;
}

/** Runs the measurement over `<shared>/data/gsm8k/test.jsonl` (AJET_SHARED_DIR moves `<shared>`). */
export async function measureGsm8kRecall(): Promise<RecallBench> {
  const path = resolve(SHARED_DIR, "data/gsm8k/test.jsonl");
  if (!existsSync(path)) {
    return { lines: [`gsm8k-recall: skipped, ${path} not found (set AJET_SHARED_DIR to the reference data)`], json: { skipped: path }, met: true };
  }
  const started = performance.now();
  const table = measureRecall(loadGsm8kGolds(path));
  const seconds = (performance.now() - started) / 1000;
  const missed = table.cells.filter((c) => c.falsePositives > 0 || (c.readerOn && c.recall < 1));
  const lines = [...formatRecallTable(table), `${table.cells.length} cells scored in ${seconds.toFixed(1)} s; target 100% where the reader is on and 0 false positives: ${missed.length ? `MISSED in ${missed.length} cells` : "met"}`];
  return { lines, json: { file: path, golds: table.golds, seconds, cells: table.cells }, met: missed.length === 0 };
}
