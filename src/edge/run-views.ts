/**
 * @module edge/run-views — what the runs API answers, built from the Durable Object's state: the run view
 * (`POST /runs`, `GET /runs/:id`, `POST /runs/:id/stop`) and the report (`GET /runs/:id/report`). The CLI reads the
 * same types (src/cli/dev/runs-api.ts).
 */
import type { Task } from "../protocol/index.ts";
import { evalReport, runStatus, runSummary, type EvalReport, type RunSpec, type RunSummary, type SchedulerState } from "../scheduler/index.ts";

/** What the run was created with: the validated spec, the run's client uuid and ids (stored once). */
export interface RunMeta {
  runId: string;
  clientUuid: string;
  spec: RunSpec;
  createdAtMs: number;
  /** dataset name → accepted / rejected rows at load time */
  loadReports: Record<string, { accepted: number; rejected: number; namespace: string }>;
  /** the API token's principal that created the run (edge/auth.ts; never the token): its runs-in-flight quota */
  principal?: string;
}

/** A stored log line. */
export interface LogLine {
  atMs: number;
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

/** What the DO's `create` needs: a validated spec and every dataset's tasks, in order. */
export interface CreateRunInput {
  runId: string;
  spec: RunSpec;
  tasks: Record<string, Task[]>;
  loadReports: RunMeta["loadReports"];
  /** the creating token's principal (edge/auth.ts): the run is released from its quota when it finishes */
  principal?: string;
}

/** `GET /runs/:id`: the core's status view plus the run's identity and recent log lines. */
export type RunView = ReturnType<typeof runStatus> & {
  runId: string;
  createdAtMs: number;
  function: string;
  swarms: { name: string; url: string }[];
  datasets: RunMeta["loadReports"];
  log: LogLine[];
};

/** `GET /runs/:id/report`: the run summary and, for eval runs, the eval report with each task's `taskId`. */
export interface RunReport {
  summary: RunSummary;
  eval: (EvalReport & { tasks: Array<EvalReport["tasks"][number] & { taskId: string }> }) | null;
}

/** The run view of a state. @param log the newest run log lines, oldest first */
export function runView(state: SchedulerState, meta: RunMeta, log: LogLine[]): RunView {
  return {
    ...runStatus(state),
    runId: meta.runId,
    createdAtMs: meta.createdAtMs,
    function: meta.spec.function,
    swarms: meta.spec.swarms.map((s) => ({ name: s.name, url: s.url })),
    datasets: meta.loadReports,
    log,
  };
}

/**
 * The report of a state: the stored final summary when the run finished (else the summary so far) and, for an eval
 * run, the eval report (per task: the group's rewards, pass@k, mean).
 * @param taskIdOf the `task_id` of a dataset row
 */
export function runReport(state: SchedulerState, finalSummary: RunSummary | null, taskIdOf: (source: string, taskIndex: number) => string): RunReport {
  const report = state.run.config.episodeType === "eval" ? evalReport(state) : null;
  const withIds = report && { ...report, tasks: report.tasks.map((t) => ({ ...t, taskId: taskIdOf(t.source, t.taskIndex) })) };
  return { summary: finalSummary ?? runSummary(state), eval: withIds };
}
