/**
 * @module cli/dev/spec-file — `--spec run.yaml` (or `.json`): the whole `POST /runs` body from a file, in the exact
 * schema of the API (`edge/api/run-request` `parseRunRequest`). JSON is read by the same YAML parser (JSON is YAML), so
 * every problem names the dotted field path and its line in the file: `run.yaml:7: datasets.1.weight: weight must
 * be > 0 …`. A dataset entry with a `path` is read here and sent inline (the Worker cannot read files), relative to
 * the spec file's folder.
 */
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { LineCounter, parseDocument } from "yaml";
import { parseRunRequest, type RunRequest, type RunRequestInput } from "../../edge/api/run-request.ts";
import type { RunSpecIssue } from "../../scheduler/index.ts";
import { DatasetLoadError, generateCountdownTasks, tasksFromObjects } from "../../tasks/index.ts";
import type { DevOptions } from "./options.ts";
import { answerKeyFor, fileDataset, sizeWarnings, type DevDataset, type DevPlan } from "./plan.ts";

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
}

/**
 * Reads and validates a run spec file. `swarms` (from `--swarm-url` / `--swarm`, or the local emulators) replaces
 * the file's `swarms` when given.
 * @throws SpecFileError naming the file: unreadable, not YAML/JSON, not an object, or every schema problem as
 *   `FILE:LINE: dotted.path: message`
 */
export async function readSpecFile(path: string, swarms?: readonly { name: string; url: string }[]): Promise<SpecFile> {
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
    const at = e.linePos?.[0] ? `:${e.linePos[0].line}` : "";
    throw new SpecFileError(`${path}${at}: not valid YAML or JSON: ${e.message.split("\n")[0]}`);
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
  if (swarms?.length) body.swarms = swarms.map((s) => ({ name: s.name, url: s.url }));
  const datasets: DevDataset[] = [];
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
  return { path, body, parsed: parsed.data, datasets };
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
    answerKey: answerKeyFor(tasks),
    episodesPerStep: spec.batchSize * spec.numRepeat,
    totalEpisodes: tasks.length * spec.epochs * spec.numRepeat,
    steps: train ? spec.maxSteps : null,
    timeoutMs: options.timeoutSeconds * 1000,
    seed: spec.seed ?? 1,
    warnings: sizeWarnings({ batchSize: spec.batchSize, numRepeat: spec.numRepeat, maxEnvWorker: spec.maxEnvWorker, episodeType: spec.episodeType }),
    spec: file,
  };
}
