/**
 * The local sandbox server with real processes, through its HTTP client: idempotent create by id, streamed
 * output and exit codes, the timeout and the output cap kill the whole process group, destroy leaves no process
 * of the sandbox (also one that left its group) and no directory, a destroyed id is never made again, the memory
 * limit holds, the code interpreter gives stdout/stderr/result/exception, paths stay inside the workdir, the
 * token is required, and a server killed with SIGKILL leaks nothing past the next start on the same root.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandboxServer, type RunningSandboxServer } from "../../../src/sandbox/local-server/index.ts";
import { HAS_PROC, markedProcesses } from "../../../src/sandbox/local-server/processes.ts";
import { listLocalSandboxes, localSandboxBackend } from "../../../src/sandbox/local-backend.ts";
import type { SandboxBackend } from "../../../src/sandbox/backend.ts";
import { SandboxError } from "../../../src/sandbox/types.ts";

const spec = { instanceType: "lite" as const, image: "default", env: { GREETING: "hello" }, ttlSeconds: 600 };
const run = { timeoutMs: 10_000, maxOutputBytes: 64 * 1024 };

let root: string;
let server: RunningSandboxServer;
let backend: SandboxBackend;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "ajet-sbx-test-"));
  server = await startSandboxServer({ root });
  backend = localSandboxBackend({ url: server.url, token: server.token });
});
afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

/** Live processes of one sandbox of this server (by marker). */
const processesOf = (id: string) => markedProcesses((m) => m === `${server.sandboxes.instance}/${id}`);

describe("local sandbox server", () => {
  it("creates by id idempotently and lists the live sandboxes", async () => {
    expect(await backend.create("sb-idem", spec)).toEqual({ created: true });
    expect(await backend.create("sb-idem", spec)).toEqual({ created: false });
    const live = await listLocalSandboxes({ url: server.url, token: server.token });
    expect(live.filter((s) => s.id === "sb-idem")).toHaveLength(1);
    await backend.destroy("sb-idem");
    expect((await listLocalSandboxes({ url: server.url, token: server.token })).some((s) => s.id === "sb-idem")).toBe(false);
  });

  it("runs a command in the workdir with the sandbox's env: streamed output, stderr apart, the exit code", async () => {
    await backend.create("sb-cmd", spec);
    const chunks: string[] = [];
    const r = await backend.exec("sb-cmd", { ...run, command: 'echo "$GREETING $EXTRA"; echo oops >&2; pwd; exit 3', env: { EXTRA: "world" }, onOutput: (s, c) => chunks.push(`${s}:${c}`) });
    expect(r.exitCode).toBe(3);
    expect(r.timedOut).toBe(false);
    expect(r.capped).toBe(false);
    expect(r.stdout.split("\n")[0]).toBe("hello world");
    expect(r.stdout.split("\n")[1]).toMatch(/\/boxes\/sb-cmd$/);
    expect(r.stderr).toBe("oops\n");
    expect(chunks.join("")).toContain("stdout:hello world");
    expect(chunks.some((c) => c.startsWith("stderr:oops"))).toBe(true);
    // nothing of the server's environment leaks in
    const env = await backend.exec("sb-cmd", { ...run, command: "env" });
    expect(env.stdout).not.toMatch(/^(VITEST|npm_|NODE_OPTIONS)/m);
    expect(env.stdout).toMatch(/^HOME=.*\/boxes\/sb-cmd$/m);
    await backend.destroy("sb-cmd");
  });

  it("the timeout kills the command and everything it started", async () => {
    await backend.create("sb-timeout", spec);
    const r = await backend.exec("sb-timeout", { ...run, timeoutMs: 400, command: "sleep 30 & sleep 30; echo never" });
    expect(r).toMatchObject({ exitCode: null, timedOut: true, capped: false });
    expect(r.stdout).toBe("");
    if (HAS_PROC) expect(processesOf("sb-timeout").size).toBe(0);
    await backend.destroy("sb-timeout");
  });

  it("the output cap stops a command that prints without end, keeping exactly the cap", async () => {
    await backend.create("sb-cap", spec);
    const r = await backend.exec("sb-cap", { ...run, maxOutputBytes: 5000, command: "yes ajet" });
    expect(r).toMatchObject({ exitCode: null, timedOut: false, capped: true });
    expect(r.stdout.length).toBe(5000);
    if (HAS_PROC) expect(processesOf("sb-cap").size).toBe(0);
    await backend.destroy("sb-cap");
  });

  it("destroy kills what the sandbox left running (also a process that left its group with setsid) and removes its directory", async () => {
    await backend.create("sb-bg", spec);
    await backend.exec("sb-bg", { ...run, command: "sleep 300 >/dev/null 2>&1 & setsid sh -c 'sleep 300' >/dev/null 2>&1 & echo started" });
    if (HAS_PROC) expect(processesOf("sb-bg").size).toBeGreaterThanOrEqual(2);
    const dir = join(server.sandboxes.dir, "boxes", "sb-bg");
    expect(existsSync(dir)).toBe(true);
    expect(await backend.destroy("sb-bg")).toEqual({ existed: true });
    if (HAS_PROC) expect(processesOf("sb-bg").size).toBe(0);
    expect(existsSync(dir)).toBe(false);
    expect(await backend.destroy("sb-bg")).toEqual({ existed: false });
  });

  it("a destroyed id is never made again (a create that arrives after the destroy leaves no orphan)", async () => {
    await backend.create("sb-once", spec);
    await backend.destroy("sb-once");
    const err = await backend.create("sb-once", spec).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxError);
    expect(err).toMatchObject({ kind: "infrastructure", code: "sandbox_destroyed", retryable: false });
    // an id destroyed before it was ever created is buried too
    expect(await backend.destroy("sb-never")).toEqual({ existed: false });
    await expect(backend.create("sb-never", spec)).rejects.toMatchObject({ code: "sandbox_destroyed" });
  });

  it("a command in a sandbox that is gone is an infrastructure failure naming it", async () => {
    await expect(backend.exec("sb-missing", { ...run, command: "true" })).rejects.toMatchObject({ kind: "infrastructure", code: "sandbox_not_found" });
  });

  it("the memory limit of the instance type holds (lite: 256 MiB)", async () => {
    await backend.create("sb-mem", spec);
    const r = await backend.exec("sb-mem", { ...run, command: `python3 -c "x = bytearray(600 * 1024 * 1024); print('allocated')"` });
    expect(r.stdout).not.toContain("allocated");
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain("MemoryError");
    const small = await backend.exec("sb-mem", { ...run, command: `python3 -c "x = bytearray(50 * 1024 * 1024); print('allocated')"` });
    expect(small.stdout).toBe("allocated\n");
    await backend.destroy("sb-mem");
  });

  it("files: write (parents made), read, list; a path cannot leave the workdir", async () => {
    await backend.create("sb-files", spec);
    await backend.writeFile("sb-files", "src/main.py", "print(6 * 7)\n");
    expect(await backend.readFile("sb-files", "src/main.py")).toBe("print(6 * 7)\n");
    expect(await backend.listFiles("sb-files", ".")).toEqual([{ name: "src", type: "directory", size: 0 }]);
    expect(await backend.listFiles("sb-files", "src")).toEqual([{ name: "main.py", type: "file", size: 13 }]);
    expect((await backend.exec("sb-files", { ...run, command: "python3 src/main.py" })).stdout).toBe("42\n");
    await expect(backend.readFile("sb-files", "nope.txt")).rejects.toMatchObject({ kind: "not_found" });
    await expect(backend.writeFile("sb-files", "../outside.txt", "x")).rejects.toMatchObject({ kind: "config", message: expect.stringContaining("leaves the sandbox's workdir") });
    await backend.exec("sb-files", { ...run, command: "ln -s / rootlink" });
    await expect(backend.readFile("sb-files", "rootlink/etc/hostname")).rejects.toMatchObject({ kind: "config", message: expect.stringContaining("symlink") });
    await backend.destroy("sb-files");
  });

  it("the code interpreter: stdout, the last expression's value, the exception; each run starts clean", async () => {
    await backend.create("sb-code", spec);
    const py = await backend.runCode("sb-code", { ...run, language: "python", code: "x = 20\nprint('x is', x)\nx * 2 + 2" });
    expect(py).toMatchObject({ stdout: "x is 20\n", result: "42", error: null, timedOut: false });
    const again = await backend.runCode("sb-code", { ...run, language: "python", code: "x" });
    expect(again.error).toMatchObject({ name: "NameError" });
    expect(again.stderr).toContain("NameError");
    expect(again.stderr).not.toContain("run.py"); // the cell's frames only
    const js = await backend.runCode("sb-code", { ...run, language: "javascript", code: "console.log('js'); [1, 2, 3].map((n) => n * 2)" });
    expect(js).toMatchObject({ stdout: "js\n", result: "[ 2, 4, 6 ]", error: null });
    const thrown = await backend.runCode("sb-code", { ...run, language: "javascript", code: "throw new TypeError('bad')" });
    expect(thrown.error).toMatchObject({ name: "TypeError", message: "bad" });
    const slow = await backend.runCode("sb-code", { ...run, timeoutMs: 500, language: "python", code: "import time\ntime.sleep(30)" });
    expect(slow).toMatchObject({ timedOut: true, exitCode: null });
    // cells live outside the workdir: the function's files are its own
    expect(await backend.listFiles("sb-code", ".")).toEqual([]);
    await backend.destroy("sb-code");
  });

  it("bad input is one clear 4xx line: an unknown instance type, an image the local server cannot run", async () => {
    await expect(backend.create("sb-bad", { ...spec, instanceType: "huge" as never })).rejects.toMatchObject({
      kind: "config",
      message: 'instanceType "huge" is not an instance type; use one of lite, basic, standard-1, standard-2, standard-3, standard-4',
    });
    await expect(backend.create("sb-bad", { ...spec, image: "python:3.12" })).rejects.toMatchObject({ kind: "config", message: expect.stringContaining("runs no container images") });
  });

  it("no token, no access", async () => {
    const res = await fetch(`${server.url}/v1/sandboxes`);
    expect(res.status).toBe(401);
    const wrong = localSandboxBackend({ url: server.url, token: "wrong" });
    await expect(wrong.create("sb-x", spec)).rejects.toMatchObject({ kind: "infrastructure", message: expect.stringContaining("token") });
  });
});

describe("local sandbox server restarts", () => {
  it("a server killed with SIGKILL leaks nothing: the next start on the same root kills its sandboxes' processes and removes their directories", async () => {
    const crashRoot = mkdtempSync(join(tmpdir(), "ajet-sbx-crash-"));
    const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("./_server-child.ts", import.meta.url)), crashRoot], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const ready = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).on("line", (l) => l.startsWith("READY ") && resolve(l));
        child.once("exit", (code) => reject(new Error(`the child server exited (${code})`)));
      });
      const instance = readdirSync(crashRoot).find((n) => n.startsWith("i-"))!;
      const ours = (m: string) => m.startsWith(`${instance}/`);
      if (HAS_PROC) expect(markedProcesses(ours).size).toBeGreaterThanOrEqual(2);
      expect(ready).toMatch(/^READY http/);
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
      // the sandbox's processes outlive the server …
      if (HAS_PROC) expect(markedProcesses(ours).size).toBeGreaterThanOrEqual(2);
      // … until the next start on the same root
      const next = await startSandboxServer({ root: crashRoot });
      try {
        expect(next.reaped).toBe(1);
        if (HAS_PROC) expect(markedProcesses(ours).size).toBe(0);
        expect(existsSync(join(crashRoot, instance))).toBe(false);
        // the reaped id is never made again
        const b = localSandboxBackend({ url: next.url, token: next.token });
        await expect(b.create("sb-left", spec)).rejects.toMatchObject({ code: "sandbox_destroyed" });
      } finally {
        await next.close();
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      rmSync(crashRoot, { recursive: true, force: true });
    }
  }, 60_000);

  it("a server stopped cleanly destroys its sandboxes and removes its directory", async () => {
    const r = mkdtempSync(join(tmpdir(), "ajet-sbx-stop-"));
    const s = await startSandboxServer({ root: r });
    const b = localSandboxBackend({ url: s.url, token: s.token });
    await b.create("sb-stop", spec);
    await b.exec("sb-stop", { ...run, command: "sleep 300 >/dev/null 2>&1 & echo ok" });
    const instance = s.sandboxes.instance;
    await s.close();
    if (HAS_PROC) expect(markedProcesses((m) => m.startsWith(`${instance}/`)).size).toBe(0);
    expect(existsSync(join(r, instance))).toBe(false);
    rmSync(r, { recursive: true, force: true });
  });
});
