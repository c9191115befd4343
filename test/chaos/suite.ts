/**
 * The shared set-up of the chaos test files (test/e2e/chaos-fast, sandbox-chaos): one {@link ChaosStack} per file,
 * closed after its tests, and the table of the rows they ran printed at the end.
 */
import { afterAll } from "vitest";
import { ChaosStack, formatTable, type ChaosRow } from "./harness.ts";

/** A chaos stack for one test file and the rows its tests push; both are cleaned up and printed in `afterAll`. */
export function chaosSuite(): { stack: ChaosStack; rows: ChaosRow[] } {
  const stack = new ChaosStack();
  const rows: ChaosRow[] = [];
  afterAll(async () => {
    await stack.close();
    if (rows.length) console.log(formatTable(rows));
  }, 60_000);
  return { stack, rows };
}
