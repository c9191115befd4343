/**
 * The dev run's plan: the npm start run spec (valid for the Worker's RunSpec schema), a JSONL file read in Node and
 * sent inline (first usable rows, ids the Worker will assign, refused rows counted), the emulator's answer key, and
 * clear errors for a missing file, an empty file, an unknown function, or a function without its dataset.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseDevArgs } from "../../../src/cli/dev/options.ts";
import {
  answerKeyFor, buildDevPlan, fileDataset, flagsForKind, functionSwarms, generatedCountdownDataset, runSpecFor, sizeWarnings, splitFromPath,
} from "../../../src/cli/dev/plan.ts";
import { parseRunSpec } from "../../../src/scheduler/index.ts";
import { DatasetLoadError } from "../../../src/tasks/index.ts";
import { rolloutFunctions } from "../../../functions/index.ts";

const dir = mkdtempSync(join(tmpdir(), "ajet-dev-plan-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
function file(name: string, lines: string[]): string {
  const path = join(dir, name);
  writeFileSync(path, lines.join("\n"));
  return path;
}
const gsm8kRow = (q: string, gold: string) => JSON.stringify({ question: q, answer: `work\n#### ${gold}` });
const options = (argv: string[] = []) => parseDevArgs(argv)!;

describe("dev plan", () => {
  it("npm start: 48 generated Countdown tasks, 3 steps, fast status polls, a spec the Worker accepts", async () => {
    const plan = await buildDevPlan(options());
    expect(plan.run).toEqual({
      job: { batchSize: 8, numRepeat: 4, maxEnvWorker: 32 },
      datasets: [{ name: "countdown", kind: "countdown", generate: { count: 48, seed: 1 } }],
      function: "countdown",
      episodeType: "train",
      maxSteps: 3,
      seed: 1,
      tuning: { statusPollWaitingMs: 300, statusPollRollingMs: 500 },
    });
    expect(plan).toMatchObject({ swarmNames: ["default"], externalSwarms: null, episodesPerStep: 32, steps: 3, timeoutMs: 300_000, startEngine: true });
    expect(plan.datasets[0]!.tasks.map((t) => t.task_id).slice(0, 2)).toEqual(["countdown:gen-1:0", "countdown:gen-1:1"]);
    expect(plan.answerKey).toHaveLength(48);
    const spec = parseRunSpec(runSpecFor(plan, [{ name: "default", url: "http://127.0.0.1:10086" }]));
    expect(spec.success).toBe(true);
  });

  it("a function that declares sandbox: true (or --sandbox) gets the run's sandbox block with its defaults", async () => {
    const path = file("code.jsonl", [gsm8kRow("How many clips?", "72"), gsm8kRow("How many eggs?", "18")]);
    const plan = await buildDevPlan(options(["--function", "code-agent", "--dataset", path, "--batch-size", "2", "--steps", "1"]));
    expect(plan.run.sandbox).toEqual({});
    const spec = parseRunSpec(runSpecFor(plan, [{ name: "default", url: "http://127.0.0.1:10086" }]));
    expect(spec.success && spec.data.sandbox).toMatchObject({ enabled: true, instanceType: "lite", createsPerSecond: 10 });
    expect((await buildDevPlan(options())).run).not.toHaveProperty("sandbox");
    expect((await buildDevPlan(options(["--sandbox"]))).run.sandbox).toEqual({});
  });

  it("a real server keeps the default polls; an eval run has no maxSteps and loads one batch per step", async () => {
    const external = await buildDevPlan(options(["--swarm-url", "http://gpu:10086"]));
    expect(external.run.tuning).toEqual({});
    expect(external.externalSwarms).toEqual([{ name: "default", url: "http://gpu:10086" }]);
    const evalPlan = await buildDevPlan(options(["--episode-type", "eval", "--batch-size", "4", "--steps", "2"]));
    expect(evalPlan.run).not.toHaveProperty("maxSteps");
    expect(evalPlan.steps).toBeNull();
    expect(evalPlan.datasets[0]!.entry).toMatchObject({ generate: { count: 8, seed: 1 } });
    expect(evalPlan.totalEpisodes).toBe(8 * 4);
  });

  it("an eval run on a function's demo tasks counts every epoch in its episode target", async () => {
    const plan = await buildDevPlan(options(["--function", "academic-translation", "--episode-type", "eval"]));
    const tasks = plan.datasets[0]!.tasks.length;
    expect(plan.run.epochs).toBeGreaterThan(1);
    expect(plan.totalEpisodes).toBe(tasks * plan.run.epochs! * plan.job.numRepeat);
  });

  it("reads the first usable rows of a JSONL file and sends them inline, split named after the file", async () => {
    const path = file("test.jsonl", [gsm8kRow("What is 2+3?", "5"), "{not json", JSON.stringify({ question: "no gold", answer: "none" }), "", gsm8kRow("What is 4*4?", "16"), gsm8kRow("Unused?", "1")]);
    const d = await fileDataset({ path, kind: "gsm8k", limit: 2 });
    expect(d.entry).toEqual({ name: "gsm8k", kind: "gsm8k", split: "test", tasks: [JSON.parse(gsm8kRow("What is 2+3?", "5")), JSON.parse(gsm8kRow("What is 4*4?", "16"))] });
    expect(d.tasks.map((t) => [t.task_id, t.main_query])).toEqual([["gsm8k:test:0", "What is 2+3?"], ["gsm8k:test:1", "What is 4*4?"]]);
    expect(d.label).toBe(`gsm8k:test: 2 tasks from ${path} (first usable of 5 rows, 2 refused)`);
    expect(d.warning).toMatch(new RegExp(`^warning: ${path}: 2 of 5 rows refused and skipped: line 2: invalid JSON: .*; line 3: .*gold`));
    expect(answerKeyFor(d.tasks)).toEqual([
      { match: "What is 2+3?", answer: "5", format: "boxed" },
      { match: "What is 4*4?", answer: "16", format: "boxed" },
    ]);
  });

  it("counts refused rows over the whole file (not only up to --limit) and names the first 3 with their lines", async () => {
    const lines = Array.from({ length: 20 }, (_, i) => (i % 4 === 3 ? JSON.stringify({ question: `Q${i}?`, answer: "no gold" }) : gsm8kRow(`Q${i}?`, String(i))));
    const path = file("refused.jsonl", lines);
    const d = await fileDataset({ path, kind: "gsm8k", limit: 2 });
    expect(d.tasks).toHaveLength(2);
    expect(d.label).toBe(`gsm8k:refused: 2 tasks from ${path} (first usable of 20 rows, 5 refused)`);
    expect(d.warning).toMatch(new RegExp(`^warning: ${path}: 5 of 20 rows refused and skipped: line 4: [^;]+; line 8: [^;]+; line 12: [^;]+; … 2 more$`));
    const clean = await fileDataset({ path: file("clean.jsonl", [gsm8kRow("A?", "1")]), kind: "gsm8k", limit: 2 });
    expect(clean.warning).toBeUndefined();
  });

  it("a file without a usable row: the error reports the file's true totals, not the first 3 rows", async () => {
    const path = file("countdown-rows.jsonl", Array.from({ length: 7 }, (_, i) => JSON.stringify({ target: i, nums: [1, 2] })));
    await expect(fileDataset({ path, kind: "gsm8k", limit: 4 })).rejects.toThrow(
      /^no usable gsm8k task in .*countdown-rows\.jsonl: gsm8k:countdown-rows: 0 accepted, 7 rejected \(line 1: [^;]+; line 2: [^;]+; line 3: [^;]+; … 4 more\); these rows look like Countdown \(target\/nums\): add --kind countdown$/,
    );
  });

  it("--dataset with --function math-agent: the plan sends 2 × batch × steps tasks by default", async () => {
    const path = file("many.jsonl", Array.from({ length: 30 }, (_, i) => gsm8kRow(`Question ${i}?`, String(i))));
    const plan = await buildDevPlan(options(["--dataset", path, "--function", "math-agent", "--batch-size", "4", "--steps", "2"]));
    expect(plan.datasets[0]!.tasks).toHaveLength(16);
    expect(plan.run.function).toBe("math-agent");
    expect(plan.answerKey).toHaveLength(16);
  });

  it("refuses a missing file, a file without a usable row, an unknown function and a function without its dataset", async () => {
    await expect(fileDataset({ path: join(dir, "absent.jsonl"), kind: "gsm8k", limit: 4 })).rejects.toThrow(/^cannot read dataset .*absent\.jsonl: no such file; give the path of a JSONL file, or a URL/);
    const wrongKind = file("wrong.jsonl", [JSON.stringify({ target: 10, nums: [5, 5] })]);
    const err = await fileDataset({ path: wrongKind, kind: "gsm8k", limit: 4 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatasetLoadError);
    expect((err as Error).message).toMatch(/^no usable gsm8k task in .*wrong\.jsonl: gsm8k:wrong: 0 accepted, 1 rejected \(line 1: missing or empty query.*; these rows look like Countdown \(target\/nums\): add --kind countdown$/);
    await expect(buildDevPlan(options(["--function", "nope"]))).rejects.toThrow(/^no rollout function "nope"; known: .*countdown.*math-agent/);
    await expect(buildDevPlan(options(["--function", "math-agent"]))).rejects.toThrow("function math-agent needs gsm8k tasks: give --dataset PATH.jsonl");
  });

  it("an empty dataset file says the file is empty (not a --kind problem)", async () => {
    const empty = file("empty.jsonl", []);
    await expect(fileDataset({ path: empty, kind: "gsm8k", limit: 4 })).rejects.toThrow(
      `cannot use dataset ${empty}: the file is empty; give a JSONL file with one task per line (--kind gsm8k reads GSM8K (question/answer) rows)`,
    );
    const blank = file("blank.jsonl", ["", "  ", ""]);
    await expect(fileDataset({ path: blank, kind: "countdown", limit: 4 })).rejects.toThrow(`cannot use dataset ${blank}: the file is empty`);
  });

  it("GSM8K rows loaded without --function (read as Countdown) say so and name the flag: add --function math-agent", async () => {
    const path = file("gsm8k-rows.jsonl", [gsm8kRow("What is 2+3?", "5"), gsm8kRow("What is 4*4?", "16")]);
    const err = await buildDevPlan(options(["--dataset", path])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatasetLoadError);
    expect((err as Error).message).toMatch(/^no usable countdown task in .*gsm8k-rows\.jsonl: countdown:gsm8k-rows: 0 accepted, 2 rejected \(line 1: /);
    expect((err as Error).message).toMatch(/; these rows look like GSM8K \(question\/answer\): add --function math-agent$/);
  });

  it("rows of another kind name the flags that read them: MATH rows, Countdown rows under math-agent, a custom function", async () => {
    const math = file("math-rows.jsonl", [JSON.stringify({ problem: "What is 2+3?", solution: "so \\boxed{5}" })]);
    await expect(buildDevPlan(options(["--dataset", math]))).rejects.toThrow(/these rows look like MATH \(problem\/solution\): add --function math-agent --kind math$/);
    const cd = file("cd-rows.jsonl", [JSON.stringify({ target: 10, nums: [5, 5] })]);
    await expect(buildDevPlan(options(["--dataset", cd, "--function", "math-agent"]))).rejects.toThrow(/these rows look like Countdown \(target\/nums\): add --function countdown$/);
    expect(flagsForKind("gsm8k", "my-agent")).toBe("--kind gsm8k");
    expect(flagsForKind("generic", "countdown")).toBe("--kind generic");
  });

  it("rows that look like no kind keep the totals and say which columns the kind reads", async () => {
    const odd = file("odd.jsonl", [JSON.stringify({ foo: 1 })]);
    await expect(fileDataset({ path: odd, kind: "gsm8k", limit: 4 })).rejects.toThrow(
      /0 accepted, 1 rejected \(line 1: .*\); --kind gsm8k reads GSM8K \(question\/answer\) rows: fix the rows, or give the --kind of the file's columns$/,
    );
  });

  it("warns for a training group of one and for sizes far beyond a swarm server's cap; the defaults warn nothing", async () => {
    expect((await buildDevPlan(options())).warnings).toEqual([]);
    expect((await buildDevPlan(options(["--num-repeat", "1"]))).warnings).toEqual([
      "warning: --num-repeat 1: a group of one episode has no advantage signal in GRPO (each reward is compared with its group's mean), so training learns nothing from it; use 2 or more (default 4)",
    ]);
    expect(sizeWarnings({ batchSize: 8, numRepeat: 1, maxEnvWorker: 8, episodeType: "eval" })).toEqual([]);
    expect((await buildDevPlan(options(["--num-repeat", "1000"]))).warnings).toEqual([
      "warning: --num-repeat 1000: one group of 1000 episodes is more than a swarm server's default cap of 128 episodes at once (max_env_worker), and the engine runs a whole group together; GRPO groups are usually 4–16: lower --num-repeat",
    ]);
    expect(sizeWarnings({ batchSize: 256, numRepeat: 8, maxEnvWorker: 2048, episodeType: "train" })).toEqual([
      "warning: batch size 256 × num-repeat 8 asks the engine for 2048 episode workers at once, far beyond a swarm server's default cap of 128 (max_env_worker); GRPO groups are usually 4–16: lower --num-repeat or --batch-size, or set --max-env-worker",
    ]);
    expect(sizeWarnings({ batchSize: 256, numRepeat: 8, maxEnvWorker: 128, episodeType: "train" })).toEqual([]);
  });

  it("names the split after the file when it is a valid id part", () => {
    expect(splitFromPath("../shared/data/gsm8k/test.jsonl")).toBe("test");
    expect(splitFromPath("train-first-2000.jsonl")).toBe("train-first-2000");
    expect(splitFromPath("/data/my file.jsonl")).toBe("train");
  });

  it("answer keys: Countdown puzzles as they are, golds as boxed answers, tasks without either skipped", () => {
    const countdown = generatedCountdownDataset({ name: "cd", count: 1, seed: 5, weight: 0.5 });
    expect(countdown.entry).toEqual({ name: "cd", kind: "countdown", generate: { count: 1, seed: 5 }, weight: 0.5 });
    const meta = countdown.tasks[0]!.metadata as { target: number; nums: number[]; solution: string };
    expect(answerKeyFor([...countdown.tasks, { ...countdown.tasks[0]!, metadata: {} }])).toEqual([{ target: meta.target, nums: meta.nums, solution: meta.solution }]);
  });

  it("knows the swarms of the shipped functions", () => {
    expect(functionSwarms("countdown", rolloutFunctions)).toEqual(["default"]);
    expect(functionSwarms("math-agent", rolloutFunctions)).toEqual(["default"]);
  });

  it("--dataset URL: the run spec names the URL for the Worker to read (no rows inline, no eval total known here)", async () => {
    const plan = await buildDevPlan(options(["--dataset", "https://h.example/data/test.jsonl?v=2", "--function", "math-agent"]));
    expect(plan.run.datasets).toEqual([{ name: "gsm8k", kind: "gsm8k", split: "test", url: "https://h.example/data/test.jsonl?v=2" }]);
    expect(plan.datasets[0]!.tasks).toEqual([]);
    expect(plan.totalEpisodes).toBeUndefined();
    expect(parseRunSpec(runSpecFor(plan, [{ name: "default", url: "http://127.0.0.1:1" }])).success).toBe(true);
    const parquet = await buildDevPlan(options(["--dataset", "r2://DATASETS/cd/train.parquet"]));
    expect(parquet.run.datasets).toEqual([{ name: "countdown", kind: "countdown", split: "train", url: "r2://DATASETS/cd/train.parquet" }]);
  });
});
