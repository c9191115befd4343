/**
 * A Worker that accepts connections and never answers (a lost request, a hung workerd): `ajet-edge run` reports it
 * within its `--request-timeout` (one line, and one JSON document with `error` under `--json`, exit 1) instead of
 * waiting for Node's 300 s default; and Ctrl-C (SIGINT) while a request hangs ends it within a second (exit 130).
 * The CLI runs as its own process, as a user starts it.
 */
import { spawn } from "node:child_process";
import { createServer, type Server, type Socket } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type RunningEmulator } from "../../src/emulator/index.ts";

const BIN = fileURLToPath(new URL("../../bin/ajet-edge.mjs", import.meta.url));
const TOKEN = "3f9a1c0e5b7d2468ace13579bdf02468";

let silent: Server;
let silentUrl = "";
const sockets = new Set<Socket>();
let emulator: RunningEmulator;

beforeAll(async () => {
  // accepts every connection, reads the request, never writes a byte
  silent = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.resume();
  });
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
  emulator = await startEmulator({ port: 0, profile: "dev" });
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => silent?.close(resolve));
  await emulator?.close();
});

/** Starts `ajet-edge run` against the silent Worker; resolves once its POST /runs is on the way (the `Worker:` line). */
function startRun(extra: string[]) {
  const child = spawn(process.execPath, [BIN, "run", "--worker", silentUrl, "--swarm-url", emulator.url, "--token", TOKEN, "--json", ...extra], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  const lines: { atMs: number; line: string }[] = [];
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  createInterface({ input: child.stderr }).on("line", (line) => {
    stderr += `${line}\n`;
    lines.push({ atMs: Date.now(), line });
  });
  const exited = new Promise<{ code: number | null; atMs: number }>((resolve) => child.once("exit", (code) => resolve({ code, atMs: Date.now() })));
  const asking = new Promise<number>((resolve, reject) => {
    const timer = setInterval(() => {
      const seen = lines.find((l) => l.line.startsWith("  Worker: "));
      if (seen) {
        clearInterval(timer);
        resolve(seen.atMs);
      }
    }, 20);
    void exited.then(() => {
      clearInterval(timer);
      reject(new Error(`the CLI exited before asking the Worker:\n${stderr}`));
    });
  });
  return { child, asking, exited, lines, out: () => stdout, err: () => stderr };
}

describe("e2e: a Worker that never answers", () => {
  it("run reports it within --request-timeout: one line, one JSON document with `error`, exit 1", async () => {
    const cli = startRun(["--request-timeout", "2"]);
    const askedAtMs = await cli.asking;
    const { code, atMs } = await cli.exited;
    expect(code, cli.err()).toBe(1);
    const waitedMs = atMs - askedAtMs;
    expect(waitedMs).toBeGreaterThanOrEqual(1_900);
    expect(waitedMs).toBeLessThan(2_000 + 15_000); // the timeout, plus a loaded machine's slack to print and exit
    expect(cli.err()).toContain(`ajet-edge run: the Worker at ${silentUrl} did not answer POST /runs within 2 s (--request-timeout)`);
    expect(JSON.parse(cli.out())).toMatchObject({ runId: null, outcome: "error", exitCode: 1, error: expect.stringContaining("did not answer POST /runs within 2 s") });
  });

  it("Ctrl-C while the request hangs ends the CLI within a second, exit 130", async () => {
    const cli = startRun([]); // the default request timeout (30 s) is far off
    await cli.asking;
    await new Promise((r) => setTimeout(r, 300)); // the request is on the wire
    const sentAtMs = Date.now();
    cli.child.kill("SIGINT");
    const { code, atMs } = await cli.exited;
    expect(code, cli.err()).toBe(130);
    const answered = cli.lines.find((l) => l.line.startsWith("interrupted"));
    expect(answered, cli.err()).toBeDefined();
    expect(answered!.atMs - sentAtMs).toBeLessThan(1_000);
    expect(atMs - sentAtMs).toBeLessThan(1_000);
    expect(JSON.parse(cli.out())).toMatchObject({ runId: null, outcome: "interrupted", exitCode: 130 });
  });
});
