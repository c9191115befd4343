/**
 * A run where every episode fails (the countdown function on GSM8K rows: each episode aborts `invalid_task`)
 * reaches phase finished, yet `ajet-edge dev` exits 1 with a one-line reason and `--json` says outcome `failed`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runDevCommand } from "../../src/cli/commands/dev.ts";
import { memoryIo } from "../../src/cli/dev/output.ts";
import type { DevSummaryJson } from "../../src/cli/dev/summary-json.ts";

const dir = mkdtempSync(join(tmpdir(), "ajet-e2e-failed-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("e2e: a run where every episode fails", () => {
  it("exits 1 naming the cause, with outcome failed in the JSON summary and nothing left claimed", async () => {
    const path = join(dir, "gsm8k.jsonl");
    writeFileSync(path, Array.from({ length: 4 }, (_, i) => JSON.stringify({ question: `What is ${i} + 1?`, answer: `w\n#### ${i + 1}` })).join("\n"));
    const io = memoryIo();
    const argv = ["--dataset", path, "--function", "countdown", "--kind", "gsm8k", "--steps", "1", "--batch-size", "2", "--num-repeat", "2", "--json"];
    const code = await runDevCommand(argv, io);
    const stderr = io.stderr.join("");
    expect(code, stderr).toBe(1);
    const summary = JSON.parse(io.stdout.join("")) as DevSummaryJson;
    expect(summary).toMatchObject({ outcome: "failed", exitCode: 1, stopReason: "maxSteps", claimedLeft: 0, totals: { episodesEnded: 0 } });
    expect(summary.failure).toMatch(/^no episode ended: all \d+ attempts failed \(invalid_task \d+\); the function refused the tasks as invalid/);
    expect(stderr).toContain("1 training step\n");
    expect(stderr.trimEnd().split("\n").at(-1)).toBe(`ajet-edge dev: the run failed: ${summary.failure}`);
  });
});
