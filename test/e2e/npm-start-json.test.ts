/**
 * `--json` prints exactly one JSON document on stdout in every outcome, so `npx ajet-edge dev --json | jq` and
 * `npm start --silent -- --json | jq` work (npm prints its "> ajet-edge start" banner on stdout unless `--silent`):
 * a finished run (the summary), a usage error and a run that cannot start in time (`{error, exitCode …}`). Progress
 * and npm's own lines go to stderr or nowhere; the repository has no `.npmrc` JSON mode, so npm adds no JSON of
 * its own to a failing script.
 */
import { execFileSync, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
let hasNpm = true;
try {
  execFileSync("npm", ["--version"], { stdio: "ignore" });
} catch {
  hasNpm = false;
  console.log("npm start --json test skipped: no npm on PATH");
}

/** Runs a command in the repository; @returns its exit code, stdout and stderr. */
async function sh(file: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_json$/i.test(k)));
  const child = spawn(file, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  return { code, stdout, stderr };
}

describe.skipIf(!hasNpm)("e2e: --json gives one JSON document on stdout", () => {
  it("npm start --silent -- --json: the summary of a finished run; the progress on stderr", async () => {
    const run = await sh("npm", ["start", "--silent", "--", "--json", "--steps", "1"]);
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout) as { outcome: string; exitCode: number; error: string | null; steps: unknown[] };
    expect({ outcome: summary.outcome, exitCode: summary.exitCode, error: summary.error, steps: summary.steps.length }).toEqual({ outcome: "finished", exitCode: 0, error: null, steps: 1 });
    expect(run.stderr).toContain("dashboard: http://127.0.0.1:");
    expect(run.stderr).not.toContain("> ajet-edge@");
  });

  it("npm start --silent -- --json with bad input, and npx ajet-edge dev --json that cannot start in time: one document with `error`", async () => {
    const bad = await sh("npm", ["start", "--silent", "--", "--json", "--function", "nope"]);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout)).toMatchObject({ runId: null, outcome: "error", exitCode: 2, error: expect.stringContaining('no rollout function "nope"') });
    const late = await sh("npx", ["ajet-edge", "dev", "--json", "--timeout", "0.5"]);
    expect(late.code).toBe(1);
    expect(JSON.parse(late.stdout)).toMatchObject({ runId: null, outcome: "error", exitCode: 1, error: "could not start within --timeout 0.5 s" });
  });
});
