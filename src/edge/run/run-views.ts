/**
 * @module edge/run/run-views — what the runs API answers, built from the Durable Object's state: the run view
 * (`POST /runs`, `GET /runs/:id`, `POST /runs/:id/stop`) and the report (`GET /runs/:id/report`). The CLI reads the
 * same types (src/cli/dev/runs-api.ts).
 */
import type { CountdownGeneratorSettings, DatasetFormat, RowOptions } from "../../tasks/index.ts";
import type { ApplyStatsView } from "./apply-stats.ts";
import { evalReport, runStatus, runSummary, type EvalReport, type RunSpec, type RunSummary, type SchedulerState } from "../../scheduler/index.ts";
import type { SandboxCounts } from "../../sandbox/ledger.ts";
import type { Issue } from "../ground/errors.ts";
import type { SealedSecrets } from "../ground/secrets-at-rest.ts";
import type { EngineNote } from "../swarm-server/engine-note.ts";
import { waitingFor } from "./waiting-for.ts";

/** What the run was created with: the validated spec, the run's client uuid and ids (stored once). */
export interface RunMeta {
  runId: string;
  clientUuid: string;
  spec: RunSpec;
  createdAtMs: number;
  /** dataset name → accepted / rejected rows at load time */
  loadReports: Record<string, { accepted: number; rejected: number; namespace: string }>;
  /** the API token's principal that created the run (edge/api/auth.ts; never the token): its runs-in-flight quota */
  principal?: string;
  /** the train config YAML the run's swarm servers are synced with when their object starts the engine (absent in runs created before) */
  jobYaml?: string;
  /**
   * the run's secrets, envelope-encrypted (edge/ground/secrets-at-rest); stored `spec.secrets` is always `{}`. Deleted
   * with its wrapped data key when the run ends. Absent: the run has no secrets.
   */
  sealedSecrets?: SealedSecrets;
}

/**
 * A value that went through JSON (what a stored log line's fields are once read back). Not spelled out recursively:
 * the RPC result types of a Durable Object stub would then recurse without end.
 */
export type JsonValue = string | number | boolean | null | object;

/** A stored log line, as read back (`atMs` epoch ms). */
export interface LogLine {
  atMs: number;
  level: string;
  message: string;
  fields: Record<string, JsonValue>;
}

/** What `POST /runs` hands the Durable Object for one dataset (never its rows: inline rows are staged before). */
export type SourcePlan = (
  | { type: "stored"; count: number }
  | { type: "generate"; settings: CountdownGeneratorSettings & { name: string } }
  | { type: "file"; url: string; format: DatasetFormat; options: RowOptions; stageFrom?: string }
) & {
  /** the dataset's `answerReaders`, added to each task read later (inline rows carry them already) */
  answerReaders?: string[];
};

/**
 * What the DO's `create` needs: a validated spec without inline rows (they were staged with `stageTasks`), how to
 * read each dataset, and the load reports of the inline ones (URL datasets are counted by the object, indexing).
 */
export interface CreateRunInput {
  runId: string;
  spec: RunSpec;
  sources: Record<string, SourcePlan>;
  loadReports: RunMeta["loadReports"];
  /** the creating token's principal (edge/api/auth.ts): the run is released from its quota when it finishes */
  principal?: string;
  /** `AgentJetJob.toYaml()` of the spec's job (default: built with edge/ground/run-job `runJob`): what the swarm server's object syncs before it starts the engine */
  jobYaml?: string;
  /** the most episodes the run may plan (`AJET_MAX_EPISODES_PER_RUN`), checked once URL datasets are counted */
  maxEpisodesPerRun?: number;
  /** the run's secrets, sealed by the API (edge/ground/secrets-at-rest); `spec.secrets` is then `{}` */
  sealedSecrets?: SealedSecrets;
  /**
   * total bytes of the URL/R2 dataset files above which they are indexed in the background (the run answers in phase
   * `indexing`); default `AJET_BACKGROUND_INDEX_BYTES`, else 8 MiB (edge/run/run-indexing)
   */
  backgroundIndexBytes?: number;
}

/**
 * `create`'s answer: the new run's view, or (view null) the problems, each naming `datasets.N` (code `invalid`) or the
 * planned episodes (`too_many_episodes`); nothing is kept then.
 */
export interface CreateRunResult {
  view: RunView | null;
  issues: Issue[];
}

/** `GET /runs/:id`: the core's status view plus the run's identity, what it waits for, and recent log lines. */
export type RunView = Omit<ReturnType<typeof runStatus>, "phase"> & {
  /** the core's phase, or `indexing` while the run's large URL/R2 datasets are indexed before it starts (edge/run/run-indexing) */
  phase: ReturnType<typeof runStatus>["phase"] | "indexing";
  runId: string;
  createdAtMs: number;
  /** when the run finished (epoch ms), null before */
  finishedAtMs: number | null;
  function: string;
  swarms: { name: string; url: string; engine: RunSpec["swarms"][number]["engine"] }[];
  datasets: RunMeta["loadReports"];
  /** in plain words what the run waits for (engine booting, weight sync, nothing to claim …), null when nothing */
  waitingFor: string | null;
  /** why the run failed (e.g. the server batches differently), null unless it did */
  failure: string | null;
  /** per swarm, what its server's object last said about the engine */
  engineNotes: Record<string, EngineNote>;
  log: LogLine[];
  /** the object's own cost: decide + persist time per event and events per second (edge/run/apply-stats.ts) */
  scheduler?: ApplyStatsView;
  /**
   * the run's sandboxes (edge/run/sandboxes), when it made any: alive now, created, destroyed (confirmed), failed
   * (an infrastructure failure or a failed create) and sandbox seconds, in total and per window (0-based; `none`
   * for an eval run's)
   */
  sandboxes?: { total: SandboxCounts; byWindow: Record<string, SandboxCounts> };
};

/** One row of `GET /runs`: the run's identity and its live headline fields. */
export interface RunListing {
  runId: string;
  function: string;
  /** the run's phase, or `unknown` for a registered run whose object holds nothing */
  phase: string;
  stopReason: string | null;
  /** the first swarm's engine status */
  engineStatus: string | null;
  globalStep: number | null;
  /** mean reward of the last step with an ended episode, null before */
  lastStepMeanReward: number | null;
  createdAtMs: number;
  /** when the run finished (epoch ms), null before (and for a run whose object holds nothing) */
  finishedAtMs: number | null;
  waitingFor: string | null;
  failure: string | null;
}

/** `GET /runs/:id/report`: the run summary and, for eval runs, the eval report with each task's `taskId`. */
export interface RunReport {
  summary: RunSummary;
  eval: (EvalReport & { tasks: Array<EvalReport["tasks"][number] & { taskId: string }> }) | null;
}

/**
 * The run view of a state.
 * @param log the newest run log lines, oldest first
 * @param engine the swarm servers' objects' last notes, the run's failure (if any) and the instant (epoch ms)
 */
export function runView(state: SchedulerState, meta: RunMeta, log: LogLine[], engine: { notes: Record<string, EngineNote>; failure: string | null; nowMs: number }): RunView {
  const status = runStatus(state);
  return {
    ...status,
    runId: meta.runId,
    createdAtMs: meta.createdAtMs,
    finishedAtMs: state.run.finishedAtMs,
    function: meta.spec.function,
    swarms: meta.spec.swarms.map((s) => ({ name: s.name, url: s.url, engine: s.engine })),
    datasets: meta.loadReports,
    waitingFor: waitingFor(status, engine.notes, Object.fromEntries(meta.spec.swarms.map((s) => [s.name, s.url])), engine.failure, engine.nowMs),
    failure: engine.failure,
    engineNotes: engine.notes,
    log,
  };
}

/** The `GET /runs` row of a run view. */
export function runListing(view: RunView): RunListing {
  const lastWithReward = [...view.steps].reverse().find((s) => s.meanReward !== null);
  return {
    runId: view.runId,
    function: view.function,
    phase: view.phase,
    stopReason: view.stopReason,
    engineStatus: view.engines[0]?.engineStatus ?? null,
    globalStep: view.globalStep,
    lastStepMeanReward: lastWithReward?.meanReward ?? null,
    createdAtMs: view.createdAtMs,
    finishedAtMs: view.finishedAtMs,
    waitingFor: view.waitingFor,
    failure: view.failure,
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
