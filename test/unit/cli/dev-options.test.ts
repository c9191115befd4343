/**
 * `ajet-edge dev` arguments: the `npm start` defaults, every option, the function ↔ dataset kind inference, and a
 * usage error naming the flag for each bad input.
 */
import { describe, expect, it } from "vitest";
import { parseDevArgs } from "../../../src/cli/dev/options.ts";
import { CliError } from "../../../src/cli/command.ts";
import { runMain } from "../../support/cli.ts";

describe("ajet-edge dev arguments", () => {
  it("defaults to the npm start run: Countdown, batch 8 × num_repeat 4, 3 steps, the local emulator", () => {
    expect(parseDevArgs([])).toEqual({
      function: "countdown", datasets: [], kind: "countdown", steps: 3, batchSize: 8, numRepeat: 4, maxEnvWorker: 32, seed: 1,
      episodeType: "train", swarms: [], startEngine: true, timeoutSeconds: 300, requestTimeoutSeconds: 30, json: false, sandbox: false, logLevel: "warn",
    });
    expect(parseDevArgs(["--help"])).toBeNull();
    expect(parseDevArgs(["-h"])).toBeNull();
  });

  it("parses every option", () => {
    expect(
      parseDevArgs([
        "--dataset", "d.jsonl", "--kind", "math", "--function", "my-fn", "--limit", "16", "--steps", "2",
        "--batch-size", "4", "--num-repeat", "2", "--max-env-worker", "64", "--seed", "9", "--episode-type", "eval",
        "--swarm-url", "http://gpu-box:10086/", "--no-start-engine", "--timeout", "90", "--json", "--log-level", "error", "--sandbox",
      ]),
    ).toEqual({
      function: "my-fn", datasets: [{ source: "d.jsonl", url: false, name: "math" }], kind: "math", limit: 16, steps: 2, batchSize: 4, numRepeat: 2,
      maxEnvWorker: 64, seed: 9, episodeType: "eval", swarms: [{ name: "default", url: "http://gpu-box:10086" }],
      startEngine: false, timeoutSeconds: 90, requestTimeoutSeconds: 30, json: true, sandbox: true, logLevel: "error",
    });
  });

  it("infers the dataset kind from the function and the function from the kind", () => {
    expect(parseDevArgs(["--dataset", "g.jsonl", "--function", "math-agent"])).toMatchObject({ function: "math-agent", kind: "gsm8k" });
    expect(parseDevArgs(["--dataset", "g.jsonl", "--kind", "gsm8k"])).toMatchObject({ function: "math-agent", kind: "gsm8k" });
    expect(parseDevArgs(["--dataset", "c.jsonl"])).toMatchObject({ function: "countdown", kind: "countdown" });
    // a URL is the Worker's to read: kept apart from a path the CLI reads and inlines
    expect(parseDevArgs(["--dataset", "r2://DATASETS/gsm8k/train.parquet", "--kind", "gsm8k"])).toMatchObject({ datasets: [{ source: "r2://DATASETS/gsm8k/train.parquet", url: true }], kind: "gsm8k" });
    expect(parseDevArgs(["--dataset", "https://h.example/t.jsonl"])?.datasets).toEqual([{ source: "https://h.example/t.jsonl", url: true, name: "countdown" }]);
    expect(parseDevArgs(["--dataset", "x.jsonl", "--function", "my-agent"])).toMatchObject({ function: "my-agent", kind: "generic" });
    expect(parseDevArgs(["--dataset", "g.jsonl", "--function", "code-agent"])).toMatchObject({ function: "code-agent", kind: "gsm8k", sandbox: false });
  });

  it("--answer-readers takes a comma-separated list and puts it on every dataset of the run", async () => {
    expect(parseDevArgs(["--answer-readers", "boxed, hash,final-number"])?.answerReaders).toEqual(["boxed", "hash", "final-number"]);
    expect(parseDevArgs([])).not.toHaveProperty("answerReaders");
    const { buildDevPlan } = await import("../../../src/cli/dev/plan.ts");
    const plan = await buildDevPlan(parseDevArgs(["--answer-readers", "boxed,hash"])!);
    expect(plan.run.datasets[0]).toMatchObject({ answerReaders: ["boxed", "hash"] });
  });

  it("takes several named swarm servers", () => {
    expect(parseDevArgs(["--swarm", "policy=http://127.0.0.1:10086", "--swarm", "judge=https://judge.example/ajet/"])?.swarms).toEqual([
      { name: "policy", url: "http://127.0.0.1:10086" },
      { name: "judge", url: "https://judge.example/ajet" },
    ]);
  });

  it.each([
    [["--steps", "0"], "--steps must be ≥ 1, e.g. 3"],
    [["--batch-size", "eight"], "--batch-size must be a number, e.g. 8"],
    [["--num-repeat", "2.5"], "--num-repeat must be a whole number, e.g. 4"],
    [["--kind", "csv"], "--kind must be one of gsm8k, math, countdown, generic"],
    [["--episode-type", "test"], "--episode-type must be train or eval"],
    [["--timeout", "0"], "--timeout must be > 0 seconds, e.g. 300"],
    [["--seed=-1"], "--seed must be ≥ 0, e.g. 1"],
    [["--seed", "-1"], "--seed must be ≥ 0, e.g. 1"],
    [["--steps", "-1"], "--steps must be ≥ 1, e.g. 3"],
    [["--swarm-url", "ftp://x"], "--swarm-url must be an http(s) URL, e.g. http://127.0.0.1:10086"],
    [["--swarm", "no-equals-sign"], "--swarm must be NAME=URL"],
    [["--swarm", "judge=nope"], "--swarm URL must be an http(s) URL"],
    [["--swarm-url", "http://a:1", "--swarm", "b=http://b:2"], "give either --swarm-url (one server) or --swarm NAME=URL (several), not both"],
    [["--no-start-engine"], "--no-start-engine needs --swarm-url"],
    [["--limit", "5"], "--limit applies to --dataset"],
    [["--dataset", "https://h.example/x.jsonl", "--limit", "5"], "--limit applies to a --dataset file; the Worker reads a dataset URL whole"],
    [["--dataset", "ftp://h.example/x.jsonl"], "--dataset ftp://h.example/x.jsonl: url must be an http(s) URL or r2://BUCKET/KEY"],
    [["--dataset", "r2://DATASETS/"], "--dataset r2://DATASETS/: url must be an http(s) URL or r2://BUCKET/KEY"],
    [["--function", "Bad_Name"], "--function must be a function name like math-agent"],
    [["--bogus"], "unknown option '--bogus'"],
    [["--answer-readers", "boxed,guess"], '--answer-readers: unknown reader "guess"; give a comma-separated list of boxed, hash, final-answer, final-number'],
    [["--answer-readers", ","], "--answer-readers needs at least one reader, e.g. boxed,hash"],
  ])("refuses %j", (argv, message) => {
    expect(() => parseDevArgs(argv)).toThrow(CliError);
    expect(() => parseDevArgs(argv)).toThrow(message);
  });

  it("main() prints the message and a pointer to --help (not the whole usage) after a usage error and returns 2", async () => {
    const { code, errors } = await runMain(["dev", "--steps", "0"]);
    expect(code).toBe(2);
    expect(errors).toEqual(["ajet-edge dev: --steps must be ≥ 1, e.g. 3\nrun 'ajet-edge dev --help' for the options"]);
  });

  it("main() names the commands after an unknown one and returns 2", async () => {
    const { code, errors } = await runMain(["deploy"]);
    expect(code).toBe(2);
    expect(errors).toEqual(["ajet-edge: unknown command 'deploy'; commands: dev, run, runs, status, metrics, rescore, stop, sync-code, dashboard, emulator, sandbox-server, init, new\nrun 'ajet-edge --help' for the commands"]);
  });
});
