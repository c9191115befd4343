/**
 * The CLI on commander: `--version` prints the package's version; a negative number is read as a flag's value and
 * gets our own message; a mistyped flag or command gets a suggestion; `--dataset FILE[:WEIGHT]` repeats, every
 * dataset reaches the run spec with its weight and throttle ratio; `run` takes `--worker` and the token from
 * `--token` or `AJET_API_TOKEN`; `--spec` errors name the file, the line and the dotted path.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CliError } from "../../../src/cli/command.ts";
import { runRunCommand } from "../../../src/cli/commands/run.ts";
import { parseDevArgs, parseRunArgs, splitDatasetArg } from "../../../src/cli/dev/options.ts";
import { memoryIo } from "../../../src/cli/dev/output.ts";
import { buildDevPlan } from "../../../src/cli/dev/plan.ts";
import { devSpecDefaults, readSpecFile, SpecFileError, specPlan } from "../../../src/cli/dev/spec-file.ts";
import { runMain } from "../../support/cli.ts";

const dir = mkdtempSync(join(tmpdir(), "ajet-cli-flags-"));
const countdownRows = (n: number, offset = 0) =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ target: 10 + i + offset, nums: [i + offset + 1, 9, 1], solution: `${i + offset + 1}+9` })).join("\n");
const fileA = join(dir, "a.jsonl");
const fileB = join(dir, "b.jsonl");
writeFileSync(fileA, countdownRows(20));
writeFileSync(fileB, countdownRows(20, 100));

describe("ajet-edge --version and help", () => {
  it("--version and -V print the package.json version", async () => {
    const version = (JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string }).version;
    for (const flag of ["--version", "-V"]) {
      const { code, logs } = await runMain([flag]);
      expect(code).toBe(0);
      expect(logs).toEqual([version]);
    }
    for (const command of ["dev", "run", "status", "init", "new"]) {
      const { code, logs } = await runMain([command, "--version"]);
      expect([command, code, logs]).toEqual([command, 0, [version]]);
    }
  });

  it("init --help prints its usage (it printed nothing)", async () => {
    const { code, logs } = await runMain(["init", "--help"]);
    expect(code).toBe(0);
    expect(logs.join("\n")).toMatch(/Usage: ajet-edge init \[options\] \[dir\][\s\S]*--from <spec>[\s\S]*--function <name>/);
  });

  it("--help lists every command with its summary", async () => {
    const { code, logs } = await runMain(["--help"]);
    expect(code).toBe(0);
    for (const name of ["dev", "run", "runs", "status <RUN>", "stop <RUN>", "emulator", "sandbox-server", "new <NAME>"]) expect(logs.join("\n")).toContain(`  ${name} `);
  });

  it("`help run` shows run's own generated options", async () => {
    const logs: string[] = [];
    const io = { ...memoryIo(), out: (t: string) => void logs.push(t) };
    expect(await runRunCommand(["--help"], io, {})).toBe(0);
    expect(logs.join("")).toMatch(/Usage: ajet-edge run \[options\][\s\S]*--worker <url>[\s\S]*--token <token>[\s\S]*--swarm-url <url>/);
  });
});

describe("suggestions and negative numbers", () => {
  it("a mistyped flag names the flag it looks like", async () => {
    const { code, errors } = await runMain(["dev", "--stpes", "2"]);
    expect(code).toBe(2);
    expect(errors).toEqual(["ajet-edge dev: unknown option '--stpes'\n(Did you mean --steps?)\nrun 'ajet-edge dev --help' for the options"]);
  });

  it("a mistyped command names the command it looks like", async () => {
    const { code, errors } = await runMain(["statsu"]);
    expect(code).toBe(2);
    expect(errors[0]).toContain("unknown command 'statsu'");
    expect(errors[0]).toContain("(Did you mean status?)");
  });

  it.each([
    [["--steps", "-1"], "--steps must be ≥ 1, e.g. 3"],
    [["--batch-size", "-8"], "--batch-size must be ≥ 1, e.g. 8"],
    [["--timeout", "-5"], "--timeout must be > 0 seconds, e.g. 300"],
  ])("%j is read as a value and gets our own message", async (argv, message) => {
    expect(() => parseDevArgs(argv)).toThrow(message);
    const { code, errors } = await runMain(["dev", ...argv]);
    expect(code).toBe(2);
    expect(errors).toEqual([`ajet-edge dev: ${message}\nrun 'ajet-edge dev --help' for the options`]);
  });
});

describe("--dataset FILE[:WEIGHT] and --throttle-ratio NAME=R", () => {
  it("splits a trailing weight, never a URL's port or a drive letter", () => {
    expect(splitDatasetArg("gsm8k.jsonl:2")).toEqual({ source: "gsm8k.jsonl", weight: "2" });
    expect(splitDatasetArg("data/x.jsonl")).toEqual({ source: "data/x.jsonl" });
    expect(splitDatasetArg("http://host:8080")).toEqual({ source: "http://host:8080" });
    expect(splitDatasetArg("https://host:8080/d.jsonl:0.5")).toEqual({ source: "https://host:8080/d.jsonl", weight: "0.5" });
    expect(splitDatasetArg("C:d.jsonl")).toEqual({ source: "C:d.jsonl" });
  });

  it("two --dataset flags make two run-spec datasets with their weights and throttle ratio (none dropped)", async () => {
    const options = parseDevArgs(["--dataset", `${fileA}:3`, "--dataset", fileB, "--throttle-ratio", "countdown-2=0.25", "--limit", "16"])!;
    expect(options.datasets).toEqual([
      { source: fileA, url: false, weight: 3, name: "countdown" },
      { source: fileB, url: false, name: "countdown-2", throttleRatio: 0.25 },
    ]);
    const plan = await buildDevPlan(options);
    expect(plan.run.datasets.map((d) => [d.name, d.weight, d.throttleRatio, (d.tasks as unknown[]).length])).toEqual([
      ["countdown", 3, undefined, 16],
      ["countdown-2", undefined, 0.25, 16],
    ]);
    expect(plan.datasets[0]!.label).toContain("weight 3");
  });

  it("a file and a URL mix: the file is sent inline, the URL is left to the Worker, both with their weights", async () => {
    const plan = await buildDevPlan(parseDevArgs(["--dataset", `${fileA}:2`, "--dataset", "https://data.example/more.jsonl:1", "--limit", "8"])!);
    expect(plan.run.datasets).toMatchObject([
      { name: "countdown", weight: 2, tasks: expect.any(Array) },
      { name: "countdown-2", weight: 1, url: "https://data.example/more.jsonl" },
    ]);
    expect(plan.run.datasets[1]).not.toHaveProperty("tasks");
  });

  it.each([
    [["--dataset", "a.jsonl:0"], "--dataset a.jsonl:0: the weight after ':' must be a number > 0"],
    [["--dataset", "a.jsonl:heavy"], "--dataset a.jsonl:heavy: the weight after ':' must be a number > 0"],
    [["--dataset", "a.jsonl", "--throttle-ratio", "gsm8k=0.5"], "--throttle-ratio gsm8k=0.5: no dataset named gsm8k; the datasets are countdown (a.jsonl)"],
    [["--dataset", "a.jsonl", "--throttle-ratio", "countdown=3"], "--throttle-ratio must be NAME=R with R in (0, 2]"],
    [["--throttle-ratio", "countdown=0.5"], "--throttle-ratio applies to --dataset"],
  ])("refuses %j", (argv, message) => {
    expect(() => parseDevArgs(argv)).toThrow(CliError);
    expect(() => parseDevArgs(argv)).toThrow(message);
  });
});

describe("ajet-edge run flags", () => {
  it("takes --worker and the token from --token, else AJET_API_TOKEN", () => {
    const base = ["--worker", "https://ajet.example.workers.dev/", "--swarm-url", "http://gpu:10086"];
    expect(parseRunArgs(base, { AJET_API_TOKEN: "from-env" })).toMatchObject({ workerUrl: "https://ajet.example.workers.dev", token: "from-env", swarms: [{ name: "default", url: "http://gpu:10086" }] });
    expect(parseRunArgs([...base, "--token", "from-flag"], { AJET_API_TOKEN: "from-env" })).toMatchObject({ token: "from-flag" });
    expect(parseRunArgs(base, {})).not.toHaveProperty("token");
  });

  it("refuses a placeholder token (the one of .dev.vars.example, or an obvious stand-in) with one line, never echoing it", () => {
    const base = ["--worker", "http://127.0.0.1:8787", "--swarm-url", "http://gpu:10086"];
    const refused = (argv: string[], env: NodeJS.ProcessEnv) => {
      try {
        parseRunArgs(argv, env);
      } catch (err) {
        return err as CliError;
      }
      throw new Error("accepted");
    };
    const fromEnv = refused(base, { AJET_API_TOKEN: "replace-with-a-long-random-token" });
    expect(fromEnv.message).toBe(
      "AJET_API_TOKEN is not a real token (it is the placeholder of .dev.vars.example); give the token the Worker was given (wrangler secret put AJET_API_TOKEN, or .dev.vars for wrangler dev), made with e.g. `openssl rand -hex 32`",
    );
    expect(fromEnv.code).toBe(2);
    const fromFlag = refused([...base, "--token", "<your-token>"], {});
    expect(fromFlag.message).toMatch(/^--token is not a real token \(it is a placeholder in angle brackets/);
    expect(fromFlag.message).not.toContain("<your-token>");
    expect(fromFlag.message.split("\n")).toHaveLength(1);
  });

  it.each([
    [["--swarm-url", "http://gpu:10086"], "required option '--worker <url>' not specified"],
    [["--worker", "ftp://x", "--swarm-url", "http://gpu:10086"], "--worker must be an http(s) URL, e.g. http://127.0.0.1:8787"],
    [["--worker", "http://127.0.0.1:8787"], "the Worker needs a swarm server: give --swarm-url"],
    [["--worker", "http://127.0.0.1:8787", "--spec", "run.yaml", "--steps", "2", "--batch-size", "4"], "--spec gives the whole run: set maxSteps, job.batchSize in run.yaml instead of --steps, --batch-size"],
  ])("refuses %j", (argv, message) => {
    expect(() => parseRunArgs(argv, {})).toThrow(message);
  });
});

describe("--spec FILE", () => {
  const write = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it("reads a YAML spec, inlines a dataset path relative to the file, and validates it as POST /runs does", async () => {
    const path = write("ok.yaml", ["swarms:", "  - url: http://127.0.0.1:10086", "function: countdown", "maxSteps: 2", "job: { batchSize: 4, numRepeat: 2 }", "datasets:", "  - { name: puzzles, kind: countdown, path: a.jsonl, weight: 2 }", ""].join("\n"));
    const file = await readSpecFile(path);
    expect(file.parsed.maxSteps).toBe(2);
    expect(file.parsed.batchSize).toBe(4);
    expect(file.body.datasets[0]).toMatchObject({ name: "puzzles", kind: "countdown", weight: 2, split: "a" });
    expect((file.body.datasets[0] as { tasks: unknown[] }).tasks).toHaveLength(20);
    expect(file.body.datasets[0]).not.toHaveProperty("path");
  });

  it("each schema problem names the file, its line and the dotted path", async () => {
    const path = write("bad.yaml", ["swarms:", "  - url: http://127.0.0.1:10086", "function: countdown", "datasets:", "  - name: puzzles", "    kind: countdown", "    generate: { count: 10, seed: 1 }", "    weight: -1", "maxSteps: 0", ""].join("\n"));
    const err = await readSpecFile(path).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SpecFileError);
    const message = (err as Error).message;
    expect(message).toContain(`${path} is not a valid run spec (the schema of POST /runs):`);
    expect(message).toContain(`  ${path}:8: datasets.0.weight: weight must be > 0`);
    expect(message).toContain(`  ${path}:9: maxSteps: `);
  });

  it("a JSON spec is read too, with lines", async () => {
    const path = write("bad.json", JSON.stringify({ swarms: [{ url: "http://127.0.0.1:10086" }], function: "countdown", datasets: [{ name: "p", kind: "countdown", generate: { count: 8, seed: 1 } }], episodeType: "practice" }, null, 2));
    const message = ((await readSpecFile(path).catch((e: unknown) => e)) as Error).message;
    expect(message).toMatch(new RegExp(`${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:\\d+: episodeType: episodeType must be "train" or "eval"`));
  });

  it.each([
    ["missing.yaml", null, "--spec MISSING: no such file"],
    ["list.yaml", "- 1\n- 2\n", "a run spec is an object with swarms, datasets, function, job …; got a list"],
    ["broken.yaml", "swarms: [\n", "broken.yaml:2:1: not valid YAML or JSON"],
    ["tab.yaml", "function: countdown\nmaxSteps: 2\njob:\n  batchSize: 4\n numRepeat: 2\n", "tab.yaml:5:1: not valid YAML or JSON"],
    ["json.json", '{"function": "countdown",\n "maxSteps": 2,,\n}', "json.json:2:16: not valid YAML or JSON"],
    ["nofile.yaml", "swarms: [{url: 'http://127.0.0.1:1'}]\nfunction: countdown\ndatasets: [{name: x, kind: countdown, path: nope.jsonl}]\n", "datasets.0.path: "],
  ])("%s: one clear message (a syntax error names FILE:LINE:COLUMN)", async (name, text, message) => {
    const path = text === null ? join(dir, name) : write(name, text);
    const err = (await readSpecFile(path).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(SpecFileError);
    expect(err.message).toContain(message.replace("MISSING", path));
  });

  it("dev fills what dev supplies: a spec without swarms and datasets gets the function's swarms and dev's tasks", async () => {
    const path = write("bare.yaml", ["function: countdown", "maxSteps: 2", "job: { batchSize: 4, numRepeat: 2 }", ""].join("\n"));
    await expect(readSpecFile(path)).rejects.toThrow(/swarms: /); // `run` has no defaults: the Worker needs them
    const file = await readSpecFile(path, undefined, devSpecDefaults());
    expect(file.filled).toEqual(["swarms", "datasets"]);
    expect(file.body.swarms).toEqual([{ name: "default", url: "http://127.0.0.1:10086" }]);
    // as `ajet-edge dev --steps 2 --batch-size 4` makes them: 2 × batch × steps generated Countdown tasks
    expect(file.body.datasets).toEqual([{ name: "countdown", kind: "countdown", generate: { count: 16, seed: 1 } }]);
    expect(file.datasets[0]!.tasks).toHaveLength(16);
    const plan = specPlan(file, { swarms: [], timeoutSeconds: 60, startEngine: true }, true);
    expect(plan.answerKey).toHaveLength(16);
    expect(plan.swarmNames).toEqual(["default"]);

    // a function with demo tasks on two swarms: both swarms and its demo set (its answer key too)
    const demo = write("demo.yaml", "function: academic-translation\n");
    const two = await readSpecFile(demo, undefined, devSpecDefaults());
    expect(two.body.swarms.map((s) => s.name)).toEqual(["translator", "detector"]);
    expect(two.body.datasets[0]).toMatchObject({ name: "academic-translation-demo", kind: "generic" });
    expect(specPlan(two, { swarms: [], timeoutSeconds: 60, startEngine: true }, true).answerKey.length).toBeGreaterThan(0);

    // the file's own swarms and datasets are kept; an unknown function is one line naming the file
    const own = await readSpecFile(write("own.yaml", "swarms: [{name: a, url: 'http://127.0.0.1:1'}]\nfunction: countdown\n"), undefined, devSpecDefaults());
    expect(own.filled).toEqual(["datasets"]);
    expect(own.body.swarms).toEqual([{ name: "a", url: "http://127.0.0.1:1" }]);
    await expect(readSpecFile(write("nope.yaml", "function: nope\n"), undefined, devSpecDefaults())).rejects.toThrow(/nope\.yaml: no rollout function "nope"; known: /);
  });
});
