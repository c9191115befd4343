/**
 * test/mutation/survivors.yaml is read by `npm run mutation` (and CI's `--changed` check) before anything runs: a
 * YAML error there stops every mutation run. Each entry must name file, mutator, original or line, and a one-line
 * reason.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

describe("test/mutation/survivors.yaml", () => {
  it("parses, and every entry names file, mutator, original or line, and a one-line reason", () => {
    const list = parse(readFileSync(join(import.meta.dirname, "..", "..", "mutation", "survivors.yaml"), "utf8")) as Record<string, unknown>[];
    expect(Array.isArray(list)).toBe(true);
    for (const [i, e] of list.entries()) {
      const where = `entry ${i + 1} (${String(e.file)})`;
      for (const key of ["file", "mutator", "reason"]) expect(typeof e[key] === "string" && e[key] !== "", `${where}: ${key}`).toBe(true);
      expect(typeof e.original === "string" || typeof e.line === "string", `${where}: original or line`).toBe(true);
      expect(String(e.reason).includes("\n"), `${where}: one line`).toBe(false);
    }
  });
});
