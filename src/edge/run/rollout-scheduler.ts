/**
 * @module edge/run/rollout-scheduler — `RolloutScheduler`, the Durable Object that owns one run (issue 3 §2): its RPC
 * surface, each call documented on `RunObjectRpc` (edge/run/run-object-rpc.ts). Every call and every alarm goes through
 * the run's loop (edge/run/run-loop.ts: decide → persist → arm → execute), so events are idempotent by
 * `(episodeKey, attempt)`: alarms, queue deliveries and RPCs are at least once. What a call writes around the core's
 * answer lives with its owner: creation (run-create), views (run-views), the outbox and ledger (report-ledger), stop
 * watches (stop-waiters), the dashboard (edge/dashboard).
 */
import { DurableObject } from "cloudflare:workers";
import type { ClaimAck, ClaimFailureReport, ClaimReport, EndedEpisode, EventAck, HeartbeatAck, HeartbeatReport, OutcomeReport, ResultReport, SandboxIntent, SandboxIntentAnswer, SandboxRelease } from "../../port/index.ts";
import type { Task } from "../../protocol/index.ts";
import type { AttemptRow } from "./attempts.ts";
import { noRunResponse } from "./board/live.ts";
import type { RunMetrics } from "./board/metrics.ts";
import type { DashboardSnapshot } from "./board/snapshot.ts";
import { isReadOnly, type Env } from "../ground/env.ts";
import { endedPage, recordOutcome } from "./report-ledger.ts";
import { capsFrom } from "../ground/caps.ts";
import { prepareRun, stageTasks, type StagedTasks } from "./run-create.ts";
import { beginCreate, finishPendingCreate, moveToBackground, type IndexingHost, PendingRuns, pendingView, stopPendingCreate } from "./run-indexing.ts";
import { RunLoop } from "./run-loop.ts";
import type { RunObjectRpc } from "./run-object-rpc.ts";
import { runListing, runReport, type CreateRunInput, type CreateRunResult, type RunListing, type RunReport, type RunView } from "./run-views.ts";
import { callObject } from "../ground/do-call.ts";
import { sealSecrets } from "../ground/secrets-at-rest.ts";
import { dropStagedLater, stageRunFiles } from "./dataset-staging.ts";
import { jsonLogger } from "../ground/log.ts";
import { hostTiming, stagingBucket } from "./datasets.ts";

/** The episode port's answer for a run this object does not hold: the consumer gives its claim back and acks. */
const NO_RUN: EventAck = { status: "unknown", reason: "no such run (deleted, or never created here)" };

/** The Durable Object of one run. Its RPC methods are {@link RunObjectRpc}'s; the Workers runtime calls `alarm`, `fetch` and the WebSocket handlers. */
export class RolloutScheduler extends DurableObject<Env> implements RunObjectRpc {
  /** the run and its loop, loaded once per wake */
  #run!: RunLoop;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      this.#run = new RunLoop(ctx, env);
      await this.#run.open();
    });
  }

  /**
   * Counts one request to this object (edge/run/usage): every RPC call and alarm is a billed Durable Object request;
   * an API route's call (`api`) is also one Worker request.
   */
  #count(kind: "api" | "port" | "object"): void {
    this.#run.usage.add("doRequests");
    if (kind === "api") this.#run.usage.add("apiRequests");
  }

  // ---- control -------------------------------------------------------------------------------------------------

  stageTasks(input: StagedTasks): void {
    this.#count("object");
    stageTasks(this.#run.parts.storage, this.#run.meta?.runId, input);
  }

  async create(given: CreateRunInput): Promise<CreateRunResult> {
    this.#count("api");
    const run = this.#run;
    // plaintext secrets are sealed before anything is stored (the API seals them already; a direct caller may not)
    const input = Object.keys(given.spec.secrets).length === 0 ? given : { ...given, spec: { ...given.spec, secrets: {} }, sealedSecrets: await sealSecrets(given.spec.secrets, given.runId, this.env.AJET_SECRETS_KEY) };
    if (run.meta) {
      if (run.meta.runId !== input.runId) throw new Error(`this object already holds run ${run.meta.runId}`);
      return { view: run.view()!, issues: [] };
    }
    // large URL/R2 datasets are indexed in the background (edge/run/run-indexing): the answer is the `indexing` view
    // small files are indexed here, within the caps' inline budget (POST /runs answers within a bound, edge/ground/caps)
    const begun = await beginCreate(input, this.#indexing(), Date.now());
    if (begun) return begun;
    const inline = await this.#create(input, () => true, capsFrom(this.env).inlineIndexSeconds);
    // a host too slow for the inline pass's bounds: the run moves to the background pass, as a large file does
    return inline.slow ? moveToBackground(input, this.#indexing(), Date.now()) : inline;
  }

  /**
   * The creation itself (index pass, checks, first state); nothing is stored unless `wanted()` still holds after the
   * pass. `budgetSeconds`: the index pass's time budget (past it the run is refused naming the file).
   */
  async #create(input: CreateRunInput, wanted: () => boolean, budgetSeconds: number, background = false): Promise<CreateRunResult & { slow?: boolean }> {
    const run = this.#run;
    const nowMs = Date.now();
    const prepared = await prepareRun(input, { datasets: run.parts.datasets, storage: run.parts.storage, env: this.env, nowMs, indexDeadlineAtMs: nowMs + budgetSeconds * 1000, background });
    if (!("state" in prepared)) return { view: null, issues: prepared.issues, slow: prepared.slow };
    if (!wanted()) {
      run.parts.storage.clearDatasets();
      return { view: null, issues: [] };
    }
    await run.start(prepared);
    return { view: run.view()!, issues: [] };
  }

  /** What the background creation needs of this object (edge/run/run-indexing). */
  #indexing(): IndexingHost {
    const { storage, datasets } = this.#run.parts;
    return {
      pending: new PendingRuns(this.ctx.storage.kv),
      statFiles: (input) => datasets.statFiles(input),
      clearDatasets: () => storage.clearDatasets(),
      clearIndexes: () => storage.clearFileIndexes(),
      env: this.env,
      wakeNow: () => this.ctx.storage.setAlarm(Date.now()),
      create: async (input, wanted) => {
        const budgetSeconds = capsFrom(this.env).indexBudgetSeconds;
        const deadlineAtMs = Date.now() + budgetSeconds * 1000;
        const staging = { bucket: stagingBucket(this.env), fetch: this.#run.parts.datasets.fetch, timing: hostTiming(this.env, true), deadlineAtMs, pending: new PendingRuns(this.ctx.storage.kv) };
        const issues = await stageRunFiles(input, staging, () => this.#run.parts.storage.clearDatasets());
        return issues.length ? { view: null, issues } : this.#create(input, wanted, budgetSeconds, true);
      },
      releaseQuota: async (input) => {
        const { principal } = input;
        if (principal) await callObject(() => this.env.RUN_QUOTA.get(this.env.RUN_QUOTA.idFromName(principal)).release(input.runId));
      },
      dropStaged: (runId) => void dropStagedLater(stagingBucket(this.env), runId, (level, message) => jsonLogger({ run: runId })[level](message)),
    };
  }

  status(): RunView | null {
    this.#count("api");
    return this.#run.view() ?? pendingView(this.ctx.storage.kv, Date.now());
  }

  listing(): RunListing | null {
    this.#count("object");
    const view = this.status();
    return view && runListing(view);
  }

  async stop(reason = "stop requested"): Promise<RunView | null> {
    this.#count("api");
    if (!this.#run.state) return stopPendingCreate(this.#indexing(), Date.now());
    await this.#run.apply({ type: "stopRequested", reason }, true);
    return this.#run.view();
  }

  report(): RunReport | null {
    this.#count("api");
    const { state, parts } = this.#run;
    return state && runReport(state, parts.storage.summary(), (source, taskIndex) => parts.storage.taskId(source, taskIndex));
  }

  endedEpisodes(query: { globalStep?: number; limit?: number; offset?: number } = {}): EndedEpisode[] | null {
    this.#count("api");
    return this.#run.state ? endedPage(this.#run.parts.storage, query) : null;
  }

  engineChanged(swarm: string): Promise<void> {
    this.#count("object");
    return this.#run.engineChanged(swarm);
  }

  // ---- episode port (called by queue consumers) ------------------------------------------------------------------

  async episodeClaimed(report: ClaimReport): Promise<ClaimAck> {
    this.#count("port");
    if (!this.#run.state) return NO_RUN;
    // secrets that no longer decrypt: the run fails (fail closed), no episode goes on without them
    if (this.#run.secretsProblem) {
      await this.#run.failForSecrets();
      return { status: "stale", reason: this.#run.secretsProblem };
    }
    const ack = await this.#run.apply({ type: "episodeClaimed", ...report });
    if (ack.status !== "applied" && ack.status !== "duplicate") return ack;
    // `duplicate` = these very claims were applied before: a resent RPC whose first answer was lost, or a later holder
    // of a handed-over attempt asking again (docs/design/long-episodes.md). The secrets go only to the episode's
    // running attempt and dispatch; a closed attempt with the same claims is told stale
    if (ack.status === "duplicate" && !this.#runningDispatch(report)) return { status: "stale", reason: `attempt ${report.attempt} of ${report.episodeKey} is no longer running` };
    return { ...ack, secrets: this.#run.meta?.spec.secrets ?? {} };
  }

  /** Whether `ref` is the episode's current attempt and dispatch and it is running (claimed, no outcome yet). */
  #runningDispatch(ref: { episodeKey: string; attempt: number; dispatchId: number }): boolean {
    const row = this.#run.state?.episodes.get(ref.episodeKey);
    return row !== undefined && row.attempt === ref.attempt && row.dispatchId === ref.dispatchId && row.status === "running";
  }

  async episodeHeartbeat(report: HeartbeatReport, options: { holdMs?: number } = {}): Promise<HeartbeatAck> {
    this.#count("port");
    // every invocation of an episode message sends one `started` beat first: the run's count of episode invocations
    if (report.stage === "started") this.#run.usage.add("episodeInvocations");
    if (!this.#run.state) return NO_RUN;
    const ack = await this.#run.apply({ type: "episodeHeartbeat", ...report });
    // a running function's beat is held until the run stops or the hold ends: its one stop channel
    if (report.stage === "started" || (ack.status !== "applied" && ack.status !== "duplicate")) return ack;
    const cut = () => this.#run.state?.episodes.get(report.episodeKey)?.cut === true;
    return this.#run.stopWaiters.hold(ack, () => this.#run.state?.run, options.holdMs ?? 0, cut);
  }

  async claimFailed(report: ClaimFailureReport): Promise<EventAck> {
    this.#count("port");
    return this.#run.state ? this.#run.apply({ type: "claimFailed", ...report }) : NO_RUN;
  }

  async episodeOutcomeRecorded(report: OutcomeReport): Promise<EventAck> {
    this.#count("port");
    const { state, parts } = this.#run;
    if (!state) return NO_RUN;
    return recordOutcome(parts.storage, state.episodes.get(report.episodeKey), report, (event) => this.#run.apply({ type: "episodeOutcomeRecorded", ...event }));
  }

  async episodeReported(report: ResultReport): Promise<EventAck> {
    this.#count("port");
    return this.#run.state ? this.#run.reported(report) : NO_RUN;
  }

  sandboxIntent(intent: SandboxIntent): SandboxIntentAnswer {
    const { state, meta } = this.#run;
    if (!state || !meta) return { status: "stale", reason: "no such run" };
    return this.#run.parts.sandboxes.intent(state, meta, intent, Date.now(), Math.random());
  }

  async sandboxReleased(release: SandboxRelease): Promise<{ status: "applied" | "duplicate" | "unknown" }> {
    if (!this.#run.state) return { status: "unknown" };
    const answer = this.#run.parts.sandboxes.released(release, Date.now());
    // a destroy the attempt could not confirm: the sweep's alarm
    if (release.end === "destroy_unconfirmed") await this.#run.arm();
    return answer;
  }

  swarmHeaders(ref: { episodeKey: string; attempt: number; dispatchId: number }): Record<string, Record<string, string>> | null {
    this.#count("port");
    const row = this.#run.state?.episodes.get(ref.episodeKey);
    if (!row || !this.#run.meta || row.attempt !== ref.attempt || row.dispatchId !== ref.dispatchId) return null;
    // `dispatched`: the consumer before its claim; `running`: a later holder of a handed-over attempt
    if (row.status !== "dispatched" && row.status !== "running") return null;
    return this.#run.gatewayHeaders();
  }

  getTask(ref: { source: string; taskIndex: number }): Promise<Task> {
    this.#count("port");
    return this.#run.parts.datasets.task(ref.source, ref.taskIndex);
  }

  // ---- dashboard (edge/dashboard) ---------------------------------------------------------------------------------

  metrics(): RunMetrics | null {
    this.#count("api");
    return this.#run.parts.dashboard.metrics();
  }

  metricsCsv(): string | null {
    this.#count("api");
    return this.#run.parts.dashboard.metricsCsv();
  }

  metricsJsonl(): string | null {
    this.#count("api");
    return this.#run.parts.dashboard.metricsJsonl();
  }

  dashboard(): Promise<DashboardSnapshot | null> {
    this.#count("api");
    return this.#run.parts.dashboard.snapshot();
  }

  attempts(query: { windowIndex?: number; limit?: number }): AttemptRow[] | null {
    this.#count("api");
    return this.#run.parts.dashboard.attempts(query);
  }

  /** The run page's live feed: a WebSocket upgrade (`GET /runs/:id/live`), hibernatable (edge/run/board/live.ts). */
  override async fetch(request: Request): Promise<Response> {
    this.#count("api");
    return this.#run.state ? this.#run.parts.live.accept(request) : noRunResponse();
  }

  /** A viewer asked again: it is sent the snapshot now. */
  override async webSocketMessage(ws: WebSocket): Promise<void> {
    this.#run.usage.add("websocketMessages");
    await this.#run.parts.live.resend(ws);
  }

  /** A viewer closed its side: ours is closed too. */
  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    this.#run.parts.live.close(ws, code);
  }

  /** One tick of the run's loop (edge/run/run-loop `tick`: never throws, always re-arms, BC-45); none on a read-only Worker. */
  override async alarm(info?: AlarmInvocationInfo): Promise<void> {
    if (isReadOnly(this.env)) return; // a stored run is shown as it was (ajet-edge dashboard): nothing acts on it
    this.#count("object");
    if (!this.#run.state) await finishPendingCreate(this.#indexing(), () => Date.now());
    await this.#run.tick(info?.retryCount ?? 0);
  }
}
