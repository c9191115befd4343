/** @module test/unit/functions/registry — functions/index.ts maps each name to its module's default export. */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import countdown from "../../../functions/countdown.ts";
import { rolloutFunctions } from "../../../functions/index.ts";
import mathAgent from "../../../functions/math-agent.ts";

describe("rollout function registry", () => {
  it("registers every shipped function under its own name", () => {
    expect(rolloutFunctions).toMatchObject({ countdown, "math-agent": mathAgent }); // `ajet-edge new` and others append
    for (const [name, fn] of Object.entries(rolloutFunctions)) expect(fn.name).toBe(name);
  });

  it("keeps the markers that `ajet-edge new` appends above", () => {
    const source = readFileSync(fileURLToPath(new URL("../../../functions/index.ts", import.meta.url)), "utf8");
    expect(source).toContain("// ajet-edge:imports");
    expect(source).toContain("// ajet-edge:entries");
  });
});
