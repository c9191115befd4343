/**
 * `ajet-edge dev` failing early and clearly, before workerd is started: help, a bad dataset path, an unknown
 * function, a run spec the scheduler would refuse (issues as `path: message` lines), and an unreachable swarm server.
 * (Whole runs are in test/e2e.)
 */
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { runDevCommand } from "../../../src/cli/commands/dev.ts";
import { parseDevArgs } from "../../../src/cli/dev/options.ts";
import { memoryIo } from "../../../src/cli/dev/output.ts";
import { generatedCountdownDataset } from "../../../src/cli/dev/plan.ts";
import { runDev } from "../../../src/cli/dev/run-dev.ts";

/** A 127.0.0.1 port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("ajet-edge dev early failures", () => {
  it("--help prints the usage generated from the flag definitions and exits 0", async () => {
    const io = memoryIo();
    expect(await runDevCommand(["--help"], io)).toBe(0);
    const help = io.stdout.join("");
    expect(help).toContain("Usage: ajet-edge dev [options]");
    expect(help).toMatch(/--dataset <source\[:weight\]>\s+tasks from a JSONL file/);
    expect(help).toMatch(/--persist <dir>\s+keep the local Worker's state in DIR/);
    expect(help).toContain("Ctrl-C stops cleanly");
  });

  it("a dataset path that does not exist: exit 2 naming the path", async () => {
    const io = memoryIo();
    expect(await runDevCommand(["--dataset", "/no/such/file.jsonl", "--function", "math-agent"], io)).toBe(2);
    expect(io.stderr.join("")).toMatch(/^ajet-edge dev: cannot read dataset \/no\/such\/file\.jsonl: no such file; give the path of a JSONL file, or a URL/);
  });

  it("an unknown function: exit 2 listing the known ones", async () => {
    const io = memoryIo();
    expect(await runDevCommand(["--function", "nope"], io)).toBe(2);
    expect(io.stderr.join("")).toMatch(/^ajet-edge dev: no rollout function "nope"; known: .*countdown/);
  });

  it("a run spec the scheduler refuses: exit 2 with its issues as path: message lines", async () => {
    const io = memoryIo();
    const twice = generatedCountdownDataset({ name: "cd", count: 8, seed: 1 });
    const result = await runDev(parseDevArgs([])!, io, { datasets: [twice, { ...twice, entry: { ...twice.entry, generate: { count: 8, seed: 2 } } }] });
    expect(result.exitCode).toBe(2);
    expect(io.stderr.join("")).toBe(
      'ajet-edge dev: the run spec is invalid:\n  datasets: dataset name "cd" is used twice; names namespace task ids and must be unique; rename one\n',
    );
  });

  it("an unreachable --swarm-url: exit 1 naming the URL, without starting workerd", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const io = memoryIo();
    expect(await runDevCommand(["--swarm-url", url], io)).toBe(1);
    expect(io.stderr.join("")).toContain(`ajet-edge dev: cannot reach the swarm server at ${url}: GET /get_engine_status failed`);
    expect(io.stdout.join("")).not.toContain("Worker:");
  });
});
