/**
 * @module edge/run/run-create — `RolloutScheduler.create`'s preparation: every dataset prepared (a URL or R2 file is
 * indexed in one streaming pass, `edge/run/datasets.ts`), each checked for a usable task, the windows checked to fit, the
 * planned episodes checked against `maxEpisodesPerRun`; then the run's first state and its stored meta. Before it,
 * the inline rows staged in chunks ({@link stageTasks}).
 */
import type { Task } from "../../protocol/index.ts";
import { initialState, windowCapacityIssues, type RunSpec, type SchedulerState } from "../../scheduler/index.ts";
import { runScopedTaskId } from "../../tasks/index.ts";
import { datasetLimits, type DatasetLimitVars } from "../ground/dataset-limits.ts";
import type { RunDatasets } from "./datasets.ts";
import { invalid, type Issue } from "../ground/errors.ts";
import { runJob } from "../ground/run-job.ts";
import type { CreateRunInput } from "./run-views.ts";
import type { RunMeta, SchedulerStorage } from "./storage.ts";

/** One chunk of a new run's inline rows (`POST /runs` sends them in bounded chunks before `create`). */
export interface StagedTasks {
  runId: string;
  /** the dataset's name */
  source: string;
  /** the 0-based index of the chunk's first row in its dataset */
  start: number;
  tasks: Task[];
  /** "run": task ids are scoped to the run; "dataset": kept as the dataset names them */
  scope: "run" | "dataset";
}

/**
 * Stores one chunk of a new run's inline rows with their scoped task ids. Idempotent by position.
 * @param heldRunId the run this object already holds, if any
 * @throws Error once the run exists
 */
export function stageTasks(storage: SchedulerStorage, heldRunId: string | undefined, input: StagedTasks): void {
  if (heldRunId) throw new Error(`run ${heldRunId} already exists; its tasks cannot change`);
  const scoped = input.tasks.map((t) => ({ ...t, task_id: runScopedTaskId(t.task_id, input.runId, input.scope) }));
  storage.putTasks(input.source, scoped, input.start);
}

/** Stores a prepared run: its meta and its first state (call inside one storage transaction). */
export function storeRun(storage: SchedulerStorage, run: { state: SchedulerState; meta: RunMeta }): void {
  storage.setMeta(run.meta);
  storage.persist({ run: run.state.run, episodes: [], deletedEpisodeKeys: [], steps: [], evalTasks: [], batches: [], landed: [] });
}

/**
 * Prepares a new run. On issues the staged dataset rows are cleared and nothing else is stored.
 * @param env the Worker's bindings and vars (the dataset limits are read from them)
 * @param nowMs the run's creation time (epoch ms)
 * @param indexDeadlineAtMs epoch ms by which every file's index pass must have read its file (default none)
 * @param background the background index pass (edge/run/run-indexing): no least rate, its budget bounds it
 * @returns the run, or its issues and `slow` (a dataset host was too slow for a bound: the staged inline rows are kept,
 *   only the file indexes forgotten, so the background pass can take over)
 */
export async function prepareRun(
  input: CreateRunInput,
  deps: { datasets: RunDatasets; storage: SchedulerStorage; env: DatasetLimitVars; nowMs: number; indexDeadlineAtMs?: number; background?: boolean },
): Promise<{ issues: Issue[]; slow: boolean } | { issues: []; state: SchedulerState; meta: RunMeta }> {
  const prepared = await deps.datasets.prepareAll(input, datasetLimits(deps.env), deps.indexDeadlineAtMs, deps.background);
  // a train source with fewer tasks than one window takes from it would stall the run (never one task twice a window)
  let issues: Issue[] = prepared.issues.length ? prepared.issues : windowCapacityIssues(input.spec, prepared.counts).map((i) => invalid(i.path, i.message));
  const planned = plannedEpisodes(input.spec, prepared.counts);
  if (!issues.length && input.maxEpisodesPerRun !== undefined && planned > input.maxEpisodesPerRun) {
    const message = `the run plans ${planned} episodes, over the maximum of ${input.maxEpisodesPerRun} per run (AJET_MAX_EPISODES_PER_RUN); set maxSteps, fewer epochs or numRepeat, or split it into several runs`;
    issues = [{ code: "too_many_episodes", path: "(body)", message }];
  }
  if (issues.length) {
    const slow = prepared.slow && !deps.background;
    if (slow) deps.storage.clearFileIndexes();
    else deps.storage.clearDatasets();
    return { issues, slow };
  }
  const state = initialState(input.spec, prepared.counts);
  const meta: RunMeta = { runId: input.runId, clientUuid: crypto.randomUUID(), spec: input.spec, createdAtMs: deps.nowMs, loadReports: prepared.loadReports, jobYaml: input.jobYaml ?? runJob(input.spec).toYaml(), ...(input.principal ? { principal: input.principal } : {}), ...(input.sealedSecrets ? { sealedSecrets: input.sealedSecrets } : {}) };
  return { issues: [], state, meta };
}

/**
 * The most episodes a run can plan (retries not counted): train runs serve at most `maxSteps` windows of
 * `batchSize` groups and at most `epochs` passes over the tasks; eval runs every task `epochs` times; each group
 * is `numRepeat` episodes.
 */
export function plannedEpisodes(spec: RunSpec, taskCounts: Readonly<Record<string, number>>): number {
  const tasks = Object.values(taskCounts).reduce((a, b) => a + b, 0);
  const groups = spec.episodeType === "train" && spec.maxSteps !== null ? Math.min(spec.maxSteps * spec.batchSize, spec.epochs * tasks) : spec.epochs * tasks;
  return groups * spec.numRepeat;
}
