/**
 * @module edge/run-create — `RolloutScheduler.create`'s preparation: every dataset prepared (a URL or R2 file is
 * indexed in one streaming pass, `edge/datasets.ts`), each checked for a usable task, the windows checked to fit, the
 * planned episodes checked against `maxEpisodesPerRun`; then the run's first state and its stored meta.
 */
import { initialState, windowCapacityIssues, type SchedulerState } from "../scheduler/index.ts";
import { datasetLimits } from "./dataset-limits.ts";
import type { RunDatasets } from "./datasets.ts";
import type { Issue } from "./errors.ts";
import { plannedEpisodes } from "./run-request.ts";
import { runJob } from "./run-job.ts";
import type { CreateRunInput } from "./run-views.ts";
import type { RunMeta, SchedulerStorage } from "./storage.ts";

/**
 * Prepares a new run. On issues the staged dataset rows are cleared and nothing else is stored.
 * @param env the Worker's bindings and vars (the dataset limits are read from them)
 * @param nowMs the run's creation time (epoch ms)
 */
export async function prepareRun(
  input: CreateRunInput,
  deps: { datasets: RunDatasets; storage: SchedulerStorage; env: object; nowMs: number },
): Promise<{ issues: Issue[] } | { issues: []; state: SchedulerState; meta: RunMeta }> {
  const prepared = await deps.datasets.prepareAll(input, datasetLimits(deps.env as Record<string, unknown>));
  // a train source with fewer tasks than one window takes from it would stall the run (never one task twice a window)
  let issues = prepared.issues.length ? prepared.issues : windowCapacityIssues(input.spec, prepared.counts);
  const planned = plannedEpisodes(input.spec, prepared.counts);
  if (!issues.length && input.maxEpisodesPerRun !== undefined && planned > input.maxEpisodesPerRun) {
    const message = `the run plans ${planned} episodes, over the maximum of ${input.maxEpisodesPerRun} per run (AJET_MAX_EPISODES_PER_RUN); set maxSteps, fewer epochs or numRepeat, or split it into several runs`;
    issues = [{ path: "(body)", message }];
  }
  if (issues.length) {
    deps.storage.clearDatasets();
    return { issues };
  }
  const state = initialState(input.spec, prepared.counts);
  const meta: RunMeta = { runId: input.runId, clientUuid: crypto.randomUUID(), spec: input.spec, createdAtMs: deps.nowMs, loadReports: prepared.loadReports, jobYaml: input.jobYaml ?? runJob(input.spec).toYaml(), ...(input.principal ? { principal: input.principal } : {}) };
  return { issues: [], state, meta };
}
