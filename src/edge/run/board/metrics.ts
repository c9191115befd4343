/**
 * @module edge/run/board/metrics — `GET /runs/:id/metrics` (issue 12 §3): the reported attempts aggregated per
 * window (the run's training step), per dataset source and per swarm server — reward mean and spread, success rate, counts, durations,
 * failures by cause and the functions' `log_metrics` — as JSON or CSV. Pure: rows in, tables out.
 */
import type { AttemptRow } from "../attempts.ts";
import type { RunCost } from "./cost.ts";
import { histogramEdges, learningSignals, SIGNAL_COLUMNS, signalRow, stepTime, type EngineMark, type LearningSignals } from "./signals.ts";

/** `"*"` in `source` or `swarm`: every source / every swarm. */
export const ALL = "*";

/** One aggregate. Rewards are over ended (train) or scored (eval) attempts; durations are ms. */
export interface MetricsGroup {
  /** the run's 1-based window (its training step: window index + 1); null for eval attempts */
  window: number | null;
  /** the first swarm's `global_step` most attempts of the group were claimed at */
  globalStep: number | null;
  source: string;
  swarm: string;
  attempts: number;
  /** ended attempts whose reward the server still holds or trained (wiped ones are counted in `wiped`) */
  ended: number;
  /** ended attempts whose server batch was wiped before training: not in `ended` nor in the rewards */
  wiped: number;
  scored: number;
  failed: number;
  rewardMean: number | null;
  /** population standard deviation */
  rewardStd: number | null;
  rewardMin: number | null;
  rewardMax: number | null;
  /** share of rewarded attempts with reward ≥ the run's success threshold */
  successRate: number | null;
  durationMeanMs: number | null;
  durationMaxMs: number | null;
  failuresByCause: Record<string, number>;
  /** `log_metrics` key → mean over every value reported (lists flattened) and the value count */
  logMetrics: Record<string, { mean: number; count: number }>;
  /** GRPO signal, reward histogram, lengths, tokens, latency, turns, the step's time split (edge/run/board/signals) */
  signals: LearningSignals;
  /**
   * seconds the window's sandboxes were (or may have been) alive, from the run's sandbox ledger: on the window's
   * all-sources, all-swarms group of a run that made sandboxes only
   */
  sandboxSeconds?: number;
}

/** The whole export. */
export interface RunMetrics {
  runId: string;
  successThreshold: number;
  /** every window × (all, per source, per swarm), window order; eval attempts come last with window null */
  groups: MetricsGroup[];
  /** the reward histogram's bin edges (every group's `signals.histogram` counts per bin), over the run's reward range */
  histogramEdges: number[];
  /** what the run costs so far on Cloudflare (edge/run/board/cost), when the object priced it */
  cost?: RunCost;
}

/** What the step time split reads besides the attempts: each window's close and the first swarm's status changes. */
export interface MetricsTiming {
  /** 1-based window → when the engine was first seen past its step (epoch ms), null before */
  closedAtMs: Record<number, number | null>;
  marks: readonly EngineMark[];
}

function mostCommon(values: readonly (number | null)[]): number | null {
  const counts = new Map<number, number>();
  for (const v of values) if (v !== null) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best: number | null = null;
  let n = 0;
  for (const [v, c] of counts) if (c > n) [best, n] = [v, c];
  return best;
}

function aggregate(rows: readonly AttemptRow[], key: { window: number | null; source: string; swarm: string }, threshold: number): Omit<MetricsGroup, "signals"> {
  const rewards: number[] = [];
  const durations: number[] = [];
  const failuresByCause: Record<string, number> = {};
  const lm = new Map<string, { sum: number; count: number }>();
  let ended = 0;
  let wiped = 0;
  let scored = 0;
  let failed = 0;
  for (const r of rows) {
    if (r.durationMs !== null) durations.push(r.durationMs);
    if (r.kind === "failed") {
      failed++;
      const cause = r.cause ?? "unknown";
      failuresByCause[cause] = (failuresByCause[cause] ?? 0) + 1;
      continue;
    }
    if (r.kind === "ended" && r.wipedBy) {
      wiped++;
      continue;
    }
    if (r.kind === "ended") ended++;
    else scored++;
    const reward = key.swarm === ALL ? r.reward : (r.swarmRewards[key.swarm] ?? null);
    if (reward !== null) rewards.push(reward);
    for (const [swarm, metrics] of Object.entries(r.logMetrics)) {
      if (key.swarm !== ALL && swarm !== key.swarm) continue;
      for (const [name, value] of Object.entries(metrics)) {
        const acc = lm.get(name) ?? { sum: 0, count: 0 };
        for (const v of Array.isArray(value) ? value : [value]) {
          acc.sum += v;
          acc.count++;
        }
        lm.set(name, acc);
      }
    }
  }
  const n = rewards.length;
  const mean = n ? rewards.reduce((a, b) => a + b, 0) / n : null;
  return {
    ...key,
    globalStep: mostCommon(rows.map((r) => r.globalStep)),
    attempts: rows.length, ended, wiped, scored, failed,
    rewardMean: mean,
    rewardStd: mean === null ? null : Math.sqrt(rewards.reduce((s, x) => s + (x - mean) ** 2, 0) / n),
    rewardMin: n ? Math.min(...rewards) : null,
    rewardMax: n ? Math.max(...rewards) : null,
    successRate: n ? rewards.filter((x) => x >= threshold).length / n : null,
    durationMeanMs: durations.length ? durations.reduce((a, b) => a + b, 0) / durations.length : null,
    durationMaxMs: durations.length ? Math.max(...durations) : null,
    failuresByCause,
    logMetrics: Object.fromEntries([...lm].filter(([, a]) => a.count > 0).map(([k, a]) => [k, { mean: a.sum / a.count, count: a.count }])),
  };
}

/**
 * Aggregates the attempts of a run.
 * @param sources the run's dataset names, @param swarms its swarm names (the groups come in this order)
 */
export function runMetrics(runId: string, rows: readonly AttemptRow[], sources: readonly string[], swarms: readonly string[], successThreshold: number, timing?: MetricsTiming): RunMetrics {
  const rewards = rows.flatMap((r) => (r.kind !== "failed" && r.reward !== null ? [r.reward] : []));
  const edges = histogramEdges(rewards.length ? Math.min(...rewards) : null, rewards.length ? Math.max(...rewards) : null);
  // the reward statistics and, beside them, the learning signals of the same rows (edge/run/board/signals)
  const group = (rs: readonly AttemptRow[], key: { window: number | null; source: string; swarm: string }): MetricsGroup => {
    const rewardOf = (r: AttemptRow) => (key.swarm === ALL ? r.reward : (r.swarmRewards[key.swarm] ?? null));
    const signals = learningSignals(rs, rewardOf, edges, key.swarm === ALL);
    if (timing && key.window !== null && key.source === ALL && key.swarm === ALL) signals.stepTime = stepTime(rs, { closedAtMs: timing.closedAtMs[key.window] ?? null }, timing.marks);
    return { ...aggregate(rs, key, successThreshold), signals };
  };
  const byWindow = new Map<number | null, AttemptRow[]>();
  for (const r of rows) {
    const list = byWindow.get(r.windowIndex) ?? [];
    list.push(r);
    byWindow.set(r.windowIndex, list);
  }
  const order = [...byWindow.keys()].sort((a, b) => (a === null ? 1 : b === null ? -1 : a - b));
  const groups: MetricsGroup[] = [];
  for (const w of order) {
    const windowRows = byWindow.get(w)!;
    const window = w === null ? null : w + 1;
    groups.push(group(windowRows, { window, source: ALL, swarm: ALL }));
    if (sources.length > 1) for (const s of sources) groups.push(group(windowRows.filter((r) => r.source === s), { window, source: s, swarm: ALL }));
    if (swarms.length > 1) for (const s of swarms) groups.push(group(windowRows, { window, source: ALL, swarm: s }));
  }
  return { runId, successThreshold, groups, histogramEdges: edges };
}

/**
 * The metrics with each window's sandbox-seconds on its all/all group (`bySandboxWindow`: the ledger's counts per
 * 0-based window, as `GET /runs/:id` carries them). A window that made none gets 0; eval groups get none.
 */
export function withSandboxSeconds(metrics: RunMetrics, bySandboxWindow: Readonly<Record<string, { seconds: number }>>): RunMetrics {
  const groups = metrics.groups.map((g) =>
    g.window !== null && g.source === ALL && g.swarm === ALL ? { ...g, sandboxSeconds: bySandboxWindow[String(g.window - 1)]?.seconds ?? 0 } : g,
  );
  return { ...metrics, groups };
}

const CSV_COLUMNS = [
  "window", "global_step", "source", "swarm", "attempts", "ended", "wiped", "scored", "failed", "reward_mean", "reward_std", "reward_min",
  "reward_max", "success_rate", "duration_mean_ms", "duration_max_ms", "failures_by_cause",
] as const;

function csvCell(v: unknown): string {
  if (v === null || v === undefined) return "";
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** One flat row per group: the CSV's columns by name (numbers stay numbers), then `log_metric:<key>` means. */
function flatRows(metrics: RunMetrics): { header: string[]; rows: Record<string, unknown>[] } {
  const lmKeys = [...new Set(metrics.groups.flatMap((g) => Object.keys(g.logMetrics)))].sort();
  const sandboxes = metrics.groups.some((g) => g.sandboxSeconds !== undefined);
  const header = [...CSV_COLUMNS, ...(sandboxes ? ["sandbox_seconds"] : []), ...SIGNAL_COLUMNS, ...lmKeys.map((k) => `log_metric:${k}`)];
  const rows = metrics.groups.map((g) => {
    const failures = Object.entries(g.failuresByCause).map(([c, n]) => `${c}=${n}`).join(";");
    const base = [g.window, g.globalStep, g.source, g.swarm, g.attempts, g.ended, g.wiped, g.scored, g.failed, g.rewardMean, g.rewardStd, g.rewardMin, g.rewardMax,
      g.successRate, g.durationMeanMs, g.durationMaxMs, failures];
    const row: Record<string, unknown> = Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, base[i] ?? null]));
    if (sandboxes) row["sandbox_seconds"] = g.sandboxSeconds ?? null;
    Object.assign(row, signalRow(g.signals, metrics.histogramEdges));
    for (const k of lmKeys) row[`log_metric:${k}`] = g.logMetrics[k]?.mean ?? null;
    return row;
  });
  return { header, rows };
}

/**
 * The export as CSV (RFC 4180, header row first): one row per group; `failures_by_cause` is `cause=n;cause=n`;
 * a run that made sandboxes has a `sandbox_seconds` column (filled on each window's all/all row); the learning
 * signals' columns follow (edge/run/board/signals `SIGNAL_COLUMNS`); every `log_metrics` key becomes a column
 * `log_metric:<key>` holding its mean.
 */
export function metricsCsv(metrics: RunMetrics): string {
  const { header, rows } = flatRows(metrics);
  const lines = [header.map(csvCell).join(","), ...rows.map((r) => header.map((h) => csvCell(r[h])).join(","))];
  return `${lines.join("\r\n")}\r\n`;
}

/**
 * The export as JSON Lines (what `ajet-edge metrics --format jsonl` prints for W&B or TensorBoard loggers): one
 * object per group with the CSV's column names as keys, numbers as numbers, empty cells as null.
 */
export function metricsJsonl(metrics: RunMetrics): string {
  const { rows } = flatRows(metrics);
  return rows.map((r) => `${JSON.stringify(r)}\n`).join("");
}
