/**
 * `ajet-edge dev` failing early and clearly, before workerd is started: help, a bad dataset path, an unknown
 * function, a run spec the scheduler would refuse (issues as `path: message` lines), and an unreachable swarm server;
 * with `--json`, exactly one JSON document on stdout in each of these outcomes. (Whole runs are in test/e2e.)
 */
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { runDevCommand } from "../../../src/cli/commands/dev.ts";
import { runRunsCommand } from "../../../src/cli/commands/runs.ts";
import { runStatusCommand } from "../../../src/cli/commands/status.ts";
import { parseDevArgs } from "../../../src/cli/dev/options.ts";
import { memoryIo } from "../../../src/cli/dev/output.ts";
import { generatedCountdownDataset } from "../../../src/cli/dev/plan.ts";
import { runDev } from "../../../src/cli/dev/run-dev.ts";
import { runMain } from "../../support/cli.ts";

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

/** stdout as exactly one JSON document (JSON.parse fails on a second one: "Unexpected non-whitespace character"). */
function oneJsonDocument(stdout: string): Record<string, unknown> {
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe("--json prints exactly one JSON document on stdout in every outcome", () => {
  it("bad input (an unknown function): {runId: null, outcome: error, exitCode: 2, error}", async () => {
    const io = memoryIo();
    expect(await runDevCommand(["--function", "nope", "--json"], io)).toBe(2);
    const doc = oneJsonDocument(io.stdout.join(""));
    expect(doc).toMatchObject({ runId: null, outcome: "error", exitCode: 2, steps: [] });
    expect(doc["error"]).toMatch(/^no rollout function "nope"; known: /);
    expect(io.stderr.join("")).toMatch(/^ajet-edge dev: no rollout function "nope"/);
  });

  it("an unreachable swarm server: exit 1, the reason in `error`, the progress on stderr only", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const io = memoryIo();
    expect(await runDevCommand(["--swarm-url", url, "--json"], io)).toBe(1);
    const doc = oneJsonDocument(io.stdout.join(""));
    expect(doc).toMatchObject({ runId: null, outcome: "error", exitCode: 1 });
    expect(doc["error"]).toContain(`cannot reach the swarm server at ${url}`);
    expect(io.stderr.join("")).toContain("ajet-edge dev: function countdown");
  });

  it("a usage error caught by the dispatcher (dev, run, runs, status): one document with `error` and `exitCode`", async () => {
    for (const argv of [
      ["dev", "--steps", "0", "--json"],
      ["run", "--json", "--worker", "http://127.0.0.1:9", "--stpes", "3"],
      ["runs", "--json", "--worker", "not a url"],
      ["status", "r1", "--json", "--worker", "http://127.0.0.1:9", "--interval", "0"],
    ]) {
      const out = await runMain(argv);
      expect(out.code, argv.join(" ")).toBe(2);
      expect(out.logs, argv.join(" ")).toHaveLength(1);
      expect(oneJsonDocument(out.logs[0]!), argv.join(" ")).toMatchObject({ exitCode: 2, error: expect.any(String) });
    }
    const plain = await runMain(["dev", "--steps", "0"]);
    expect(plain.logs).toEqual([]);
  });

  it("runs and status against a Worker that is not there: one document with `error`", async () => {
    const worker = `http://127.0.0.1:${await closedPort()}`;
    const runs = memoryIo();
    expect(await runRunsCommand(["--worker", worker, "--json"], runs, {})).toBe(1);
    expect(oneJsonDocument(runs.stdout.join(""))).toMatchObject({ runs: [], exitCode: 1, error: expect.stringContaining(`cannot reach the Worker at ${worker}`) });
    const status = memoryIo();
    expect(await runStatusCommand(["r1", "--worker", worker, "--json"], status, {})).toBe(1);
    expect(oneJsonDocument(status.stdout.join(""))).toMatchObject({ exitCode: 1, error: expect.stringContaining(`cannot reach the Worker at ${worker}`) });
  });
});
