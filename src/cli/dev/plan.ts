/**
 * @module cli/dev/plan — what one `ajet-edge dev` run will do, decided before anything starts: the datasets (the
 * generated Countdown tasks, or a JSONL file read in Node and sent inline — the Worker cannot read paths), the
 * emulator's answer key, the job, the `POST /runs` body (without the swarm URLs, known only once servers run) and
 * the progress targets. Pure except for reading the dataset file.
 */
import type { SampleCollectionMethod } from "../../protocol/index.ts";
import { swarmsOf, type RolloutFunction, type RolloutFunctionDemo } from "../../sdk/contract.ts";
import { findProject, loadProjectFunctions } from "./project.ts";
import type { AnswerKeyInput, PolicyOptions } from "../../emulator/index.ts";
import { readUtf8File } from "../../node/dataset-file.ts";
import type { Task } from "../../protocol/index.ts";
import type { RunRequestInput } from "../../edge/api/run-request.ts";
import { serverEpisodeCapacity, SWARM_BATCH_DEFAULTS } from "../../protocol/index.ts";
import {
  DATASET_KIND_LABEL, DatasetLoadError, formatLoadReport, formatRejectedRows, generateCountdownTasks, guessDatasetKind, parseJsonlRows,
  tasksFromObjects, tasksFromRows, TaskIdPart, type DatasetKind, type LoadReport,
} from "../../tasks/index.ts";
import { FUNCTION_KIND, type DevOptions, type SwarmArg } from "./options.ts";

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
  job: { batchSize: number; numRepeat: number; maxEnvWorker: number; swarmModeSampleCollectionMethod?: SampleCollectionMethod };
  /** the `POST /runs` body without `swarms` */
  run: Omit<RunRequestInput, "swarms">;
  datasets: DevDataset[];
  /** rows for the emulator's simulated policy (Countdown puzzles, or question → gold) */
  answerKey: AnswerKeyInput[];
  /** episodes one training step needs: batchSize × numRepeat */
  episodesPerStep: number;
  /** episodes the run's tasks make over all epochs: tasks × epochs × numRepeat (an eval run's whole target); absent
   * when a dataset is a URL (only the Worker counts its rows) */
  totalEpisodes?: number;
  /** training steps to run; null for an eval run */
  steps: number | null;
  timeoutMs: number;
  seed: number;
  /** simulated-policy knobs for the emulator (default: the emulator's) */
  policy?: Partial<PolicyOptions>;
  /** lines printed before the run about sizes that will run but are probably not what was meant */
  warnings: string[];
  /** `--spec FILE` (cli/dev/spec-file): the run is the file's body; its swarm entries keep their own fields */
  spec?: { path: string; body: RunRequestInput; filled?: string[] };
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

/**
 * A dataset URL (`http(s)://…`, `r2://BUCKET/KEY`) as a run-spec entry the Worker reads itself: nothing is read
 * here (so `tasks` is empty and the emulator's simulated policy has no answer key for it). The split is the file's
 * base name (`…/test.jsonl` → `test`) when it is a valid id part.
 */
export function urlDataset(o: { url: string; kind: DatasetKind; name?: string; weight?: number }): DevDataset {
  const name = o.name ?? o.kind;
  const path = o.url.replace(/[?#].*$/, "");
  const split = splitFromPath(path.replace(/\.parquet$/i, ""));
  return {
    entry: { name, kind: o.kind, split, url: o.url, ...(o.weight !== undefined ? { weight: o.weight } : {}) },
    tasks: [],
    label: `${name}:${split}: ${o.url} (read by the Worker row by row)`,
  };
}

/** How many refused rows a dataset warning or error shows (line and reason each). */
export const REFUSED_ROWS_SHOWN = 3;

/** The shipped function that reads each kind of row (generic rows go to the user's own function). */
const FUNCTION_FOR_KIND: Readonly<Partial<Record<DatasetKind, string>>> = { gsm8k: "math-agent", math: "math-agent", countdown: "countdown" };

/**
 * The flags that make `ajet-edge dev` read rows of kind `guess` with function `fn`: a shipped function that reads
 * another kind is swapped for the one that reads these rows (its default kind is then right); any other function
 * keeps its name and gets `--kind`.
 */
export function flagsForKind(guess: DatasetKind, fn: string): string {
  const other = FUNCTION_FOR_KIND[guess];
  if (FUNCTION_KIND[fn] !== undefined && other !== undefined && other !== fn) {
    return FUNCTION_KIND[other] === guess ? `--function ${other}` : `--function ${other} --kind ${guess}`;
  }
  return `--kind ${guess}`;
}

/**
 * Why a file gave no usable task, with the fix: empty; or read as the wrong kind (the rows look like another
 * kind: name it and the flags); else the totals and the first refused lines, with the columns this kind needs.
 */
function noUsableTaskMessage(o: { path: string; kind: DatasetKind; functionName?: string }, rows: readonly { value: unknown }[], report: LoadReport): string {
  if (report.accepted === 0 && report.rejected.length === 0) {
    return `cannot use dataset ${o.path}: the file is empty; give a JSONL file with one task per line (--kind ${o.kind} reads ${DATASET_KIND_LABEL[o.kind]} rows)`;
  }
  const head = `no usable ${o.kind} task in ${o.path}: ${formatLoadReport(report, REFUSED_ROWS_SHOWN)}`;
  const guess = guessDatasetKind(rows.map((r) => r.value));
  if (guess !== null && guess !== o.kind) {
    return `${head}; these rows look like ${DATASET_KIND_LABEL[guess]}: add ${flagsForKind(guess, o.functionName ?? "")}`;
  }
  return `${head}; --kind ${o.kind} reads ${DATASET_KIND_LABEL[o.kind]} rows: fix the rows, or give the --kind of the file's columns`;
}

/**
 * The first `limit` usable rows of a JSONL file, as inline `tasks` of a run-spec entry named after the kind. Every
 * row is checked (so the counts are the file's); refused rows are skipped, and the first few are named in the
 * dataset's `warning` (line and reason), so the Worker loads exactly the tasks shown here. `functionName` (the run's
 * function) lets the error for rows of another kind name the flags that read them.
 * @throws DatasetLoadError naming the path when it cannot be read, is not UTF-8, is empty, or has no usable row
 *   (with the file's accepted / rejected totals, the first refused lines, and the kind the rows look like)
 */
export async function fileDataset(o: { path: string; kind: DatasetKind; limit: number; name?: string; weight?: number; functionName?: string }): Promise<DevDataset> {
  const name = o.name ?? o.kind;
  const split = splitFromPath(o.path);
  const load = { name, kind: o.kind, split };
  const { rows, rejected } = parseJsonlRows(await readUtf8File(o.path));
  const all = tasksFromRows(rows, load, rejected).report;
  if (all.accepted === 0) throw new DatasetLoadError(noUsableTaskMessage(o, rows, all));
  const refusedLines = new Set(all.rejected.map((r) => r.line));
  const picked = rows.filter((r) => !refusedLines.has(r.line)).slice(0, o.limit).map((r) => r.value);
  const loaded = tasksFromObjects(picked, load);
  const lines = rows.length + rejected.length;
  const refused = all.rejected.length;
  return {
    entry: { name, kind: o.kind, split, tasks: picked, ...(o.weight !== undefined ? { weight: o.weight } : {}) },
    tasks: loaded.tasks,
    label: `${name}:${split}: ${loaded.tasks.length} tasks from ${o.path} (first usable of ${lines} rows${refused ? `, ${refused} refused` : ""})${o.weight !== undefined ? `, weight ${o.weight}` : ""}`,
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

/** A project's rollout functions by name. */
export type FunctionRegistry = Readonly<Record<string, RolloutFunction>>;

/** Swarm names a registered function needs. @throws Error listing the known functions when the name is unknown */
export function functionSwarms(name: string, rolloutFunctions: FunctionRegistry): string[] {
  const fn = rolloutFunctions[name];
  if (!fn) throw new Error(`no rollout function "${name}"; known: ${Object.keys(rolloutFunctions).join(", ")} (add one with \`ajet-edge new NAME\`)`);
  return [...swarmsOf(fn)];
}

/**
 * Decides the run from the options. `datasets` replaces the option-derived dataset (tests mix several sources).
 * @throws DatasetLoadError for an unreadable or empty `--dataset`; Error for an unknown function or a swarm the
 *   function needs that `--swarm` does not name
 */
export async function buildDevPlan(
  options: DevOptions,
  extra: { datasets?: DevDataset[]; policy?: Partial<PolicyOptions>; functions?: FunctionRegistry } = {},
): Promise<DevPlan> {
  const rolloutFunctions = extra.functions ?? (await loadProjectFunctions(findProject()));
  const swarmNames = functionSwarms(options.function, rolloutFunctions);
  const external = options.swarms.length ? options.swarms : null;
  const missing = external ? swarmNames.filter((n) => !external.some((s) => s.name === n)) : [];
  if (missing.length && !(swarmNames.length === 1 && external?.length === 1)) {
    throw new Error(`function ${options.function} needs swarms ${swarmNames.join(", ")}; give --swarm NAME=URL for ${missing.join(", ")}`);
  }
  const demo = rolloutFunctions[options.function]?.demo;
  const given = options.datasets.length > 0 || extra.datasets !== undefined;
  const useDemo = !given && options.kind !== "countdown" && demo !== undefined;
  if (!given && options.kind !== "countdown" && !useDemo) {
    throw new Error(`function ${options.function} needs ${options.kind} tasks: give --dataset PATH.jsonl (the built-in tasks are generated Countdown puzzles)`);
  }
  const count = options.limit ?? defaultTaskCount(options);
  // every --dataset becomes one entry (never one silently dropped); names are unique (kind, kind-2, …)
  const datasets = extra.datasets ?? (options.datasets.length
    ? await Promise.all(options.datasets.map(async (d) => {
      const weight = d.weight !== undefined ? { weight: d.weight } : {};
      const loaded = d.url
        ? urlDataset({ url: d.source, kind: options.kind, name: d.name, ...weight })
        : await fileDataset({ path: d.source, kind: options.kind, limit: count, name: d.name, functionName: options.function, ...weight });
      if (d.throttleRatio !== undefined) loaded.entry.throttleRatio = d.throttleRatio;
      return loaded;
    }))
    : [useDemo ? demoDataset(options.function, demo) : generatedCountdownDataset({ count, seed: options.seed })]);
  if (options.answerReaders) for (const d of datasets) d.entry.answerReaders = [...options.answerReaders];
  // A small demo set: a batch window needs distinct tasks (the server groups by task id), so the batch is at most
  // the demo's size, and the set is served over several epochs so every step has tasks.
  const taskTotal = datasets.reduce((n, d) => n + d.tasks.length, 0);
  const batchSize = useDemo ? Math.min(options.batchSize, taskTotal) : options.batchSize;
  if (batchSize !== options.batchSize) datasets[0]!.label += ` (batch size ${batchSize}: a batch needs distinct tasks)`;
  const epochs = useDemo ? Math.max(1, Math.ceil(defaultTaskCount({ ...options, batchSize }) / Math.max(1, taskTotal))) : 1;
  const maxEnvWorker = useDemo ? Math.min(options.maxEnvWorker, batchSize * options.numRepeat) : options.maxEnvWorker;
  const train = options.episodeType === "train";
  // a function may name the method it trains in (the agree modes for long agents, issue 20 §5); eval runs keep the default
  const method = train ? rolloutFunctions[options.function]?.sampleCollectionMethod : undefined;
  const job = { batchSize, numRepeat: options.numRepeat, maxEnvWorker, ...(method ? { swarmModeSampleCollectionMethod: method } : {}) };
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
      // a function that runs code gets the run's sandboxes (the defaults of port/sandbox.ts)
      ...(options.sandbox || rolloutFunctions[options.function]?.sandbox ? { sandbox: {} } : {}),
    },
    datasets,
    answerKey: [...answerKeyFor(datasets.flatMap((d) => d.tasks)), ...((useDemo ? demo?.answerKey : undefined) ?? [])] as AnswerKeyInput[],
    episodesPerStep: batchSize * options.numRepeat,
    // a URL dataset's size is known only to the Worker
    ...(datasets.some((d) => d.entry["url"] !== undefined) ? {} : { totalEpisodes: taskTotal * epochs * options.numRepeat }),
    steps: train ? options.steps : null,
    timeoutMs: options.timeoutSeconds * 1000,
    seed: options.seed,
    ...(extra.policy ? { policy: extra.policy } : {}),
    warnings: sizeWarnings({ ...job, episodeType: options.episodeType }),
  };
}

/** How far beyond a swarm server's default worker pool (`max_env_worker` 128) a run's sizes may go unremarked. */
export const FAR_BEYOND_FACTOR = 8;

/**
 * Warnings for sizes that run but are probably a mistake: a training group of one (GRPO learns from the spread of
 * rewards within a group, so one episode per task gives no advantage signal); a group larger than a swarm server's
 * default cap of episodes at once (128); a job whose engine would run far more episode workers at once than that
 * cap (`FAR_BEYOND_FACTOR` × 128).
 * @returns lines starting with `warning:`, empty when nothing stands out
 */
export function sizeWarnings(o: { batchSize: number; numRepeat: number; maxEnvWorker: number; episodeType: "train" | "eval" }): string[] {
  const warnings: string[] = [];
  if (o.numRepeat === 1 && o.episodeType === "train") {
    warnings.push(
      "warning: --num-repeat 1: a group of one episode has no advantage signal in GRPO (each reward is compared with " +
        "its group's mean), so training learns nothing from it; use 2 or more (default 4)",
    );
  }
  const workers = serverEpisodeCapacity(o);
  const usual = SWARM_BATCH_DEFAULTS.maxEnvWorker;
  if (o.numRepeat > usual) {
    warnings.push(
      `warning: --num-repeat ${o.numRepeat}: one group of ${o.numRepeat} episodes is more than a swarm server's default ` +
        `cap of ${usual} episodes at once (max_env_worker), and the engine runs a whole group together; GRPO groups ` +
        "are usually 4–16: lower --num-repeat",
    );
  } else if (workers > FAR_BEYOND_FACTOR * usual) {
    warnings.push(
      `warning: batch size ${o.batchSize} × num-repeat ${o.numRepeat} asks the engine for ${workers} episode workers at ` +
        `once, far beyond a swarm server's default cap of ${usual} (max_env_worker); GRPO groups are usually 4–16: ` +
        "lower --num-repeat or --batch-size, or set --max-env-worker",
    );
  }
  return warnings;
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
  if (plan.spec) {
    // a spec file's swarm entries keep their own fields (engine policy, headers); only the URLs may change
    const own = plan.spec.body.swarms ?? [];
    return {
      ...plan.run,
      swarms: swarms.map((s, i) => {
        const mine = own.find((o) => (o.name ?? "default") === s.name) ?? own[i] ?? {};
        return { engine, ...mine, name: s.name, url: s.url };
      }),
    };
  }
  return { swarms: swarms.map((s) => ({ name: s.name, url: s.url, engine })), ...plan.run };
}
