import { describe, expect, it } from "vitest";
import { RunSpec } from "../../../src/scheduler/index.ts";
import { runScopedTaskId, runTag } from "../../../src/tasks/index.ts";
import { specInput } from "../scheduler/harness.ts";

describe("run-scoped task ids", () => {
  it("appends the run's short tag by default, so two runs on one dataset send different ids for the same row", () => {
    const a = runScopedTaskId("gsm8k:test:17", "run-20261129111832-a35a9d90", "run");
    const b = runScopedTaskId("gsm8k:test:17", "run-20261129111900-0b1c2d3e", "run");
    expect(a).toBe("gsm8k:test:17@a35a9d90");
    expect(b).toBe("gsm8k:test:17@0b1c2d3e");
    expect(runScopedTaskId("gsm8k:test:17", "run-20261129111832-a35a9d90", "run")).toBe(a); // stable
  });

  it("keeps the dataset's id with the explicit opt-in scope dataset (runs feed one group per task)", () => {
    expect(runScopedTaskId("gsm8k:test:id=x", "run-20261129111832-a35a9d90", "dataset")).toBe("gsm8k:test:id=x");
  });

  it("tags any run id with 8 hex digits, and refuses an empty task id (BC-30)", () => {
    expect(runTag("my-own-run")).toMatch(/^[0-9a-f]{8}$/);
    expect(runTag("my-own-run")).toBe(runTag("my-own-run"));
    expect(runTag("my-own-run")).not.toBe(runTag("my-own-run2"));
    expect(() => runScopedTaskId("", "run-x", "run")).toThrow(/non-empty/);
  });

  it("is the run spec's default; taskIdScope dataset is an explicit opt-in", () => {
    expect(RunSpec.parse(specInput()).taskIdScope).toBe("run");
    expect(RunSpec.parse(specInput({ taskIdScope: "dataset" })).taskIdScope).toBe("dataset");
    expect(RunSpec.safeParse(specInput({ taskIdScope: "global" as never })).success).toBe(false);
  });
});
