/**
 * @module cli/dev/plan — what one `ajet-edge dev` run will do, decided before anything starts: the datasets (the
 * generated Countdown tasks, or a JSONL file read in Node and sent inline — the Worker cannot read paths), the
 * emulator's answer key, the job, the `POST /runs` body (without the swarm URLs, known only once servers run) and
 * the progress targets. Pure except for reading the dataset file.
 */
import { rolloutFunctions } from "../../../functions/index.ts";
import { swarmsOf, type RolloutFunctionDemo } from "../../sdk/contract.ts";
import type { AnswerKeyInput, PolicyOptions } from "../../emulator/index.ts";
import { readUtf8File } from "../../node/dataset-file.ts";
import type { Task } from "../../protocol/index.ts";
import type { RunRequestInput } from "../../edge/run-request.ts";
import {
  DatasetLoadError, formatLoadReport, formatRejectedRows, generateCountdownTasks, parseJsonlRows, tasksFromObjects, tasksFromRows,
  TaskIdPart, type DatasetKind,
} from "../../tasks/index.ts";
import type { DevOptions, SwarmArg } from "./options.ts";

/** One dataset of a dev run: its run-spec entry, its tasks as the Worker will load them, and a label to print. */
export interface DevDataset {
  /** a `datasets[]` entry of the run spec (`name`, `kind`, `generate` | `tasks`, `weight`) */
  entry: RunRequestInput["datasets"][number];
  tasks: Task[];
  /** e.g. `countdown: 48 generated tasks (seed 1)` */
  label: string;
  /** one line printed before the run, e.g. the rows of `--dataset` that were refused (line and reason) */
  warning?: string;
}

/** The plan of one dev run. Durations are milliseconds. */
export interface DevPlan {
  functionName: string;
  /** swarm names the function needs (`["default"]` for single-swarm functions) */
  swarmNames: string[];
  /** servers from the command line, or null: start one emulator per swarm name */
  externalSwarms: SwarmArg[] | null;
  /** the run's engine policy: the Worker syncs the job and starts an OFFLINE engine (`start: "if-offline"`), or waits (`"never"`, `--no-start-engine`) */
  startEngine: boolean;
  job: { batchSize: number; numRepeat: number; maxEnvWorker: number };
  /** the `POST /runs` body without `swarms` */
  run: Omit<RunRequestInput, "swarms">;
  datasets: DevDataset[];
  /** rows for the emulator's simulated policy (Countdown puzzles, or question → gold) */
  answerKey: AnswerKeyInput[];
  /** episodes one training step needs: batchSize × numRepeat */
  episodesPerStep: number;
  /** episodes the run's tasks make over all epochs: tasks × epochs × numRepeat (an eval run's whole target) */
  totalEpisodes: number;
  /** training steps to run; null for an eval run */
  steps: number | null;
  timeoutMs: number;
  seed: number;
  /** simulated-policy knobs for the emulator (default: the emulator's) */
  policy?: Partial<PolicyOptions>;
}

/** The default number of tasks to load: twice what the run consumes (room for replacement groups, BC-32). */
export function defaultTaskCount(o: Pick<DevOptions, "batchSize" | "steps" | "episodeType">): number {
  return o.episodeType === "eval" ? o.batchSize * o.steps : 2 * o.batchSize * o.steps;
}

/** A generated Countdown source (the `npm start` default); ids `<name>:gen-<seed>:<i>`. */
export function generatedCountdownDataset(o: { name?: string; count: number; seed: number; weight?: number }): DevDataset {
  const name = o.name ?? "countdown";
  const tasks = generateCountdownTasks({ name, count: o.count, seed: o.seed });
  return {
    entry: { name, kind: "countdown", generate: { count: o.count, seed: o.seed }, ...(o.weight !== undefined ? { weight: o.weight } : {}) },
    tasks,
    label: `${name}: ${o.count} generated Countdown tasks (seed ${o.seed})`,
  };
}

/** A function's own demo tasks (`RolloutFunction.demo`) as an inline dataset named `<function>-demo`. */
export function demoDataset(functionName: string, demo: RolloutFunctionDemo): DevDataset {
  const name = `${functionName}-demo`;
  const rows = demo.rows.map((r) => ({ ...r }));
  const loaded = tasksFromObjects(rows, { name, kind: demo.kind, split: "train" });
  return {
    entry: { name, kind: demo.kind, split: "train", tasks: rows },
    tasks: loaded.tasks,
    label: `${name}: the function's ${loaded.tasks.length} demo tasks`,
  };
}

/** The split of a file-based dataset: the file's base name when it is a valid id part (`test.jsonl` → `test`). */
export function splitFromPath(path: string): string {
  const base = path.split(/[\\/]/).pop()!.replace(/\.jsonl$/i, "");
  return TaskIdPart.safeParse(base).success ? base : "train";
}

/** How many refused rows a dataset warning or error shows (line and reason each). */
export const REFUSED_ROWS_SHOWN = 3;

/**
 * The first `limit` usable rows of a JSONL file, as inline `tasks` of a run-spec entry named after the kind. Every
 * row is checked (so the counts are the file's); refused rows are skipped, and the first few are named in the
 * dataset's `warning` (line and reason), so the Worker loads exactly the tasks shown here.
 * @throws DatasetLoadError naming the path when it cannot be read, is not UTF-8, or has no usable row (with the
 *   file's accepted / rejected totals and the first refused lines)
 */
export async function fileDataset(o: { path: string; kind: DatasetKind; limit: number; name?: string; weight?: number }): Promise<DevDataset> {
  const name = o.name ?? o.kind;
  const split = splitFromPath(o.path);
  const load = { name, kind: o.kind, split };
  const { rows, rejected } = parseJsonlRows(await readUtf8File(o.path));
  const all = tasksFromRows(rows, load, rejected).report;
  if (all.accepted === 0) {
    throw new DatasetLoadError(`no usable ${o.kind} task in ${o.path}: ${formatLoadReport(all, REFUSED_ROWS_SHOWN)}; check --kind`);
  }
  const refusedLines = new Set(all.rejected.map((r) => r.line));
  const picked = rows.filter((r) => !refusedLines.has(r.line)).slice(0, o.limit).map((r) => r.value);
  const loaded = tasksFromObjects(picked, load);
  const lines = rows.length + rejected.length;
  const refused = all.rejected.length;
  return {
    entry: { name, kind: o.kind, split, tasks: picked, ...(o.weight !== undefined ? { weight: o.weight } : {}) },
    tasks: loaded.tasks,
    label: `${name}:${split}: ${loaded.tasks.length} tasks from ${o.path} (first usable of ${lines} rows${refused ? `, ${refused} refused` : ""})`,
    ...(refused ? { warning: `warning: ${o.path}: ${refused} of ${lines} rows refused and skipped: ${formatRejectedRows(all.rejected, REFUSED_ROWS_SHOWN)}` } : {}),
  };
}

/**
 * Answer key rows the simulated policy needs to answer these tasks: Countdown puzzles (`{target, nums, solution}`)
 * as they are; any task with a `metadata.gold` as `{match: main_query, answer: gold, format: "boxed"}`.
 */
export function answerKeyFor(tasks: readonly Task[]): AnswerKeyInput[] {
  const rows: AnswerKeyInput[] = [];
  for (const t of tasks) {
    const { target, nums, solution, gold } = t.metadata as Record<string, unknown>;
    if (typeof target === "number" && Array.isArray(nums)) {
      rows.push({ target, nums: nums as number[], ...(typeof solution === "string" ? { solution } : {}) });
    } else if ((typeof gold === "string" && gold !== "") || typeof gold === "number") {
      if (t.main_query.trim()) rows.push({ match: t.main_query, answer: String(gold), format: "boxed" });
    }
  }
  return rows;
}

/** Swarm names a registered function needs. @throws Error listing the known functions when the name is unknown */
export function functionSwarms(name: string): string[] {
  const fn = rolloutFunctions[name];
  if (!fn) throw new Error(`no rollout function "${name}"; known: ${Object.keys(rolloutFunctions).join(", ")} (add one with \`ajet-edge new NAME\`)`);
  return [...swarmsOf(fn)];
}

/**
 * Decides the run from the options. `datasets` replaces the option-derived dataset (tests mix several sources).
 * @throws DatasetLoadError for an unreadable or empty `--dataset`; Error for an unknown function or a swarm the
 *   function needs that `--swarm` does not name
 */
export async function buildDevPlan(options: DevOptions, extra: { datasets?: DevDataset[]; policy?: Partial<PolicyOptions> } = {}): Promise<DevPlan> {
  const swarmNames = functionSwarms(options.function);
  const external = options.swarms.length ? options.swarms : null;
  const missing = external ? swarmNames.filter((n) => !external.some((s) => s.name === n)) : [];
  if (missing.length && !(swarmNames.length === 1 && external?.length === 1)) {
    throw new Error(`function ${options.function} needs swarms ${swarmNames.join(", ")}; give --swarm NAME=URL for ${missing.join(", ")}`);
  }
  const demo = rolloutFunctions[options.function]?.demo;
  const useDemo = !options.datasetPath && !extra.datasets && options.kind !== "countdown" && demo !== undefined;
  if (!options.datasetPath && !extra.datasets && options.kind !== "countdown" && !useDemo) {
    throw new Error(`function ${options.function} needs ${options.kind} tasks: give --dataset PATH.jsonl (the built-in tasks are generated Countdown puzzles)`);
  }
  const count = options.limit ?? defaultTaskCount(options);
  const datasets = extra.datasets ?? [
    options.datasetPath
      ? await fileDataset({ path: options.datasetPath, kind: options.kind, limit: count })
      : useDemo
        ? demoDataset(options.function, demo)
        : generatedCountdownDataset({ count, seed: options.seed }),
  ];
  // A small demo set: a batch window needs distinct tasks (the server groups by task id), so the batch is at most
  // the demo's size, and the set is served over several epochs so every step has tasks.
  const taskTotal = datasets.reduce((n, d) => n + d.tasks.length, 0);
  const batchSize = useDemo ? Math.min(options.batchSize, taskTotal) : options.batchSize;
  if (batchSize !== options.batchSize) datasets[0]!.label += ` (batch size ${batchSize}: a batch needs distinct tasks)`;
  const epochs = useDemo ? Math.max(1, Math.ceil(defaultTaskCount({ ...options, batchSize }) / Math.max(1, taskTotal))) : 1;
  const maxEnvWorker = useDemo ? Math.min(options.maxEnvWorker, batchSize * options.numRepeat) : options.maxEnvWorker;
  const job = { batchSize, numRepeat: options.numRepeat, maxEnvWorker };
  const train = options.episodeType === "train";
  // The local emulator answers in well under a second: poll it often. A real server keeps the defaults.
  const tuning = external ? {} : { statusPollWaitingMs: 300, statusPollRollingMs: 500 };
  return {
    functionName: options.function,
    swarmNames: external && swarmNames.length === 1 && external.length === 1 ? [external[0]!.name] : swarmNames,
    externalSwarms: external,
    startEngine: options.startEngine,
    job,
    run: {
      job,
      datasets: datasets.map((d) => d.entry),
      function: options.function,
      ...(epochs > 1 ? { epochs } : {}),
      episodeType: options.episodeType,
      ...(train ? { maxSteps: options.steps } : {}),
      seed: options.seed,
      tuning,
    },
    datasets,
    answerKey: [...answerKeyFor(datasets.flatMap((d) => d.tasks)), ...((useDemo ? demo?.answerKey : undefined) ?? [])] as AnswerKeyInput[],
    episodesPerStep: batchSize * options.numRepeat,
    totalEpisodes: taskTotal * epochs * options.numRepeat,
    steps: train ? options.steps : null,
    timeoutMs: options.timeoutSeconds * 1000,
    seed: options.seed,
    ...(extra.policy ? { policy: extra.policy } : {}),
  };
}

/**
 * The watcher pace for a local emulator (profile `dev`: boot ~1.8 s, weight sync ~1 s, trainer tick 0.5 s): the
 * Worker's status watcher of the server polls it at 100 ms near edges and 500 ms otherwise. A real server keeps the
 * defaults (250 ms / 5 s, ≤ 120 polls a minute).
 */
export const EMULATOR_WATCH = { pollQuickMs: 100, pollSlowMs: 500, maxPollsPerMinute: 600 } as const;

/**
 * The `POST /runs` body: the plan's run with the running swarm servers, each with the engine policy (the Worker
 * starts an OFFLINE engine unless `--no-start-engine`).
 */
export function runSpecFor(plan: DevPlan, swarms: readonly SwarmArg[]): RunRequestInput {
  const engine = { start: plan.startEngine ? ("if-offline" as const) : ("never" as const), ...(plan.externalSwarms ? {} : EMULATOR_WATCH) };
  return { swarms: swarms.map((s) => ({ name: s.name, url: s.url, engine })), ...plan.run };
}
