/**
 * @module edge/run/run-indexing — a run whose URL or R2 datasets are large is indexed in the background: `create` checks
 * what is quick (each file is reachable: one stat), stores the creation input, answers at once with a view in phase
 * `indexing`, and the object's alarm runs the index pass and the rest of the creation (`edge/run/run-create.ts`). What
 * the pass finds wrong (rows, limits, windows that do not fit) fails the run, named in its view's `failure`, and
 * releases its quota slot. Smaller files are indexed inline, as before, and their problems answer 400 at once.
 */
import type { RunStatus } from "../../scheduler/index.ts";
import { CAPS, capsFrom } from "../ground/caps.ts";
import type { Issue } from "../ground/errors.ts";
import type { CreateRunInput, RunView } from "./run-views.ts";
import { STAGING_BUCKET, stagedKey } from "./dataset-staging.ts";

/** Total bytes of a run's URL/R2 dataset files above which they are indexed in the background (default 8 MiB). */
export const DEFAULT_BACKGROUND_INDEX_BYTES = CAPS.backgroundIndexBytes.default;

/** A run being created in the background (stored in the object's KV until the run exists or failed). */
export interface PendingRun {
  input: CreateRunInput;
  /** epoch ms of `POST /runs` */
  createdAtMs: number;
  /** what the background pass is doing now (a copy into R2 and its bytes so far), shown as the view's `waitingFor` */
  progress?: string;
  /** set when the index pass (or a stop) ended the creation: the run never started */
  failure?: { message: string; issues: Issue[]; atMs: number; stopped: boolean };
}

const KEY = "pendingRun";

/** What is used of the object's synchronous KV (`ctx.storage.kv`). */
export interface KvLike {
  get<T>(key: string): T | undefined;
  put<T>(key: string, value: T): void;
  delete(key: string): boolean;
}

/** The pending run of an object, over its synchronous KV. */
export class PendingRuns {
  constructor(private readonly kv: KvLike) {}

  get(): PendingRun | null {
    return this.kv.get<PendingRun>(KEY) ?? null;
  }

  begin(input: CreateRunInput, nowMs: number): PendingRun {
    const p: PendingRun = { input, createdAtMs: nowMs };
    this.kv.put(KEY, p);
    return p;
  }

  /** Ends the creation: the run never starts (`stopped`: by `POST /runs/:id/stop`, not by a problem). */
  fail(issues: Issue[], nowMs: number, stopped = false): PendingRun | null {
    const p = this.get();
    if (!p || p.failure) return p;
    const message = stopped ? "stopped while its datasets were being indexed" : `the run's datasets could not be used: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`;
    // the run never starts: its secrets are not kept (a started run's are deleted when it finishes)
    const { sealedSecrets: _dropped, ...input } = p.input;
    const failed: PendingRun = { ...p, input: { ...input, spec: { ...input.spec, secrets: {} } }, failure: { message, issues, atMs: nowMs, stopped } };
    this.kv.put(KEY, failed);
    return failed;
  }

  /** Records what the background pass is doing (a no-op once the creation ended). */
  setProgress(progress: string): void {
    const p = this.get();
    if (p && !p.failure) this.kv.put(KEY, { ...p, progress });
  }

  /** The run exists now: its own state answers from here on. */
  clear(): void {
    this.kv.delete(KEY);
  }
}

/** The pending run's view (`indexing`, or its failed creation), or null when nothing is pending. */
export function pendingView(kv: KvLike, nowMs: number): RunView | null {
  const pending = new PendingRuns(kv).get();
  return pending && pendingRunView(pending, nowMs);
}

/**
 * The view of a run that is still being indexed (phase `indexing`), or whose creation failed (phase `finished`, stop
 * reason `failed` or `stopRequested`, `failure` naming what was wrong). No episode has run.
 */
export function pendingRunView(p: PendingRun, nowMs: number): RunView {
  const { spec } = p.input;
  const failed = p.failure;
  const totals: RunStatus["totals"] = {
    windows: 0, episodesEnded: 0, groupsOpened: 0, groupsCompleted: 0, groupsDropped: 0, groupsAbandoned: 0, groupsCut: 0, episodesCut: 0, attemptsFailed: 0,
    claimFailures: 0, dispatches: 0, reconciles: 0, episodesWiped: 0, groupsRerun: 0, groupsToppedUp: 0,
    endsUnresolved: 0, endsInferred: 0, endsUnknown: 0, meanReward: null,
  };
  const files = Object.entries(p.input.sources).filter(([, s]) => s.type === "file").map(([name]) => name);
  return {
    phase: failed ? "finished" : "indexing",
    stopReason: failed ? (failed.stopped ? "stopRequested" : "failed") : null,
    episodeType: spec.episodeType,
    gateOpen: false,
    engines: spec.swarms.map((s) => ({ swarm: s.name, engineStatus: "unknown", globalStep: null, seenAtMs: null })),
    globalStep: null,
    currentWindow: null,
    episodes: { queued: 0, dispatched: 0, running: 0, reporting: 0, ended: 0, failed: 0, aborted: 0, dropped: 0, inFlight: 0, maxParallel: spec.maxParallel },
    steps: [],
    totals,
    failuresByCause: {},
    claimFailuresByKind: {},
    firstFailure: null,
    sources: [],
    batches: { open: [], trained: 0, wiped: 0, episodesTrained: 0, episodesUntrained: 0, episodesWiped: 0, groupsRerun: 0, groupsToppedUp: 0, exactMix: true, note: null },
    nextWakeAtMs: null,
    runId: p.input.runId,
    createdAtMs: p.createdAtMs,
    finishedAtMs: null, // no episode ran: a failed creation has no run span
    function: spec.function,
    swarms: spec.swarms.map((s) => ({ name: s.name, url: s.url, engine: s.engine })),
    datasets: p.input.loadReports,
    waitingFor: failed ? null : p.progress ? `${p.progress} for ${Math.max(0, Math.round((nowMs - p.createdAtMs) / 1000))} s` : `indexing dataset${files.length === 1 ? "" : "s"} ${files.join(", ")} for ${Math.max(0, Math.round((nowMs - p.createdAtMs) / 1000))} s (the run starts once every row is indexed)`,
    failure: failed?.message ?? null,
    engineNotes: {},
    log: [],
  };
}

/** What the background creation needs of the run's object. */
export interface IndexingHost {
  pending: PendingRuns;
  /** the quick check of the run's dataset files (edge/run/datasets `statFiles`) */
  statFiles(input: CreateRunInput): Promise<{ bytes: number; files: number; issues: Issue[]; stage: string[] }>;
  /** forgets every dataset row (a creation that failed) */
  clearDatasets(): void;
  /** forgets the file datasets' index rows, keeping staged inline rows (an index pass that starts again after a reset) */
  clearIndexes(): void;
  /** the Worker's vars (`AJET_BACKGROUND_INDEX_BYTES`) */
  env: object;
  /** wakes the object's alarm now (the background creation runs there) */
  wakeNow(): Promise<void>;
  /** the inline creation (index pass included); `wanted` is asked before anything is stored */
  create(input: CreateRunInput, wanted: () => boolean): Promise<{ view: RunView | null; issues: Issue[] }>;
  /** gives the run's slot back to its token's quota (a creation that failed) */
  releaseQuota(input: CreateRunInput): Promise<void>;
  /** starts deleting the run's copies in R2 (edge/run/dataset-staging `dropStagedLater`); never waited on, never throws */
  dropStaged(runId: string): void;
}

/** Whether the creation copies a file into R2 first (a plan with `stageFrom`): its end has copies to delete. */
function stagesFiles(input: CreateRunInput): boolean {
  return Object.values(input.sources).some((s) => s.type === "file" && s.stageFrom !== undefined);
}

function backgroundThreshold(input: CreateRunInput, env: object): number {
  if (input.backgroundIndexBytes !== undefined) return input.backgroundIndexBytes;
  return capsFrom(env).backgroundIndexBytes;
}

/**
 * The front of `create`: a run already pending answers with its view; unreachable dataset files answer their issues;
 * files over the threshold start the background creation (the view in phase `indexing`). Null: create inline.
 */
export async function beginCreate(input: CreateRunInput, host: IndexingHost, nowMs: number): Promise<{ view: RunView | null; issues: Issue[] } | null> {
  const pending = host.pending.get();
  if (pending) {
    if (pending.input.runId !== input.runId) throw new Error(`this object already holds run ${pending.input.runId}`);
    return { view: pendingRunView(pending, nowMs), issues: [] };
  }
  const files = await host.statFiles(input);
  if (files.issues.length) {
    host.clearDatasets();
    return { view: null, issues: files.issues };
  }
  // files without Range support are copied into R2 by the background pass, then read from there (edge/run/dataset-staging)
  if (files.stage.length) return moveToBackground(withStaging(input, files.stage), host, nowMs);
  if (files.files === 0 || files.bytes <= backgroundThreshold(input, host.env)) return null;
  return moveToBackground(input, host, nowMs);
}

/** The input with `names`' file plans read from their R2 copies (`stageFrom`: the URL the copy is made from). */
function withStaging(input: CreateRunInput, names: readonly string[]): CreateRunInput {
  const sources = { ...input.sources };
  for (const name of names) {
    const plan = sources[name];
    if (plan?.type === "file") sources[name] = { ...plan, url: `r2://${STAGING_BUCKET}/${stagedKey(input.runId, name)}`, stageFrom: plan.url };
  }
  return { ...input, sources };
}

/**
 * A run whose inline index pass met a host too slow for its bounds (DatasetSlowError): it is created in the
 * background instead (as a large file is), the answer is its view in phase `indexing`. The background pass keeps its
 * bounds (first byte, idle, `indexBudgetSeconds`); a host that never delivers fails the run there, naming the dataset.
 */
export async function moveToBackground(input: CreateRunInput, host: IndexingHost, nowMs: number): Promise<{ view: RunView; issues: [] }> {
  const started = host.pending.begin(input, nowMs);
  await host.wakeNow();
  return { view: pendingRunView(started, nowMs), issues: [] };
}

/**
 * The alarm's part: runs a pending creation (the index pass and the checks after it). Problems, a stop meanwhile, or
 * an unexpected error end it: the run fails with them named, its dataset rows and copies in R2 are forgotten, its
 * quota slot freed. Never throws.
 */
export async function finishPendingCreate(host: IndexingHost, now: () => number): Promise<void> {
  const pending = host.pending.get();
  if (!pending || pending.failure) return;
  const wanted = () => !host.pending.get()?.failure;
  let issues: Issue[];
  host.clearIndexes(); // an alarm retried after a reset runs the pass from the start: no row may count as seen twice
  try {
    const created = await host.create(pending.input, wanted);
    if (created.view) {
      host.pending.clear();
      return;
    }
    issues = created.issues;
  } catch (err) {
    host.clearDatasets();
    issues = [{ code: "invalid", path: "(datasets)", message: err instanceof Error ? err.message : String(err) }];
  }
  // the run never starts: a copy made for it is of no use (a stop meanwhile may have come before the copy was done)
  if (stagesFiles(pending.input)) host.dropStaged(pending.input.runId);
  if (!wanted()) return; // stopped meanwhile: the stop released the slot
  host.pending.fail(issues, now());
  await host.releaseQuota(pending.input).catch(() => undefined);
}

/** `POST /runs/:id/stop` while the run is indexed: it never starts. @returns its view, null when nothing is pending */
export async function stopPendingCreate(host: IndexingHost, nowMs: number): Promise<RunView | null> {
  const pending = host.pending.get();
  if (!pending) return null;
  if (!pending.failure) {
    host.pending.fail([], nowMs, true);
    await host.releaseQuota(pending.input).catch(() => undefined);
    // a copy already made goes now; one still being made goes when the pass ends (finishPendingCreate)
    if (stagesFiles(pending.input)) host.dropStaged(pending.input.runId);
  }
  return pendingRunView(host.pending.get()!, nowMs);
}
