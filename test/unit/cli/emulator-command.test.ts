/**
 * `ajet-edge emulator` start failures as one line naming the fix, never a stack trace: a taken port (exit 1), a
 * missing or bad `--answer-key` file and a `--host` that is not this machine's (exit 2); and an answer key file that
 * loads. Real sockets on 127.0.0.1 only.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { listenError, runEmulatorCommand } from "../../../src/cli/commands/emulator.ts";

const dir = mkdtempSync(join(tmpdir(), "ajet-emu-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the command; a start that succeeds is stopped at once. @returns the exit code and what it printed. */
async function run(argv: string[]): Promise<{ code: number; log: string[]; errors: string[] }> {
  const log: string[] = [];
  const errors: string[] = [];
  const code = await runEmulatorCommand(argv, { log: (l) => log.push(l), error: (l) => errors.push(l), waitForStop: async () => 0 });
  return { code, log, errors };
}

async function listening(): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

describe("ajet-edge emulator start failures", () => {
  it("a taken port: exit 1, one line saying how to pick another", async () => {
    const taken = await listening();
    const { port } = taken.address() as { port: number };
    try {
      expect(await run(["--port", String(port)])).toEqual({
        code: 1,
        log: [],
        errors: [`ajet-edge emulator: port ${port} on 127.0.0.1 is already in use (another emulator or swarm server?); stop it, or pick another with --port N (--port 0 = any free port)`],
      });
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it("a missing answer key file or a directory: exit 2 naming the path", async () => {
    expect(await run(["--port", "0", "--answer-key", join(dir, "absent.jsonl")])).toEqual({
      code: 2, log: [], errors: [`ajet-edge emulator: --answer-key ${join(dir, "absent.jsonl")}: no such file; give the path of a JSONL answer key`],
    });
    expect((await run(["--port", "0", "--answer-key", dir])).errors).toEqual([`ajet-edge emulator: --answer-key ${dir} is a directory; give a JSONL file`]);
  });

  it("a bad answer key line: exit 2 naming the file, the line and the expected shapes", async () => {
    const path = join(dir, "bad.jsonl");
    writeFileSync(path, '{"match": "q", "answer": "1", "format": "boxed"}\n\n{"foo": 1}\n');
    expect(await run(["--port", "0", "--answer-key", path])).toEqual({
      code: 2,
      log: [],
      errors: [`ajet-edge emulator: bad --answer-key file: ${path} line 3: unknown row shape; expected {match, answer, format}, {question, answer} or {target, nums, solution?}`],
    });
    writeFileSync(path, "not json\n");
    expect((await run(["--port", "0", "--answer-key", path])).errors[0]).toMatch(/^ajet-edge emulator: bad --answer-key file: .*bad\.jsonl line 1: not JSON \(/);
  });

  it("a good answer key file is loaded and counted in the ready line", async () => {
    const path = join(dir, "good.jsonl");
    writeFileSync(path, '{"match": "q1", "answer": "1", "format": "boxed"}\n{"question": "q2", "answer": "w\\n#### 2"}\n');
    const { code, log, errors } = await run(["--port", "0", "--profile", "fast", "--answer-key", path]);
    expect({ code, errors }).toEqual({ code: 0, errors: [] });
    expect(log[0]).toMatch(/^ajet-edge emulator ready at http:\/\/127\.0\.0\.1:\d+ \(profile fast, seed 0, simulated policy, 2 answer key rows\); Ctrl-C to stop$/);
  });

  it("maps listen errors to a fix: EACCES and EADDRNOTAVAIL, others keep their message", () => {
    const errno = (code: string) => Object.assign(new Error(`listen ${code}`), { code });
    const where = { host: "127.0.0.1", port: 80 };
    expect(listenError(errno("EACCES"), where)).toMatchObject({ code: 1, message: "not allowed to listen on 127.0.0.1:80 (ports below 1024 need privileges); pick a port above 1023 with --port N" });
    expect(listenError(errno("EADDRNOTAVAIL"), { host: "192.0.2.1", port: 1 })).toMatchObject({ code: 2, message: "--host 192.0.2.1 is not an address of this machine; use 127.0.0.1 (the default) or 0.0.0.0 (every interface)" });
    expect(listenError(errno("EMFILE"), where)).toMatchObject({ code: 1, message: "cannot listen on 127.0.0.1:80: listen EMFILE" });
  });
});
