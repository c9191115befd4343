/**
 * @module edge/run/board/run-dashboard — the RolloutScheduler's dashboard side: the metrics export, the run page's
 * snapshot and the shared pool-information cache behind the in-flight table (one read of each swarm's pool at
 * most every {@link POOL_REFRESH_MS}, however many viewers; none when nobody watches or nothing is in flight).
 * The Durable Object only forwards to it.
 */
import type { CurrentBatchRolloutPoolInformation } from "../../../protocol/index.ts";
import type { SchedulerState } from "../../../scheduler/index.ts";
import { runReport, type RunMeta, type RunView } from "../run-views.ts";
import type { SchedulerStorage } from "../storage.ts";
import type { AttemptRow } from "../attempts.ts";
import { metricsCsv, metricsJsonl, runMetrics, withSandboxSeconds, type RunMetrics } from "./metrics.ts";
import { pricesFrom, runCost, type RunCost, type RunUsage } from "./cost.ts";
import type { EngineMark } from "./signals.ts";
import type { Env } from "../../ground/env.ts";
import { transcriptSettings } from "../../ground/transcripts.ts";
import { dashboardSnapshot, inFlightRows, type DashboardSnapshot } from "./snapshot.ts";

/** How old the cached pool information may be before the in-flight table reads it again (ms). */
export const POOL_REFRESH_MS = 5_000;
/** Reported attempts the page lists (newest first). */
const RECENT_ATTEMPTS = 50;

/** What the dashboard reads of its Durable Object. */
export interface RunDashboardHost {
  storage: SchedulerStorage;
  state(): SchedulerState | null;
  meta(): RunMeta | null;
  /** the run's API view (`GET /runs/:id`: engine notes and what the run waits for included), null without a run */
  view(): RunView | null;
  /** one swarm's pool information (the DO's client) */
  poolInfo(swarm: string): Promise<CurrentBatchRolloutPoolInformation>;
  /** the engine statuses the run saw change on `swarm`, oldest first (edge/run/engine-timeline) */
  marks(swarm: string): EngineMark[];
  /** the run's counted platform use (edge/run/usage) */
  usage(): RunUsage;
  /** the Worker's vars: `AJET_PRICES`, the transcripts' retention */
  env: Pick<Env, "AJET_PRICES" | "TRANSCRIPT_RETENTION_DAYS" | "TRANSCRIPT_MAX_BYTES">;
}

/** One per Durable Object instance. */
export class RunDashboard {
  #pools: Record<string, CurrentBatchRolloutPoolInformation | undefined> = {};
  #poolsAtMs = 0;

  constructor(private readonly host: RunDashboardHost) {}

  /** The metrics export (learning signals and the run's cost included), or null when the object holds no run. */
  metrics(nowMs = Date.now()): RunMetrics | null {
    const state = this.host.state();
    const meta = this.host.meta();
    if (!state || !meta) return null;
    const swarms = meta.spec.swarms.map((s) => s.name);
    const closedAtMs = Object.fromEntries(Object.values(state.steps).map((w) => [w.windowIndex + 1, w.closedAtMs]));
    const timing = { closedAtMs, marks: swarms[0] ? this.host.marks(swarms[0]) : [] };
    const metrics = runMetrics(meta.runId, this.host.storage.attempts(), state.run.config.sources.map((s) => s.name), swarms, state.run.config.successThreshold, timing);
    const sandboxes = this.host.view()?.sandboxes;
    return { ...(sandboxes ? withSandboxSeconds(metrics, sandboxes.byWindow) : metrics), cost: this.cost(nowMs) ?? undefined };
  }

  /** What the run costs so far (edge/run/board/cost), or null when the object holds no run. */
  cost(nowMs = Date.now()): RunCost | null {
    const state = this.host.state();
    const meta = this.host.meta();
    if (!state || !meta) return null;
    const steps = Object.values(state.steps).filter((w) => w.episodesEnded > 0).length;
    const activeMs = Math.max(0, (state.run.finishedAtMs ?? nowMs) - meta.createdAtMs);
    const retentionDays = transcriptSettings(this.host.env).retentionMs / 86_400_000;
    return runCost(this.host.usage(), pricesFrom(this.host.env.AJET_PRICES).prices, { steps, episodes: state.run.totals.episodesEnded, activeMs, transcriptRetentionDays: retentionDays });
  }

  /** Reported attempts of one 0-based step (window), oldest first, at most `limit` (default 1000, at most 10 000). Null: no run. */
  attempts(query: { windowIndex?: number; limit?: number }): AttemptRow[] | null {
    if (!this.host.state()) return null;
    return this.host.storage.attempts({ windowIndex: query.windowIndex, limit: Math.min(query.limit ?? 1000, 10_000) });
  }

  /** The export as CSV (see metrics `metricsCsv`), or null. */
  metricsCsv(): string | null {
    const m = this.metrics();
    return m && metricsCsv(m);
  }

  /** The export as JSON Lines (see metrics `metricsJsonl`), or null. */
  metricsJsonl(): string | null {
    const m = this.metrics();
    return m && metricsJsonl(m);
  }

  /** The run page's data, or null when the object holds no run. */
  async snapshot(nowMs = Date.now()): Promise<DashboardSnapshot | null> {
    const state = this.host.state();
    const meta = this.host.meta();
    const metrics = this.metrics();
    const view = this.host.view();
    if (!state || !meta || !metrics || !view) return null;
    const { storage } = this.host;
    const taskIdOf = (source: string, taskIndex: number) => storage.taskId(source, taskIndex);
    await this.#refreshPools(state, nowMs);
    const report = runReport(state, storage.summary(), taskIdOf);
    return dashboardSnapshot({
      view,
      metrics,
      inFlight: inFlightRows(state, taskIdOf, this.#pools, nowMs),
      recent: storage.attempts({ limit: RECENT_ATTEMPTS, newest: true }),
      evalReport: report.eval,
      startedAtMs: state.run.startedAtMs,
      finishedAtMs: state.run.finishedAtMs,
      nowMs,
    });
  }

  async #refreshPools(state: SchedulerState, nowMs: number): Promise<void> {
    const inFlight = state.episodes.some((e) => e.claims.length > 0 && (e.status === "running" || e.status === "reporting"));
    if (!inFlight) {
      this.#pools = {};
      return;
    }
    if (nowMs - this.#poolsAtMs < POOL_REFRESH_MS) return;
    this.#poolsAtMs = nowMs;
    const swarms = state.run.config.swarms;
    const read = await Promise.all(swarms.map((s) => this.host.poolInfo(s).catch(() => undefined)));
    this.#pools = Object.fromEntries(swarms.map((s, i) => [s, read[i]]));
  }
}
