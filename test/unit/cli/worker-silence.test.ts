/**
 * @module test/unit/cli/worker-silence — `ajet-edge run` against a Worker (a local HTTP server) that creates the run,
 * answers one status request and then never answers again: the progress line says the Worker is not answering
 * (with the last values it gave), the run is reported lost after the polls that may fail in a row, and Ctrl-C
 * during the silence is answered at once.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { runRunCommand } from "../../../src/cli/commands/run.ts";
import { memoryIo } from "../../../src/cli/dev/output.ts";
import { midRun } from "./_fixtures.ts";

const TOKEN = "3f9a1c0e5b7d2468ace13579bdf02468";
let server: Server | undefined;
const hung = new Set<ServerResponse>();

afterEach(async () => {
  for (const res of hung) res.destroy();
  hung.clear();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A Worker and swarm server in one: the swarm answers, the Worker creates the run and answers `answers` status reads. */
async function silentAfter(answers: number): Promise<string> {
  let left = answers;
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    const json = (status: number, body: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (req.url === "/get_engine_status") return json(200, { engine_status: "ENGINE.ROLLING", engine_status_detail: null, global_step: 2 });
    if (req.method === "POST" && req.url === "/runs") return json(201, midRun({ phase: "running" }));
    if (req.method === "GET" && req.url === "/runs/run-1" && left-- > 0) return json(200, midRun());
    hung.add(res); // never answered
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

describe("a Worker that stops answering while a run is followed", () => {
  it("the progress says so with the last values, and the run is reported lost after the failed polls", { timeout: 60_000 }, async () => {
    const url = await silentAfter(1);
    const io = memoryIo();
    const code = await runRunCommand(["--worker", url, "--swarm-url", url, "--token", TOKEN, "--request-timeout", "2", "--json"], io, {});
    const progress = io.stderr.join("");
    expect(code, progress).toBe(1);
    expect(progress).toMatch(/\] Worker not answering for 5s {2}engine ROLLING {2}global step 2 {2}step 2\/3 {2}episodes 20\/32/);
    expect(progress).toMatch(/ajet-edge run: lost the run run-1: the Worker did not answer for \d+ s\n/);
    expect(JSON.parse(io.stdout.join(""))).toMatchObject({ runId: "run-1", outcome: "error", exitCode: 1 });
  });

  it("Ctrl-C while the Worker is silent is answered at once, and a second one quits", { timeout: 60_000 }, async () => {
    const url = await silentAfter(1);
    const io = memoryIo();
    const out0 = io.out;
    let interruptedAt = 0;
    io.out = (text) => {
      out0(text);
      if (!interruptedAt && text.includes("Worker not answering")) {
        interruptedAt = Date.now();
        io.interrupt("SIGINT");
        setTimeout(() => io.interrupt("SIGINT"), 200); // the drain's stop request hangs too: quit
      }
    };
    const code = await runRunCommand(["--worker", url, "--swarm-url", url, "--token", TOKEN, "--request-timeout", "30"], io, {});
    const out = io.stdout.join("");
    expect(out).toContain("interrupted: stopping the run, waiting for in-flight episodes to finish or abort (Ctrl-C again to quit now)…");
    expect(out).toContain("quitting now");
    expect(io.quitCode).toBe(130);
    expect(code).toBe(130);
    expect(Date.now() - interruptedAt).toBeLessThan(10_000); // a quit process ends at once; here the command returns soon after
  });
});
