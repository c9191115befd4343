/**
 * The README's `npm start -- --json` prints only JSON on stdout (npm's "> ajet-edge start" banner goes to stderr:
 * the project's .npmrc sets npm's json mode), so `npm start -- --json | jq` works.
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

describe.skipIf(!hasNpm)("e2e: npm start -- --json", () => {
  it("gives parseable JSON on stdout, the progress and npm's banner on stderr", async () => {
    const child = spawn("npm", ["start", "--", "--json", "--steps", "1"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, npm_config_json: undefined } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code).toBe(0);
    const summary = JSON.parse(stdout) as { outcome: string; steps: unknown[] };
    expect(summary.outcome).toBe("finished");
    expect(summary.steps).toHaveLength(1);
    expect(stderr).toContain("> ajet-edge@");
    expect(stderr).toContain("dashboard: http://127.0.0.1:");
  });
});
