/**
 * The package as a user gets it: `npm pack` this repository, `ajet-edge init my-rollouts` from the unpacked tarball
 * (its bin on the compiled dist/, no sources, no tsx for the CLI), then in my-rollouts `npm install` (the tarball and
 * the template's dependencies, from npm's cache when it has them), `npm test`, a type-check of files that import
 * every public entry (`ajet-edge`, `ajet-edge/testing`, `ajet-edge/worker`, `ajet-edge/emulator`), Node imports of
 * the entries, every command's `--help` and `--version` (and bare `ajet-edge`, `help`) from the installed package,
 * `npx ajet-edge new` and `npm start` (a whole run: emulator + the project's Worker in local workerd). A file missing
 * from `files` or `exports`, or a path that holds only in the repository's layout, fails one of these steps.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify, stripVTControlCharacters } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const repo = fileURLToPath(new URL("../../", import.meta.url));
const work = mkdtempSync(join(tmpdir(), "ajet-package-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The environment of the child commands: this test's, without the `npm_*` variables of the `npm test` running it. */
const env = {
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => (!/^npm_/i.test(k) || /^npm_config_cache$/i.test(k)) && k !== "FORCE_COLOR")),
  NO_COLOR: "1",
};

/** Runs a command; @returns its stdout and stderr; @throws with both in the message when it exits non-zero (unless `okCodes` has its code). */
async function sh(cwd: string, file: string, args: string[], timeoutMs = 240_000, okCodes: number[] = [0]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const out = await run(file, args, { cwd, env, timeout: timeoutMs, maxBuffer: 64 * 2 ** 20 });
    return { stdout: stripVTControlCharacters(out.stdout), stderr: stripVTControlCharacters(out.stderr), code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string; code?: unknown };
    if (typeof e.code === "number" && okCodes.includes(e.code)) return { stdout: stripVTControlCharacters(e.stdout ?? ""), stderr: stripVTControlCharacters(e.stderr ?? ""), code: e.code };
    throw new Error(`${file} ${args.join(" ")} (in ${cwd}) failed: ${e.message}\n--- stdout\n${e.stdout ?? ""}\n--- stderr\n${e.stderr ?? ""}`);
  }
}

/** The CLI's commands: each answers `--help` with its usage and `--version` with the version. */
const COMMANDS = ["dev", "run", "runs", "status", "metrics", "rescore", "stop", "dashboard", "emulator", "init", "new"];

/** Uses every public entry with real types; each `@ts-expect-error` fails the check if the types were `any`. */
const TYPES_CHECK = `import { defineRolloutFunction, scoreMathAnswer, type RolloutContext, type Task } from "ajet-edge";
import { createTestContext } from "ajet-edge/testing";
import { createWorker, RolloutScheduler, type AjetEdgeWorker } from "ajet-edge/worker";
import type { EmulatorOptions } from "ajet-edge/emulator";

export const typed = defineRolloutFunction({
  name: "typed",
  async run(task: Task, ctx: RolloutContext) {
    return { reward: scoreMathAnswer(task.main_query, "1").reward, metadata: { model: ctx.model } };
  },
});
// @ts-expect-error a rollout function needs \`run\`
defineRolloutFunction({ name: "no-run" });
// @ts-expect-error the reward is a number
defineRolloutFunction({ name: "bad", run: async () => ({ reward: "1" }) });
export const worker: AjetEdgeWorker = createWorker({ typed });
export const scheduler: typeof RolloutScheduler = RolloutScheduler;
export const testContext = createTestContext({ reply: () => "\\\\boxed{1}" }).ctx;
export const options: EmulatorOptions | undefined = undefined;
`;

/** Imports the Node-loadable entries and prints what they export. */
const IMPORT_CHECK = `const main = await import("ajet-edge");
const testing = await import("ajet-edge/testing");
const emulator = await import("ajet-edge/emulator");
console.log(JSON.stringify({
  defineRolloutFunction: typeof main.defineRolloutFunction,
  fromAgentRun: typeof main.fromAgentRun,
  createOpenAIJudge: typeof main.createOpenAIJudge,
  createTestContext: typeof testing.createTestContext,
  startEmulator: typeof emulator.startEmulator,
}));
`;

describe("e2e: the packed package", () => {
  it("npm pack → ajet-edge init → npm install, npm test, type-check, ajet-edge new and npm start pass in the new project", { timeout: 600_000 }, async () => {
    const pack = await sh(repo, "npm", ["pack", "--pack-destination", work, "--json"]);
    const [packed] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf("["))) as [{ filename: string; files: { path: string }[] }];
    const tarball = join(work, packed.filename);
    const shipped = packed.files.map((f) => f.path);
    expect(shipped).toEqual(expect.arrayContaining(["bin/ajet-edge.mjs", "dist/src/index.js", "dist/src/index.d.ts", "wrangler.toml", "README.md"]));
    expect(shipped.filter((p) => p.startsWith("src/") || p.startsWith("test/"))).toEqual([]);

    await sh(work, "tar", ["-xzf", tarball]);
    // the unpacked package's own dependencies (commander …) as an install would provide them; the project's
    // `npm install` below installs the tarball with only its declared dependencies
    symlinkSync(join(repo, "node_modules"), join(work, "package", "node_modules"), "dir");
    const init = await sh(work, process.execPath, [join(work, "package", "bin", "ajet-edge.mjs"), "init", "my-rollouts", "--from", tarball]);
    expect(init.stdout).toContain("created  my-rollouts/functions/my-agent.ts");
    const project = join(work, "my-rollouts");
    const pkg = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as { dependencies: Record<string, string>; scripts: Record<string, string> };
    expect(pkg.dependencies["ajet-edge"]).toBe(`file:../${packed.filename}`);
    expect(pkg.scripts["start"]).toBe("ajet-edge dev --function my-agent");

    const install = await sh(project, "npm", ["install", "--prefer-offline", "--no-audit", "--no-fund"]);
    expect(install.stdout).toMatch(/^added \d+ packages/m); // npm's normal summary, not JSON

    // the CLI as installed (dist/, no sources): every command's help and the version, in one process each
    const version = (JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string }).version;
    const cli = join(project, "node_modules", ".bin", "ajet-edge");
    for (const args of [["--version"], ["-V"], ...COMMANDS.map((c) => [c, "--version"])]) {
      const out = await sh(project, cli, args);
      expect([args.join(" "), out.stdout.trim(), out.stderr]).toEqual([args.join(" "), version, ""]);
    }
    for (const command of COMMANDS) {
      const out = await sh(project, cli, [command, "--help"]);
      expect(out.stdout, command).toMatch(new RegExp(`^Usage: ajet-edge ${command} \\[options\\]`));
      expect(out.stderr, command).toBe("");
    }
    const listing = [await sh(project, cli, ["--help"]), await sh(project, cli, ["help"]), await sh(project, cli, [], 60_000, [2])];
    for (const out of listing) {
      expect(out.stdout).toMatch(/^Usage: ajet-edge <command> \[options\]/);
      for (const command of COMMANDS) expect(out.stdout).toContain(`  ${command}`);
      expect(out.stderr).toBe("");
    }
    expect(listing.map((o) => o.code)).toEqual([0, 0, 2]);
    expect((await sh(project, cli, ["help", "dev"])).stdout).toMatch(/^Usage: ajet-edge dev \[options\]/);
    const test = await sh(project, "npm", ["test"]);
    expect(test.stdout).toMatch(/Tests\s+5 passed/);

    writeFileSync(join(project, "src", "types-check.ts"), TYPES_CHECK);
    await sh(project, "npx", ["tsc", "--noEmit"]);
    writeFileSync(join(project, "import-check.mjs"), IMPORT_CHECK);
    const imported = await sh(project, process.execPath, ["import-check.mjs"]);
    expect(JSON.parse(imported.stdout)).toEqual({
      defineRolloutFunction: "function",
      fromAgentRun: "function",
      createOpenAIJudge: "function",
      createTestContext: "function",
      startEmulator: "function",
    });

    const made = await sh(project, "npx", ["ajet-edge", "new", "second-agent"]);
    expect(made.stdout).toContain("created  test/second-agent.test.ts");
    expect(readFileSync(join(project, "functions", "index.ts"), "utf8")).toContain('"second-agent": secondAgent,');
    expect(readFileSync(join(project, "README.md"), "utf8")).not.toContain("second-agent");
    const retest = await sh(project, "npm", ["test"]);
    expect(retest.stdout).toMatch(/Tests\s+10 passed/);

    const start = await sh(project, "npm", ["start", "--silent", "--", "--json"]);
    const summary = JSON.parse(start.stdout) as { outcome: string; stopReason: string; claimedLeft: number; steps: unknown[] };
    expect({ outcome: summary.outcome, stopReason: summary.stopReason, claimedLeft: summary.claimedLeft, steps: summary.steps.length }).toEqual({
      outcome: "finished",
      stopReason: "maxSteps",
      claimedLeft: 0,
      steps: 3,
    });
  });
});
