/**
 * `ajet-edge sandbox-server`: its flags (one clear line for a bad one), the ready line with the URL, the token
 * from AJET_SANDBOX_TOKEN (never printed) or a made one (printed once), and a stop that destroys every sandbox.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSandboxServerArgs, runSandboxServerCommand } from "../../../src/cli/commands/sandbox-server.ts";
import { listLocalSandboxes, localSandboxBackend } from "../../../src/sandbox/local-backend.ts";

describe("ajet-edge sandbox-server", () => {
  it("parses its flags and refuses bad ones with the fix", () => {
    expect(parseSandboxServerArgs(["--port", "0", "--fault", "create-fail:0.3", "--max-sandboxes", "10"])).toEqual({ port: 0, host: "127.0.0.1", maxSandboxes: 10, createFailRate: 0.3, seed: 1 });
    expect(() => parseSandboxServerArgs(["--fault", "create-fail:2"])).toThrow("--fault must be create-fail:RATE with RATE from 0 to 1, got 'create-fail:2'");
    expect(() => parseSandboxServerArgs(["--port", "x"])).toThrow("--port must be an integer from 0 to 65535, got 'x'");
  });

  it("serves with the token from AJET_SANDBOX_TOKEN (not printed), and destroys every sandbox at stop", async () => {
    const root = mkdtempSync(join(tmpdir(), "ajet-sbx-cli-"));
    const token = "cli-test-token-0123456789";
    const lines: string[] = [];
    let live = -1;
    const code = await runSandboxServerCommand(["--root", root], {
      log: (l) => lines.push(l),
      error: (l) => lines.push(l),
      env: { AJET_SANDBOX_TOKEN: token },
      waitForStop: async (server) => {
        const b = localSandboxBackend({ url: server.url, token });
        await b.create("sb-cli", { instanceType: "lite", image: "default", env: {}, ttlSeconds: 60 });
        live = (await listLocalSandboxes({ url: server.url, token })).length;
        return 0;
      },
    });
    expect(code).toBe(0);
    expect(live).toBe(1);
    expect(lines[0]).toMatch(/^ajet-edge sandbox server ready at http:\/\/127\.0\.0\.1:\d+ \(token from AJET_SANDBOX_TOKEN; root /);
    expect(lines.join("\n")).not.toContain(token);
    expect(lines.at(-1)).toBe("ajet-edge sandbox server stopped (every sandbox destroyed)");
    rmSync(root, { recursive: true, force: true });
  });
});
