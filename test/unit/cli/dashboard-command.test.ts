/** `ajet-edge dashboard --persist DIR` refuses, before starting anything, a DIR that holds no dev state. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runDashboardCommand } from "../../../src/cli/commands/dashboard.ts";
import { memoryIo } from "../../../src/cli/dev/output.ts";

const empty = mkdtempSync(join(tmpdir(), "ajet-dashboard-unit-"));
afterAll(() => rmSync(empty, { recursive: true, force: true }));

describe("dashboard --persist DIR", () => {
  it("a DIR without ajet-edge-dev.json, or one that does not exist: exit 2 naming the directory and the fix", async () => {
    for (const dir of [empty, join(empty, "missing")]) {
      const io = memoryIo();
      const err = await runDashboardCommand(["--persist", dir], io).then(() => null, (e: unknown) => e as { code: number; message: string });
      expect(err?.code).toBe(2);
      expect(err?.message).toBe(`${dir} holds no dev state (no ajet-edge-dev.json); give the directory of a \`ajet-edge dev --persist DIR\``);
      expect(io.stdout).toEqual([]);
    }
  });

  it("without --persist: a usage error", async () => {
    await expect(runDashboardCommand([], memoryIo())).rejects.toMatchObject({ code: 2 });
  });
});
