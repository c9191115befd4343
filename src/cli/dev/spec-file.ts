/**
 * @module cli/dev/spec-file — `--spec run.yaml` (or `.json`): the whole `POST /runs` body from a file, in the exact
 * schema of the API (`edge/api/run-request` `parseRunRequest`). JSON is read by the same YAML parser (JSON is YAML), so
 * every problem names the dotted field path and its line in the file: `run.yaml:7: datasets.1.weight: weight must
 * be > 0 …`. A dataset entry with a `path` is read here and sent inline (the Worker cannot read files), relative to
 * the spec file's folder. With `dev`, what `dev` supplies without a file may be left out of it: `swarms` (the local
 * emulators, one per swarm the function uses) and `datasets` (the generated Countdown tasks, or the function's demo
 * tasks), as `ajet-edge dev --function F` would make them.
 */
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { LineCounter, parseDocument } from "yaml";
import { parseRunRequest, type RunRequest, type RunRequestInput } from "../../edge/api/run-request.ts";
import type { RunSpecIssue } from "../../scheduler/index.ts";
import { DatasetLoadError, generateCountdownTasks, tasksFromObjects } from "../../tasks/index.ts";
import { FUNCTION_KIND, type DevOptions } from "./options.ts";
import { answerKeyFor, buildDevPlan, fileDataset, functionSwarms, sizeWarnings, type DevDataset, type DevPlan, type FunctionRegistry } from "./plan.ts";
import { findProject, loadProjectFunctions } from "./project.ts";

/** The spec file is unreadable or not a valid run spec. `message` names the file, and each issue its path and line. */
export class SpecFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SpecFileError";
  }
}

/** A read spec file: the body as sent (paths inlined), its validated form, and the datasets for the answer key. */
export interface SpecFile {
  path: string;
  body: RunRequestInput;
  parsed: RunRequest;
  /** datasets whose tasks are known here (inline, path, generated); URL sources are not read by the CLI */
  datasets: DevDataset[];
  /** answer-key rows of datasets `dev` supplied (a function's demo tasks bring their own) */
  extraAnswerKey?: DevPlan["answerKey"];
  /** the fields `dev` filled in because the file left them out, e.g. `["swarms", "datasets"]` */
  filled?: string[];
}

/**
 * What `dev` supplies for a spec file that leaves it out, from the file's own fields: `swarms` (one entry per swarm
 * the function uses; the URLs are replaced by the local emulators') and `datasets` (with `epochs` and the batch size
 * a small demo set needs), as `ajet-edge dev --function F --steps N --batch-size B …` would make them.
 * @returns the fields to fill (none when the file has them); the plan they come from, for the answer key
 */
export type SpecDefaults = (raw: Readonly<Record<string, unknown>>) => Promise<{
  swarms?: { name: string; url: string }[];
  datasets?: { entries: RunRequestInput["datasets"]; datasets: DevDataset[]; epochs?: number; batchSize?: number; answerKey: DevPlan["answerKey"] };
}>;

/** A YAML error's place as `:LINE:COLUMN` (1-based), or "" when the parser gave none. */
function placeOf(e: { linePos?: [{ line: number; col: number }, ...unknown[]] | undefined; pos?: [number, number] }, lines: LineCounter): string {
  const at = e.linePos?.[0] ?? (e.pos ? lines.linePos(e.pos[0]) : undefined);
  return at ? `:${at.line}:${at.col}` : "";
}

/**
 * Reads and validates a run spec file. `swarms` (from `--swarm-url` / `--swarm`, or the local emulators) replaces
 * the file's `swarms` when given; `defaults` (dev) fills `swarms` and `datasets` the file leaves out.
 * @throws SpecFileError naming the file: unreadable, not YAML/JSON (`FILE:LINE:COLUMN: …`), not an object, or every
 *   schema problem as `FILE:LINE: dotted.path: message`
 */
export async function readSpecFile(path: string, swarms?: readonly { name: string; url: string }[], defaults?: SpecDefaults): Promise<SpecFile> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new SpecFileError(code === "ENOENT" ? `--spec ${path}: no such file` : `--spec ${path}: cannot read it (${code ?? (err as Error).message})`);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  if (doc.errors.length) {
    const e = doc.errors[0]!;
    throw new SpecFileError(`${path}${placeOf(e, lines)}: not valid YAML or JSON: ${e.message.split("\n")[0]}`);
  }
  const raw: unknown = doc.toJS();
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new SpecFileError(`${path}: a run spec is an object with swarms, datasets, function, job …; got ${Array.isArray(raw) ? "a list" : raw === null ? "nothing" : `a ${typeof raw}`}`);
  }
  const lineOf = (dotted: string): string => {
    const keys = dotted.split(".").filter((k) => k !== "").map((k) => (/^\d+$/.test(k) ? Number(k) : k));
    for (let n = keys.length; n >= 0; n--) {
      const node = n === 0 ? doc.contents : doc.getIn(keys.slice(0, n), true);
      const range = (node as { range?: [number, number, number] } | undefined)?.range;
      if (range) return `:${lines.linePos(range[0]).line}`;
    }
    return "";
  };
  const issuesText = (issues: readonly RunSpecIssue[]) => issues.map((i) => `  ${path}${lineOf(i.path)}: ${i.path || "(top level)"}: ${i.message}`).join("\n");

  const body = { ...(raw as Record<string, unknown>) } as RunRequestInput & Record<string, unknown>;
  const datasets: DevDataset[] = [];
  const filled: string[] = [];
  let extraAnswerKey: DevPlan["answerKey"] = [];
  if (defaults && (body.swarms === undefined || body.datasets === undefined)) {
    let supplied: Awaited<ReturnType<SpecDefaults>>;
    try {
      supplied = await defaults(raw as Record<string, unknown>);
    } catch (err) {
      throw new SpecFileError(`${path}: ${(err as Error).message}`);
    }
    if (body.swarms === undefined && supplied.swarms) {
      body.swarms = supplied.swarms;
      filled.push("swarms");
    }
    if (body.datasets === undefined && supplied.datasets) {
      const d = supplied.datasets;
      body.datasets = d.entries;
      datasets.push(...d.datasets);
      extraAnswerKey = d.answerKey;
      if (d.epochs !== undefined && body["epochs"] === undefined) body["epochs"] = d.epochs;
      if (d.batchSize !== undefined) body.job = { ...(body.job as Record<string, unknown> | undefined), batchSize: d.batchSize } as RunRequestInput["job"];
      filled.push("datasets");
    }
  }
  if (swarms?.length) body.swarms = swarms.map((s) => ({ name: s.name, url: s.url }));
  const problems: RunSpecIssue[] = [];
  if (Array.isArray(body.datasets)) {
    body.datasets = await Promise.all(
      body.datasets.map(async (entry, i) => {
        const e = entry as Record<string, unknown> | null;
        if (!e || typeof e !== "object" || typeof e["path"] !== "string") return entry;
        const { path: file, ...rest } = e;
        try {
          const loaded = await fileDataset({
            path: resolve(dirname(path), file as string),
            kind: (typeof rest["kind"] === "string" ? rest["kind"] : "generic") as Parameters<typeof fileDataset>[0]["kind"],
            limit: Number.POSITIVE_INFINITY,
            ...(typeof rest["name"] === "string" ? { name: rest["name"] } : {}),
          });
          datasets.push(loaded);
          return { ...rest, ...(rest["split"] === undefined ? { split: loaded.entry.split } : {}), tasks: loaded.entry.tasks };
        } catch (err) {
          if (!(err instanceof DatasetLoadError)) throw err;
          problems.push({ path: `datasets.${i}.path`, message: err.message });
          return entry;
        }
      }),
    ) as RunRequestInput["datasets"];
  }
  if (problems.length) throw new SpecFileError(`${path}: a dataset file cannot be used:\n${issuesText(problems)}`);
  const parsed = parseRunRequest(body);
  if (!parsed.success) throw new SpecFileError(`${path} is not a valid run spec (the schema of POST /runs):\n${issuesText(parsed.issues)}`);
  return { path, body, parsed: parsed.data, datasets, ...(extraAnswerKey.length ? { extraAnswerKey } : {}), ...(filled.length ? { filled } : {}) };
}

/** A spec's field as a whole number ≥ 1, when it is one. */
function countField(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 ? value : undefined;
}

/**
 * The {@link SpecDefaults} of `ajet-edge dev`: `swarms` and `datasets` as the dev flags would make them for the
 * file's `function` (default countdown), `maxSteps`, `batchSize` / `job.batchSize`, `numRepeat`, `seed` and
 * `episodeType`. A file that sets `batchSize` keeps it, even over a small demo set (the Worker then says why).
 * @param functions the project's registry (tests inject it); default loaded from the project
 * @throws Error for an unknown function (listing the known ones)
 */
export function devSpecDefaults(functions?: FunctionRegistry): SpecDefaults {
  return async (raw) => {
    const registry = functions ?? (await loadProjectFunctions(findProject()));
    const fn = typeof raw["function"] === "string" ? raw["function"] : "countdown";
    const job = (typeof raw["job"] === "object" && raw["job"] !== null ? raw["job"] : {}) as Record<string, unknown>;
    const batchSize = countField(raw["batchSize"]) ?? countField(job["batchSize"]);
    const numRepeat = countField(raw["numRepeat"]) ?? countField(job["numRepeat"]) ?? 4;
    const eval_ = raw["episodeType"] === "eval";
    const swarms = functionSwarms(fn, registry).map((name) => ({ name, url: "http://127.0.0.1:10086" }));
    if (raw["datasets"] !== undefined) return { swarms };
    const kind = FUNCTION_KIND[fn] ?? "generic";
    const plan = await buildDevPlan({
      function: fn,
      datasets: [],
      kind,
      steps: countField(raw["maxSteps"]) ?? 3,
      batchSize: batchSize ?? 8,
      numRepeat,
      maxEnvWorker: (batchSize ?? 8) * numRepeat,
      seed: typeof raw["seed"] === "number" ? raw["seed"] : 1,
      episodeType: eval_ ? "eval" : "train",
      swarms: [],
      startEngine: true,
      timeoutSeconds: 300,
      requestTimeoutSeconds: 30,
      json: false,
      // only the datasets and swarms are taken from this plan: a spec file's own sandbox block stands as written
      sandbox: false,
      logLevel: "warn",
    }, { functions: registry }).catch((err: unknown) => {
      if (kind === "countdown" || !(err instanceof Error)) throw err;
      throw new Error(`${err.message.replace(/--dataset PATH\.jsonl/, "datasets (e.g. [{name: tasks, kind: generic, path: tasks.jsonl}])")}`);
    });
    return {
      swarms,
      datasets: {
        entries: plan.run.datasets,
        datasets: plan.datasets,
        ...(plan.run.epochs !== undefined ? { epochs: plan.run.epochs } : {}),
        ...(batchSize === undefined && plan.job.batchSize !== 8 ? { batchSize: plan.job.batchSize } : {}),
        // rows beyond those of the tasks themselves (a demo set's own key); specPlan derives the rest
        answerKey: plan.answerKey.slice(answerKeyFor(plan.datasets.flatMap((d) => d.tasks)).length),
      },
    };
  };
}

/**
 * The plan of a `--spec` run: what the file says, with the CLI's own settings (timeout, engine flag, swarms from
 * the command line). `dev` starts one local emulator per swarm name of the file unless `--swarm-url`/`--swarm`
 * name servers; `run` uses the file's servers unless they do.
 */
export function specPlan(file: SpecFile, options: Pick<DevOptions, "swarms" | "timeoutSeconds" | "startEngine">, local: boolean): DevPlan {
  const spec = file.parsed;
  const { swarms: _swarms, ...run } = file.body;
  const fromFile = new Map(file.datasets.map((d) => [d.entry.name, d]));
  const datasets: DevDataset[] = spec.datasets.map((d, i) => {
    const known = fromFile.get(d.name);
    if (known) return { ...known, entry: (file.body.datasets[i] ?? known.entry) as DevDataset["entry"] };
    const entry = file.body.datasets[i] as DevDataset["entry"];
    if (d.generate) {
      const tasks = generateCountdownTasks({ name: d.name, count: d.generate.count, seed: d.generate.seed });
      return { entry, tasks, label: `${d.name}: ${tasks.length} generated Countdown tasks (seed ${d.generate.seed})` };
    }
    if (d.tasks) {
      const tasks = tasksFromObjects(d.tasks, { name: d.name, kind: d.kind, split: d.split ?? "train" }).tasks;
      return { entry, tasks, label: `${d.name}: ${tasks.length} inline tasks` };
    }
    return { entry, tasks: [], label: `${d.name}: ${d.url ?? "(read by the Worker)"}` };
  });
  const given = options.swarms.length ? options.swarms : null;
  const tasks = datasets.flatMap((d) => d.tasks);
  const train = spec.episodeType === "train";
  return {
    functionName: spec.function,
    swarmNames: given ? given.map((s) => s.name) : spec.swarms.map((s) => s.name),
    externalSwarms: given ?? (local ? null : spec.swarms.map((s) => ({ name: s.name, url: s.url }))),
    startEngine: options.startEngine,
    job: { batchSize: spec.batchSize, numRepeat: spec.numRepeat, maxEnvWorker: spec.maxEnvWorker },
    run,
    datasets,
    answerKey: [...answerKeyFor(tasks), ...(file.extraAnswerKey ?? [])],
    episodesPerStep: spec.batchSize * spec.numRepeat,
    totalEpisodes: tasks.length * spec.epochs * spec.numRepeat,
    steps: train ? spec.maxSteps : null,
    timeoutMs: options.timeoutSeconds * 1000,
    seed: spec.seed ?? 1,
    warnings: sizeWarnings({ batchSize: spec.batchSize, numRepeat: spec.numRepeat, maxEnvWorker: spec.maxEnvWorker, episodeType: spec.episodeType }),
    spec: file,
  };
}
