/**
 * @module test/unit/cli/preflight — what `dev` and `run` check of the swarm servers before creating a run, against
 * the emulator: an unreachable server and a running engine that batches differently are refused at once (one line:
 * the URL, both values and the fix, as the Worker would fail the run); an OFFLINE engine, a matching one and a
 * gateway that answers 401 pass. And `run` refuses before it calls the Worker.
 */
import { createServer } from "node:http";
import { createServer as createNetServer } from "node:net";
import { describe, expect, it } from "vitest";
import { SwarmClient } from "../../../src/client/index.ts";
import { runRunCommand } from "../../../src/cli/commands/run.ts";
import { memoryIo } from "../../../src/cli/dev/output.ts";
import { checkSwarms, SwarmCheckError } from "../../../src/cli/dev/preflight.ts";
import { startEmulator } from "../../../src/emulator/index.ts";
import { AgentJetJob } from "../../../src/job/index.ts";

/** A 127.0.0.1 port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** An emulator whose engine runs with batch `batchSize` × `numRepeat` (started as another client would). */
async function runningEmulator(batchSize: number, numRepeat: number) {
  const emu = await startEmulator({ port: 0, profile: "fast" });
  const client = new SwarmClient({ baseURL: emu.url, logger: { info: () => {}, warn: () => {}, error: () => {} } });
  await client.syncTrainConfig(new AgentJetJob({ batchSize, numRepeat, maxEnvWorker: batchSize * numRepeat }));
  await client.startEngine({ timeoutMs: 60_000 });
  return emu;
}

describe("checkSwarms", () => {
  it("refuses an unreachable server, naming it", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const err = await checkSwarms([{ name: "default", url }], { batchSize: 8, numRepeat: 4 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SwarmCheckError);
    expect((err as SwarmCheckError).kind).toBe("unreachable");
    expect((err as Error).message).toMatch(new RegExp(`^cannot reach the swarm server at ${url}: .*; check that it runs and that this machine and the Worker can reach it$`));
  });

  it("refuses a running engine that batches differently with the Worker's message; passes a matching one and an OFFLINE one", { timeout: 90_000 }, async () => {
    const emu = await runningEmulator(2, 2);
    const offline = await startEmulator({ port: 0, profile: "fast" });
    try {
      const err = await checkSwarms([{ name: "default", url: emu.url }], { batchSize: 8, numRepeat: 4 }).catch((e: unknown) => e);
      expect((err as SwarmCheckError).kind).toBe("batch");
      expect((err as Error).message).toBe(
        `the swarm server ${emu.url} already runs an engine with batch size 2 and num_repeat 2 (its pool information (completed_task_target, task_expected_num_repeat)), ` +
          "but this run has batchSize 8 and numRepeat 4: its batch windows could never close. Create the run with batchSize 2 and numRepeat 2, or stop that engine (POST /stop_engine on the server) so this run syncs its own config",
      );
      await expect(checkSwarms([{ name: "default", url: emu.url }], { batchSize: 2, numRepeat: 2 })).resolves.toBeUndefined();
      await expect(checkSwarms([{ name: "default", url: offline.url }], { batchSize: 8, numRepeat: 4 })).resolves.toBeUndefined();
    } finally {
      await emu.close();
      await offline.close();
    }
  });

  it("a gateway that answers 401 without its headers counts as reachable (the Worker sends them)", async () => {
    const gateway = createServer((_req, res) => res.writeHead(401, { "content-type": "application/json" }).end('{"detail":"missing CF-Access headers"}'));
    await new Promise<void>((resolve) => gateway.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(gateway.address() as { port: number }).port}`;
      await expect(checkSwarms([{ name: "default", url }], { batchSize: 8, numRepeat: 4 })).resolves.toBeUndefined();
    } finally {
      await new Promise((resolve) => gateway.close(resolve));
    }
  });
});

describe("ajet-edge run checks the swarm servers before it creates the run", () => {
  it("an unreachable --swarm-url: exit 1 at once, and the Worker is never called", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const calls: string[] = [];
    const worker = createServer((req, res) => {
      calls.push(`${req.method} ${req.url}`);
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => worker.listen(0, "127.0.0.1", resolve));
    try {
      const io = memoryIo();
      const workerUrl = `http://127.0.0.1:${(worker.address() as { port: number }).port}`;
      const code = await runRunCommand(["--worker", workerUrl, "--swarm-url", url, "--token", "3f9a1c0e5b7d2468ace13579bdf02468"], io, {});
      expect(code).toBe(1);
      expect(io.stderr.join("")).toContain(`ajet-edge run: cannot reach the swarm server at ${url}: `);
      expect(io.stdout.join("")).not.toContain("Worker:");
      expect(calls).toEqual([]);
    } finally {
      await new Promise((resolve) => worker.close(resolve));
    }
  });
});
