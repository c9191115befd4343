/**
 * @module tasks/readers — reading a whole dataset into memory from a URL (`fetch`) or from a {@link DatasetSpec}
 * (url, inline tasks, the Countdown generator; `path` through an injected reader, which `src/node` provides): for
 * small datasets in Node and tests. A run never reads a URL dataset this way: its Durable Object indexes the file
 * and reads rows one at a time (`tasks/dataset-index.ts`, `edge/run/datasets.ts`).
 */
import { z } from "zod";
import type { Task } from "../protocol/index.ts";
import { generateCountdownTasks } from "./countdown-generator.ts";
import { formatOf } from "./dataset-index.ts";
import { DatasetSpec, type ParsedDatasetSpec } from "./dataset-spec.ts";
import { DatasetLoadError, parseTasks, tasksFromObjects } from "./load.ts";
import type { LoadOptions, LoadResult } from "./load.ts";

/** What the readers need from the platform. */
export interface ReaderDeps {
  /** defaults to the global `fetch` */
  fetch?: typeof fetch;
  signal?: AbortSignal;
  /** reads a local file as UTF-8 text; only Node has one (`src/node/dataset-file.ts`) */
  readText?: (path: string) => Promise<string>;
}

/**
 * UTF-8 bytes → text. Invalid UTF-8 is an error (never replacement characters in a prompt); a BOM is removed.
 * @param where names the source in the error.
 * @throws DatasetLoadError
 */
export function decodeUtf8(bytes: ArrayBuffer | Uint8Array, where: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new DatasetLoadError(`${where} is not valid UTF-8 text`);
  }
}

/**
 * Fetches a JSONL file and parses it into tasks (see {@link parseTasks}).
 * @throws DatasetLoadError naming the URL for a network error, a non-2xx status or invalid UTF-8.
 */
export async function fetchTasks(url: string, options: LoadOptions, deps: ReaderDeps = {}): Promise<LoadResult> {
  const doFetch = deps.fetch ?? fetch;
  let response: Response;
  try {
    response = await doFetch(url, { signal: deps.signal ?? null, headers: { accept: "application/jsonl, */*" } });
  } catch (err) {
    throw new DatasetLoadError(`cannot fetch dataset ${url}: ${(err as Error).message}`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new DatasetLoadError(`cannot fetch dataset ${url}: HTTP ${response.status} ${response.statusText}`.trim());
  }
  return parseTasks(decodeUtf8(await response.arrayBuffer(), url), options);
}

/**
 * Loads the tasks of one dataset spec. With `answerReaders`, every task carries them as `metadata.answer_readers`.
 * @throws DatasetLoadError for an invalid spec (naming the field), a failed read, a `path` without
 *   `deps.readText` (use `loadDatasetFromNode` in `src/node/dataset-file.ts`), or rejected rows in strict mode.
 */
export async function loadDataset(spec: DatasetSpec, deps: ReaderDeps = {}, strict = false): Promise<LoadResult> {
  const parsed = DatasetSpec.safeParse(spec);
  if (!parsed.success) {
    throw new DatasetLoadError(`invalid dataset spec: ${z.prettifyError(parsed.error)}`);
  }
  const s = parsed.data;
  const loaded = await readDataset(s, deps, strict);
  if (s.answerReaders === undefined) return loaded;
  const readers = s.answerReaders;
  return { ...loaded, tasks: loaded.tasks.map((t) => withAnswerReaders(t, readers)) };
}

/**
 * The task with its dataset's answer readers as `metadata.answer_readers` (where the rollout function reads them);
 * the task itself when there are none. Used for every source, so a URL row read later gets them too.
 */
export function withAnswerReaders(task: Task, readers: readonly string[] | undefined): Task {
  return readers === undefined ? task : { ...task, metadata: { ...task.metadata, answer_readers: [...readers] } };
}

async function readDataset(s: ParsedDatasetSpec, deps: ReaderDeps, strict: boolean): Promise<LoadResult> {
  const options: LoadOptions = { name: s.name, kind: s.kind, strict, ...(s.split ? { split: s.split } : {}) };
  if (s.url !== undefined) {
    if (s.url.startsWith("r2://") || (s.format ?? formatOf(s.url)) === "parquet") {
      throw new DatasetLoadError(`dataset ${s.url} is read by the Worker row by row (R2 or Parquet): give it as a run's dataset url, not to loadDataset`);
    }
    return fetchTasks(s.url, options, deps);
  }
  if (s.tasks !== undefined) return tasksFromObjects(s.tasks, options);
  if (s.generate !== undefined) {
    const tasks = generateCountdownTasks({ ...s.generate, name: s.name });
    return { tasks, report: { name: s.name, split: `gen-${s.generate.seed}`, accepted: tasks.length, rejected: [] } };
  }
  if (!deps.readText) {
    throw new DatasetLoadError(
      `dataset "${s.name}" has a path, which needs Node: use loadDatasetFromNode, or serve the file and give a url`,
    );
  }
  let text: string;
  try {
    text = await deps.readText(s.path!);
  } catch (err) {
    throw new DatasetLoadError(`cannot read dataset ${s.path}: ${(err as Error).message}`);
  }
  return parseTasks(text, options);
}
