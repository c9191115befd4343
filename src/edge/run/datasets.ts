/**
 * @module edge/run/datasets — the run's datasets inside the Durable Object: prepared once at create (inline rows
 * checked to be all staged; a generator checked; a URL or R2 file indexed in one streaming pass), then read one
 * task at a time as the scheduler's cursor reaches it (the core only sees task indices; this is the I/O). Every
 * task read is stored in the `tasks` table, so repeats, retries and the consumer's `getTask` never read it again.
 */
import type { Task } from "../../protocol/index.ts";
import {
  DatasetLoadError,
  DatasetNoRangeError,
  DatasetSlowError,
  entryAt,
  INDEX_FIELDS,
  LEGACY_INDEX_FIELDS,
  DatasetChangedError,
  generateCountdownTask,
  INDEX_CHUNK_ENTRIES,
  indexJsonl,
  indexParquet,
  parquetFile,
  parquetMetadata,
  readJsonlTask,
  readParquetTask,
  type ByteSource,
  type IndexResult,
  type RejectedRow,
  withAnswerReaders,
} from "../../tasks/index.ts";
import { DATASET_LIMIT_VARS, type DatasetLimits } from "../ground/dataset-limits.ts";
import type { Env } from "../ground/env.ts";
import { indexBudget, openByteSource, stagingBucket } from "./dataset-hosts.ts";
import type { Issue } from "../ground/errors.ts";
import type { CreateRunInput, SourcePlan } from "./run-views.ts";

export type { SourcePlan };
export { hostTiming, openByteSource, stagingBucket } from "./dataset-hosts.ts";
import type { RunMeta, SchedulerStorage, StoredSource } from "./storage.ts";

/** What preparing one dataset found. */
export interface PreparedSource {
  source: StoredSource;
  /** rows refused while indexing a file (inline rows were counted by the API) */
  rejected: number;
  samples: RejectedRow[];
}

/** Reads of dataset rows at once, per `ensure` (the platform allows 6 open connections per invocation, BC-48). */
const READ_CONCURRENCY = 4;
/** Index chunks kept in memory (128 KiB each). */
const CHUNK_CACHE = 8;

const readersOf = (plan: SourcePlan) => (plan.answerReaders ? { answerReaders: plan.answerReaders } : {});

/** A task that could not be read: why, and whether its file changed under the run (then the run fails, never loops). */
export interface DatasetReadFailure {
  message: string;
  changed: boolean;
}

/** A run's datasets over its storage (one per Durable Object instance). */
export class RunDatasets {
  readonly #chunks = new Map<string, Float64Array>();
  readonly #parquet = new Map<string, Promise<{ file: ReturnType<typeof parquetFile>; metadata: Awaited<ReturnType<typeof parquetMetadata>> }>>();
  readonly #bytes = new Map<string, ByteSource>();

  /**
   * @param fetch the outbound fetch for http(s) datasets (the allow-list applies to every read)
   * @param scopeId the stored task id of a task read later (run-scoped like the staged inline rows)
   */
  constructor(
    private readonly storage: SchedulerStorage,
    private readonly env: Env,
    readonly fetch: typeof globalThis.fetch = globalThis.fetch,
    private readonly scopeId: (taskId: string) => string = (id) => id,
  ) {}

  /**
   * Prepares one dataset for a new run and stores its descriptor (`deadlineAtMs`: as {@link prepareAll}).
   * @throws DatasetLoadError naming what is wrong (staged rows missing, generator ranges, unreadable file, limits)
   */
  async prepare(name: string, plan: SourcePlan, limits: DatasetLimits, deadlineAtMs = Infinity, background = false): Promise<PreparedSource> {
    let prepared: PreparedSource;
    if (plan.type === "stored") {
      const staged = this.storage.taskCount(name);
      if (staged !== plan.count) throw new DatasetLoadError(`dataset "${name}": ${staged} of its ${plan.count} inline rows arrived; send the run again`);
      prepared = { source: { type: "stored", count: plan.count }, rejected: 0, samples: [] };
    } else if (plan.type === "generate") {
      try {
        generateCountdownTask(plan.settings, 0); // ranges that admit no target fail here, not at the first dispatch
      } catch (err) {
        throw new DatasetLoadError(`dataset "${name}": ${(err as Error).message}`);
      }
      prepared = { source: { type: "generate", count: plan.settings.count, settings: plan.settings, ...readersOf(plan) }, rejected: 0, samples: [] };
    } else {
      const bytes = this.#source(plan.url, background);
      const { size, etag } = await bytes.stat();
      const sink = {
        putChunk: (chunk: number, entries: Float64Array) => this.storage.putIndexChunk(name, chunk, entries),
        claimId: (taskId: string, line: number) => this.storage.claimTaskId(name, taskId, line),
      };
      const bounds = { maxRowBytes: limits.maxRowBytes, maxRows: limits.maxDatasetRows, limitName: DATASET_LIMIT_VARS.maxDatasetRows };
      const found: IndexResult =
        plan.format === "parquet"
          ? await indexParquet(plan.url, parquetFile(bytes, size, etag), plan.options, sink, bounds, indexBudget(this.env, deadlineAtMs, background))
          : await indexJsonl(await bytes.stream(etag, deadlineAtMs), plan.options, sink, bounds);
      prepared = { source: { type: "file", count: found.count, url: plan.url, format: plan.format, size, etag, options: plan.options, ...readersOf(plan), entryFields: INDEX_FIELDS }, rejected: found.rejected, samples: found.samples };
    }
    this.storage.putSource(name, prepared.source);
    return prepared;
  }

  /**
   * Prepares every dataset of a new run (in spec order) and collects what is wrong, each issue naming
   * `datasets.N`: a failed read, a limit, a dataset without a usable task. Never throws a DatasetLoadError.
   * @param deadlineAtMs epoch ms by which each JSONL file's index stream must have arrived (past it: an issue)
   * @param background the background index pass (no least rate: its total budget bounds it)
   * @returns the task count per dataset, the load reports (URL datasets counted here), the issues, and `slow`: an
   *   issue came from a host too slow for a bound (DatasetSlowError)
   */
  async prepareAll(input: CreateRunInput, limits: DatasetLimits, deadlineAtMs = Infinity, background = false): Promise<{ counts: Record<string, number>; loadReports: RunMeta["loadReports"]; issues: Issue[]; slow: boolean }> {
    let slow = false;
    const issues: Issue[] = [];
    const counts: Record<string, number> = {};
    const loadReports: RunMeta["loadReports"] = { ...input.loadReports };
    for (const [i, d] of input.spec.datasets.entries()) {
      const plan = input.sources[d.name];
      if (!plan) {
        issues.push({ code: "invalid", path: `datasets.${i}`, message: `dataset "${d.name}" has no source` });
        continue;
      }
      try {
        const prepared = await this.prepare(d.name, plan, limits, deadlineAtMs, background);
        counts[d.name] = prepared.source.count;
        if (plan.type === "file") {
          loadReports[d.name] = { accepted: prepared.source.count, rejected: prepared.rejected, namespace: `${plan.options.name}:${plan.options.split}` };
        }
        if (prepared.source.count === 0) {
          const why = prepared.samples.slice(0, 3).map((r) => `line ${r.line}: ${r.reason}`).join("; ");
          issues.push({ code: "invalid", path: `datasets.${i}`, message: `dataset "${d.name}" has no usable task${why ? ` (${why})` : ""}` });
        }
      } catch (err) {
        if (!(err instanceof DatasetLoadError)) throw err;
        slow ||= err instanceof DatasetSlowError;
        issues.push({ code: "invalid", path: `datasets.${i}`, message: err.message });
      }
    }
    return { counts, loadReports, issues, slow };
  }

  /**
   * The quick check of a new run's URL/R2 datasets: each file is reachable (one stat: its binding, key or URL).
   * Never throws a DatasetLoadError.
   * @returns their total size in bytes, the issues (`datasets.N`) of the files that cannot be read, and the files
   *   served without Range support that the background pass copies into R2 first (edge/run/dataset-staging)
   */
  async statFiles(input: CreateRunInput): Promise<{ bytes: number; files: number; issues: Issue[]; stage: string[] }> {
    const stage: string[] = [];
    const issues: Issue[] = [];
    let bytes = 0;
    let files = 0;
    for (const [i, d] of input.spec.datasets.entries()) {
      const plan = input.sources[d.name];
      if (plan?.type !== "file") continue;
      files++;
      try {
        bytes += (await this.#source(plan.url).stat()).size;
      } catch (err) {
        if (!(err instanceof DatasetLoadError)) throw err;
        if (err instanceof DatasetNoRangeError && stagingBucket(this.env)) stage.push(d.name);
        else issues.push({ code: "invalid", path: `datasets.${i}`, message: err.message });
      }
    }
    return { bytes, files, issues, stage };
  }

  /**
   * Makes sure these tasks are stored, reading the missing ones (a few at a time). Never throws.
   * @returns the refs that could not be read, with the error (`source#index` → its message, and whether it says the
   *   file is no longer the one the run indexed: {@link DatasetChangedError})
   */
  async ensure(refs: readonly { source: string; taskIndex: number }[]): Promise<Map<string, DatasetReadFailure>> {
    const failed = new Map<string, DatasetReadFailure>();
    const seen = new Set<string>();
    const missing = refs.filter((r) => {
      const key = `${r.source}#${r.taskIndex}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return !this.storage.hasTask(r.source, r.taskIndex);
    });
    let next = 0;
    const worker = async () => {
      while (next < missing.length) {
        const ref = missing[next++]!;
        try {
          this.#store(ref.source, ref.taskIndex, await this.#read(ref.source, ref.taskIndex));
        } catch (err) {
          failed.set(`${ref.source}#${ref.taskIndex}`, { message: err instanceof Error ? err.message : String(err), changed: err instanceof DatasetChangedError });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, missing.length) }, worker));
    return failed;
  }

  /** One task (stored, or read now and stored). @throws DatasetLoadError / Error naming the source and index */
  async task(source: string, taskIndex: number): Promise<Task> {
    if (!this.storage.hasTask(source, taskIndex)) this.#store(source, taskIndex, await this.#read(source, taskIndex));
    return this.storage.task(source, taskIndex);
  }

  /** Stores a task read from its source (inline rows were stored, scoped, when staged). */
  #store(source: string, taskIndex: number, task: Task): void {
    this.storage.putTasks(source, [{ ...task, task_id: this.scopeId(task.task_id) }], taskIndex);
  }

  async #read(name: string, taskIndex: number): Promise<Task> {
    const source = this.storage.source(name);
    if (!source) throw new Error(`no dataset ${name} in this run`);
    if (!Number.isInteger(taskIndex) || taskIndex < 0 || taskIndex >= source.count) throw new Error(`no task ${name}[${taskIndex}] in this run`);
    if (source.type === "stored") return this.storage.task(name, taskIndex);
    if (source.type === "generate") return withAnswerReaders(generateCountdownTask(source.settings, taskIndex), source.answerReaders);
    const entry = entryAt(this.#chunk(name, Math.floor(taskIndex / INDEX_CHUNK_ENTRIES)), taskIndex % INDEX_CHUNK_ENTRIES, source.entryFields ?? LEGACY_INDEX_FIELDS);
    const bytes = this.#source(source.url);
    if (source.format === "jsonl") return withAnswerReaders(await readJsonlTask(bytes, source.etag, entry, source.options), source.answerReaders);
    let pq = this.#parquet.get(name);
    if (!pq) {
      const file = parquetFile(bytes, source.size, source.etag);
      pq = parquetMetadata(source.url, file).then((metadata) => ({ file, metadata }));
      pq.catch(() => this.#parquet.delete(name));
      this.#parquet.set(name, pq);
    }
    const { file, metadata } = await pq;
    return withAnswerReaders(await readParquetTask(source.url, file, metadata, entry, source.options), source.answerReaders);
  }

  #chunk(name: string, chunk: number): Float64Array {
    const key = `${name}#${chunk}`;
    let entries = this.#chunks.get(key);
    if (entries) {
      this.#chunks.delete(key); // re-insert: most recently used last
    } else {
      entries = this.storage.indexChunk(name, chunk);
      if (this.#chunks.size >= CHUNK_CACHE) this.#chunks.delete(this.#chunks.keys().next().value!);
    }
    this.#chunks.set(key, entries);
    return entries;
  }

  #source(url: string, background = false): ByteSource {
    const key = background ? `background ${url}` : url;
    let s = this.#bytes.get(key);
    if (!s) {
      s = openByteSource(url, this.env, this.fetch, background);
      this.#bytes.set(key, s);
    }
    return s;
  }
}
