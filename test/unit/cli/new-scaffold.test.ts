/**
 * @module test/unit/cli/new-scaffold — `ajet-edge new NAME --dir` on a temp project: the files written, the
 * registry edit, the README left alone, refusals that write nothing, and the scaffolded function itself run through
 * createTestContext (correct reply → 1.0, wrong → 0.0). The generated imports of `ajet-edge` resolve to this
 * repository's entries (vitest alias); the packed-package test runs them against the installed package.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RolloutFunction } from "../../../src/sdk/contract.ts";
import { createTestContext } from "../../../src/sdk/testing.ts";
import { answerKeyFor, demoDataset } from "../../../src/cli/dev/plan.ts";
import { scaffoldFunction } from "../../../src/cli/scaffold/scaffold.ts";
import { DEMO_ROWS } from "../../../src/cli/scaffold/templates.ts";
import { Task } from "../../../src/protocol/index.ts";
import { runMain } from "../../support/cli.ts";

const _repo = fileURLToPath(new URL("../../../", import.meta.url));
/** The temp project's registry: the shape of functions/index.ts, independent of what the live one holds. */
const REGISTRY = [
  'import type { RolloutFunction } from "ajet-edge";',
  'import countdown from "./countdown.ts";',
  "// ajet-edge:imports (new functions are imported above this line)",
  "",
  "export const rolloutFunctions: Record<string, RolloutFunction> = {",
  '  "countdown": countdown,',
  "  // ajet-edge:entries (new functions are registered above this line)",
  "};",
  "",
].join("\n");
let root: string;
const read = (p: string) => readFileSync(join(root, p), "utf8");

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "ajet-new-"));
  mkdirSync(join(root, "functions"));
  writeFileSync(join(root, "functions", "index.ts"), REGISTRY);
  writeFileSync(join(root, "README.md"), "# demo\n\n## Rollout functions\n\n### countdown\n\nText.\n\n## License\n\nApache-2.0\n");
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("scaffoldFunction", () => {
  it("writes the function, its test (test/NAME.test.ts outside this repository) and the registry lines, and leaves the README alone", async () => {
    const readme = read("README.md");
    const result = await scaffoldFunction({ root, name: "my-agent" });
    expect(result).toEqual({
      name: "my-agent",
      identifier: "myAgent",
      created: ["functions/my-agent.ts", "test/my-agent.test.ts"],
      edited: ["functions/index.ts"],
      testFile: "test/my-agent.test.ts",
    });
    const fn = read("functions/my-agent.ts");
    expect(fn).toMatch(/^\/\*\*\n \* @module functions\/my-agent — /);
    expect(fn).toContain('name: "my-agent"');
    expect(fn).toContain("defineRolloutFunction");
    expect(fn).toContain("initialMessages(task, SYSTEM_PROMPT)");
    expect(fn).not.toMatch(/TODO|FIXME/);
    expect(fn).toContain('} from "ajet-edge";');
    expect(fn).not.toContain("../src/");
    const test = read("test/my-agent.test.ts");
    expect(test).toContain('import myAgent, { DEMO_TASKS, goldAnswer } from "../functions/my-agent.ts";');
    expect(test).toContain('import { createTestContext } from "ajet-edge/testing";');
    expect(test).toContain("createTestContext");
    expect(test).toMatch(/reward: 1, is_success: true/);
    expect(test).toMatch(/reward: 0, is_success: false/);
    expect(read("functions/index.ts")).toContain('import myAgent from "./my-agent.ts";\n// ajet-edge:imports');
    expect(read("functions/index.ts")).toContain('  "my-agent": myAgent,\n  // ajet-edge:entries');
    expect(read("README.md")).toBe(readme);
  });

  it("keeps this repository's test layout (test/unit/functions/) where package.json is ajet-edge's", async () => {
    writeFileSync(join(root, "package.json"), JSON.stringify({ name: "ajet-edge" }));
    const result = await scaffoldFunction({ root, name: "my-agent" });
    expect(result.testFile).toBe("test/unit/functions/my-agent.test.ts");
    expect(read(result.testFile)).toContain('from "../../../functions/my-agent.ts";');
  });

  it("the scaffolded function scores a correct boxed reply 1.0 and a wrong one 0.0, system message first", async () => {
    await scaffoldFunction({ root, name: "my-agent" });
    const mod = (await import(pathToFileURL(join(root, "functions", "my-agent.ts")).href)) as { default: RolloutFunction };
    const task = Task.parse({ task_id: "t:0", main_query: "What is 6 times 7?", metadata: { gold: "42" } });
    const right = createTestContext({ reply: () => "\\boxed{42}" });
    expect(await mod.default.run(task, right.ctx)).toMatchObject({ reward: 1, is_success: true });
    expect(right.requests[0]!.body.messages[0]?.role).toBe("system");
    const wrong = createTestContext({ reply: () => "\\boxed{41}" });
    expect(await mod.default.run(task, wrong.ctx)).toMatchObject({ reward: 0, is_success: false });
  });

  it("the scaffolded function brings generic demo tasks that dev runs without --dataset, with an answer key from their gold", async () => {
    await scaffoldFunction({ root, name: "my-agent" });
    const mod = (await import(pathToFileURL(join(root, "functions", "my-agent.ts")).href)) as { default: RolloutFunction };
    expect(mod.default.demo).toEqual({ kind: "generic", rows: DEMO_ROWS });
    const dataset = demoDataset("my-agent", mod.default.demo!);
    expect(dataset.tasks.map((t) => t.task_id)).toEqual(DEMO_ROWS.map((_, i) => `my-agent-demo:train:${i}`));
    expect(answerKeyFor(dataset.tasks)).toEqual(DEMO_ROWS.map((r) => ({ match: r.main_query, answer: r.metadata.gold, format: "boxed" })));
    for (const task of dataset.tasks) {
      const { ctx } = createTestContext({ reply: () => `so it is \\boxed{${String(task.metadata["gold"])}}` });
      expect(await mod.default.run(task, ctx)).toMatchObject({ reward: 1, is_success: true });
    }
  });

  it("refuses an existing function, an existing test file or a non-project, and writes nothing then", async () => {
    await scaffoldFunction({ root, name: "my-agent" });
    const before = { registry: read("functions/index.ts"), readme: read("README.md") };
    await expect(scaffoldFunction({ root, name: "my-agent" })).rejects.toThrow(/a function 'my-agent' already exists/);
    await expect(scaffoldFunction({ root, name: "countdown" })).rejects.toThrow(/already exists/); // registered, no file here
    writeFileSync(join(root, "test", "other.test.ts"), "// mine\n");
    await expect(scaffoldFunction({ root, name: "other" })).rejects.toThrow(/other\.test\.ts already exists/);
    expect(existsSync(join(root, "functions", "other.ts"))).toBe(false);
    expect({ registry: read("functions/index.ts"), readme: read("README.md") }).toEqual(before);
    await expect(scaffoldFunction({ root: join(root, "functions"), name: "x" })).rejects.toThrow(/is not an ajet-edge project/);
  });
});

describe("ajet-edge new (main)", () => {
  it("exits 0 after scaffolding (next: npm start on the demo tasks) and 2 on a usage error, pointing at --help", async () => {
    const made = await runMain(["new", "cli-made", "--dir", root]);
    expect(made.code).toBe(0);
    expect(existsSync(join(root, "functions", "cli-made.ts"))).toBe(true);
    expect(made.logs.join("\n")).toContain("npx vitest run test/cli-made.test.ts");
    expect(made.logs.join("\n")).toContain("  npm start -- --function cli-made     # its demo tasks on the local emulator (= npx ajet-edge dev --function cli-made)");
    const again = await runMain(["new", "cli-made", "--dir", root]);
    const badName = await runMain(["new", "Bad_Name", "--dir", root]);
    expect(again.code).toBe(2);
    expect(badName.code).toBe(2);
    const errors = [...made.errors, ...again.errors, ...badName.errors].join("\n");
    expect(errors).toMatch(/^ajet-edge new: a function 'cli-made' already exists.*\nrun 'ajet-edge new --help' for the options\najet-edge new: function name 'Bad_Name' must be kebab-case/);
    expect(errors).not.toContain("usage:");
  });
});
