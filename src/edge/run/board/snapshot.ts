/**
 * @module edge/run/board/snapshot — what the run page shows, built from the Durable Object's state (pure): the run
 * view, the reward curves per step (all, per source, per swarm server, with spread), the learning signals per step,
 * the run's cost, failures by cause per step,
 * episodes per minute, the in-flight table (like `ajet-swarm overwatch`) and the eval report. The DO sends it to
 * every connected viewer (edge/run/board/live) and answers `GET /runs/:id/dashboard` with it.
 */
import type { CurrentBatchRolloutPoolInformation } from "../../../protocol/index.ts";
import { isInFlight, type SchedulerState } from "../../../scheduler/index.ts";
import type { RunReport, RunView } from "../run-views.ts";
import type { AttemptRow } from "../attempts.ts";
import { ALL, type MetricsGroup, type RunMetrics } from "./metrics.ts";

/** One in-flight episode. Ages are seconds; LLM fields come from the swarm server's pool information. */
export interface InFlightRow {
  episodeKey: string;
  taskId: string;
  repeat: number;
  attempt: number;
  status: string;
  /** the swarms the episode holds claims on (none yet while dispatched) */
  swarms: string[];
  /** seconds since the dispatch */
  ageSeconds: number | null;
  /** the server's `time_since_last_activity` (e.g. "12.3s") of the first claim, when the server said */
  sinceLastLlmActivity: string | null;
  /** the server's `llm_call_count`, summed over the claims it reported */
  llmCalls: number | null;
}

/** One line of a reward chart: y per step (1-based), the spread as mean ± std. */
export interface RewardSeries {
  label: string;
  kind: "all" | "source" | "swarm";
  windows: number[];
  mean: (number | null)[];
  std: (number | null)[];
  /** the band drawn around the line: mean ± std cut to the window's lowest and highest reward (never outside them) */
  low: (number | null)[];
  high: (number | null)[];
}

type WindowGroup = RunMetrics["groups"][number];

/** A reward line over `windows` from the metrics group of each window (absent group: gaps). */
function rewardSeries(label: string, kind: RewardSeries["kind"], windows: number[], group: (window: number) => WindowGroup | undefined, mean?: (number | null)[]): RewardSeries {
  const gs = windows.map(group);
  const means = mean ?? gs.map((g) => g?.rewardMean ?? null);
  const band = (i: number, sign: 1 | -1): number | null => {
    const g = gs[i];
    const m = means[i] ?? null;
    if (!g || m === null || g.rewardStd === null || g.rewardMin === null || g.rewardMax === null) return null;
    return Math.min(g.rewardMax, Math.max(g.rewardMin, m + sign * g.rewardStd));
  };
  return { label, kind, windows, mean: means, std: gs.map((g) => g?.rewardStd ?? null), low: windows.map((_, i) => band(i, -1)), high: windows.map((_, i) => band(i, 1)) };
}

/**
 * The learning signals per window, read from the metrics export's all-sources, all-swarms group of each window
 * (edge/run/board/signals), so the charts and `GET /runs/:id/metrics` show the same numbers. x = the 1-based window.
 */
export interface SignalSeries {
  windows: number[];
  zeroAdvantageShare: (number | null)[];
  allZeroShare: (number | null)[];
  allOneShare: (number | null)[];
  responseCharsMean: (number | null)[];
  responseCharsP95: (number | null)[];
  completionTokensMean: (number | null)[];
  completionTokensP95: (number | null)[];
  promptTokensMean: (number | null)[];
  lengthCutShare: (number | null)[];
  latencyP50Ms: (number | null)[];
  latencyP95Ms: (number | null)[];
  tokensPerSecond: (number | null)[];
  turnsMean: (number | null)[];
  toolCallsMean: (number | null)[];
  /** the window's time split, seconds */
  rolloutS: (number | null)[];
  trainerWaitS: (number | null)[];
  weightSyncS: (number | null)[];
  /** the reward histogram: the run's bin edges and each window's counts */
  histogramEdges: number[];
  histograms: number[][];
}

/** The run page's data. */
export interface DashboardSnapshot {
  view: RunView;
  /** x = the run's 1-based window; the "all" line is the API's per-window mean (`steps[].meanReward`) */
  rewards: RewardSeries[];
  /** the functions' `log_metrics`: per key, the mean of every value reported in each window (null: none reported) */
  logMetrics: { windows: number[]; byKey: Record<string, (number | null)[]> };
  successRate: { windows: number[]; rate: (number | null)[] };
  /** failures per step by cause, from the reported attempts */
  failures: { windows: number[]; byCause: Record<string, number[]> };
  signals: SignalSeries;
  /** what the run costs so far (edge/run/board/cost), null when the object did not price it */
  cost: RunMetrics["cost"] | null;
  /** ended episodes per minute over the run so far (null before the first ends) */
  episodesPerMinute: number | null;
  inFlight: InFlightRow[];
  /** the newest reported attempts, newest first (links to transcripts) */
  recent: AttemptRow[];
  eval: RunReport["eval"];
  atMs: number;
}

/** The in-flight rows of a state. @param pools the latest pool information per swarm (may be missing) */
export function inFlightRows(
  state: SchedulerState,
  taskIdOf: (source: string, taskIndex: number) => string,
  pools: Readonly<Record<string, CurrentBatchRolloutPoolInformation | undefined>>,
  nowMs: number,
): InFlightRow[] {
  const rows = [...state.episodes.values()].filter((e) => isInFlight(e.status));
  rows.sort((a, b) => (a.dispatchedAtMs ?? 0) - (b.dispatchedAtMs ?? 0));
  return rows.map((e) => {
    let since: string | null = null;
    let calls: number | null = null;
    for (const c of e.claims) {
      const detail = pools[c.swarm]?.running_episode_details?.[c.episodeUuid];
      if (!detail) continue;
      since ??= detail["time_since_last_activity"] ?? null;
      const n = Number(detail["llm_call_count"]);
      if (Number.isFinite(n)) calls = (calls ?? 0) + n;
    }
    let taskId = "";
    try {
      taskId = taskIdOf(e.source, e.taskIndex);
    } catch {
      taskId = `${e.source}[${e.taskIndex}]`;
    }
    return {
      episodeKey: e.episodeKey, taskId, repeat: e.repeat, attempt: e.attempt, status: e.status, swarms: e.claims.map((c) => c.swarm),
      ageSeconds: e.dispatchedAtMs !== null ? Math.max(0, (nowMs - e.dispatchedAtMs) / 1000) : null,
      sinceLastLlmActivity: since, llmCalls: calls,
    };
  });
}

/**
 * The page's data.
 * @param recent the newest reported attempts, newest first
 */
export function dashboardSnapshot(input: {
  view: RunView;
  metrics: RunMetrics;
  inFlight: InFlightRow[];
  recent: AttemptRow[];
  evalReport: RunReport["eval"];
  /** the run's start and finish (epoch ms): episodes per minute are over this span */
  startedAtMs: number | null;
  finishedAtMs: number | null;
  nowMs: number;
}): DashboardSnapshot {
  const { view, metrics } = input;
  const windows = view.steps.map((s) => s.windowIndex + 1);
  const trainGroups = metrics.groups.filter((g) => g.window !== null);
  const groupAt = (window: number, source: string, swarm: string) => trainGroups.find((g) => g.window === window && g.source === source && g.swarm === swarm);
  const rewards: RewardSeries[] = [rewardSeries("all", "all", windows, (n) => groupAt(n, ALL, ALL), view.steps.map((s) => s.meanReward))];
  const sources = Object.keys(view.datasets);
  if (sources.length > 1) for (const s of sources) rewards.push(rewardSeries(`source ${s}`, "source", windows, (n) => groupAt(n, s, ALL)));
  if (view.swarms.length > 1) for (const s of view.swarms) rewards.push(rewardSeries(`swarm ${s.name}`, "swarm", windows, (n) => groupAt(n, ALL, s.name)));
  const metricKeys = [...new Set(trainGroups.filter((g) => g.source === ALL && g.swarm === ALL).flatMap((g) => Object.keys(g.logMetrics)))].sort();
  const byKey = Object.fromEntries(metricKeys.map((k) => [k, windows.map((n) => groupAt(n, ALL, ALL)?.logMetrics[k]?.mean ?? null)]));
  const causes = [...new Set(trainGroups.filter((g) => g.source === ALL && g.swarm === ALL).flatMap((g) => Object.keys(g.failuresByCause)))].sort();
  const byCause = Object.fromEntries(causes.map((c) => [c, windows.map((n) => groupAt(n, ALL, ALL)?.failuresByCause[c] ?? 0)]));
  const all = windows.map((n) => groupAt(n, ALL, ALL));
  const pick = (f: (g: MetricsGroup) => number | null | undefined) => all.map((g) => (g ? (f(g) ?? null) : null));
  const sec = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : ms / 1000);
  const edges = metrics.histogramEdges;
  const signals: SignalSeries = {
    windows,
    zeroAdvantageShare: pick((g) => g.signals.zeroAdvantageShare),
    allZeroShare: pick((g) => g.signals.allZeroShare),
    allOneShare: pick((g) => g.signals.allOneShare),
    responseCharsMean: pick((g) => g.signals.responseChars?.mean),
    responseCharsP95: pick((g) => g.signals.responseChars?.p95),
    completionTokensMean: pick((g) => g.signals.completionTokens?.mean),
    completionTokensP95: pick((g) => g.signals.completionTokens?.p95),
    promptTokensMean: pick((g) => g.signals.promptTokens?.mean),
    lengthCutShare: pick((g) => g.signals.lengthCutShare),
    latencyP50Ms: pick((g) => g.signals.latencyP50Ms),
    latencyP95Ms: pick((g) => g.signals.latencyP95Ms),
    tokensPerSecond: pick((g) => g.signals.tokensPerSecond),
    turnsMean: pick((g) => g.signals.turns?.mean),
    toolCallsMean: pick((g) => g.signals.toolCalls?.mean),
    rolloutS: pick((g) => sec(g.signals.stepTime?.rolloutMs)),
    trainerWaitS: pick((g) => sec(g.signals.stepTime?.trainerWaitMs)),
    weightSyncS: pick((g) => sec(g.signals.stepTime?.weightSyncMs)),
    histogramEdges: edges,
    histograms: all.map((g) => g?.signals.histogram ?? []),
  };
  const minutes = ((input.finishedAtMs ?? input.nowMs) - (input.startedAtMs ?? view.createdAtMs)) / 60_000;
  return {
    view,
    rewards,
    logMetrics: { windows, byKey },
    successRate: { windows, rate: windows.map((n) => groupAt(n, ALL, ALL)?.successRate ?? null) },
    failures: { windows, byCause },
    signals,
    cost: metrics.cost ?? null,
    episodesPerMinute: view.totals.episodesEnded > 0 && minutes > 0 ? view.totals.episodesEnded / minutes : null,
    inFlight: input.inFlight,
    recent: input.recent,
    eval: input.evalReport,
    atMs: input.nowMs,
  };
}
