/**
 * @module test/unit/rewards/gsm8k-recall — the GSM8K grader measurement (issue 22 §4): all 1,319 test golds × the
 * answer shapes models write × the reader settings. A shape is read in full wherever its reader is on, and not at all
 * where it is off (box-only stays the default, BC-14); no near miss scores. `npm run bench` prints the same table.
 */
import { expect, it } from "vitest";
import { formatRecallTable, loadGsm8kGolds, measureRecall, OUTPUT_FORMATS, READER_SETTINGS } from "../../support/gsm8k-recall.ts";
import { describeShared, sharedPath } from "../../support/shared.ts";

describeShared("GSM8K grader measurement: golds × output formats × reader settings", () => {
  it("recall is 100% in every shape whose reader is on and 0% where it is off; no near miss scores", { timeout: 180_000 }, () => {
    const golds = loadGsm8kGolds(sharedPath("data/gsm8k/test.jsonl"));
    expect(golds).toHaveLength(1319);
    const table = measureRecall(golds);
    expect(table.cells).toHaveLength(OUTPUT_FORMATS.length * READER_SETTINGS.length);
    const off = table.cells.filter((c) => c.recall !== (c.readerOn ? 1 : 0) || c.falsePositives !== 0);
    expect(off, formatRecallTable(table).join("\n")).toEqual([]);
  });
});
