/**
 * @module scheduler/eval-report — `evalReport(state)` for eval runs (spec §5.8): per task the group's rewards, the
 * mean, pass@k with k = numRepeat, and the unbiased pass@1; then per source and overall.
 */
import type { EvalTaskRow, GroupResolution, SchedulerState } from "./state.ts";

/** One evaluated task. */
export interface EvalTaskReport {
  groupKey: string;
  source: string;
  taskIndex: number;
  epoch: number;
  /** the scored rewards, repeat order (repeats that were never scored are left out) */
  rewards: number[];
  /** n: scored repeats */
  scored: number;
  /** c: scored repeats with reward ≥ successThreshold */
  successes: number;
  meanReward: number | null;
  /** pass@k, k = numRepeat: 1 if any scored reward ≥ successThreshold, else 0; null when nothing was scored */
  passAtK: number | null;
  /** the unbiased pass@k estimator 1 − C(n−c, k)/C(n, k) (Chen et al. 2021); null when n < k */
  passAtKUnbiased: number | null;
  /** unbiased pass@1 = c / n; null when nothing was scored */
  passAt1: number | null;
  resolution: GroupResolution;
}

/** Aggregates over tasks (means over tasks that have at least one scored repeat). */
export interface EvalAggregate {
  tasks: number;
  scoredTasks: number;
  episodes: number;
  /** mean over all scored episodes */
  meanReward: number | null;
  passAtK: number | null;
  passAt1: number | null;
}

/** The eval report. */
export interface EvalReport {
  k: number;
  successThreshold: number;
  tasks: EvalTaskReport[];
  overall: EvalAggregate;
  bySource: Record<string, EvalAggregate>;
}

/**
 * The unbiased pass@k estimator for n samples with c successes: 1 − C(n−c, k) / C(n, k), computed as a product
 * (no large binomials).
 * @throws RangeError unless 0 ≤ c ≤ n and 1 ≤ k ≤ n
 */
export function unbiasedPassAtK(n: number, c: number, k: number): number {
  if (!(c >= 0 && c <= n && k >= 1 && k <= n)) throw new RangeError(`pass@k needs 0 ≤ c ≤ n and 1 ≤ k ≤ n, got n=${n} c=${c} k=${k}`);
  if (n - c < k) return 1;
  let allFail = 1;
  for (let i = n - c + 1; i <= n; i++) allFail *= 1 - k / i;
  return 1 - allFail;
}

function taskReport(row: EvalTaskRow, k: number, threshold: number): EvalTaskReport {
  const rewards = row.rewards.filter((r): r is number => r !== null);
  const n = rewards.length;
  const c = rewards.filter((r) => r >= threshold).length;
  return {
    groupKey: row.groupKey, source: row.source, taskIndex: row.taskIndex, epoch: row.epoch, rewards, scored: n, successes: c,
    meanReward: n > 0 ? rewards.reduce((a, b) => a + b, 0) / n : null,
    passAtK: n > 0 ? (c > 0 ? 1 : 0) : null,
    passAtKUnbiased: n >= k ? unbiasedPassAtK(n, c, k) : null,
    passAt1: n > 0 ? c / n : null,
    resolution: row.resolution,
  };
}

function aggregate(tasks: readonly EvalTaskReport[]): EvalAggregate {
  const scored = tasks.filter((t) => t.scored > 0);
  const episodes = scored.reduce((n, t) => n + t.scored, 0);
  const rewardSum = scored.reduce((s, t) => s + t.rewards.reduce((a, b) => a + b, 0), 0);
  const avg = (f: (t: EvalTaskReport) => number | null) =>
    scored.length > 0 ? scored.reduce((s, t) => s + (f(t) ?? 0), 0) / scored.length : null;
  return {
    tasks: tasks.length, scoredTasks: scored.length, episodes,
    meanReward: episodes > 0 ? rewardSum / episodes : null,
    passAtK: avg((t) => t.passAtK),
    passAt1: avg((t) => t.passAt1),
  };
}

/**
 * The eval report of the tasks finished so far (final once the run is finished).
 * @param options.successThreshold overrides the run spec's `successThreshold` (a reward ≥ it is a success)
 */
export function evalReport(state: SchedulerState, options: { successThreshold?: number } = {}): EvalReport {
  const { config } = state.run;
  const k = config.numRepeat;
  const threshold = options.successThreshold ?? config.successThreshold;
  const tasks = Object.values(state.evalTasks)
    .map((row) => taskReport(row, k, threshold))
    .sort((a, b) => a.source.localeCompare(b.source) || a.epoch - b.epoch || a.taskIndex - b.taskIndex);
  const bySource: Record<string, EvalAggregate> = {};
  for (const s of config.sources) bySource[s.name] = aggregate(tasks.filter((t) => t.source === s.name));
  return { k, successThreshold: threshold, tasks, overall: aggregate(tasks), bySource };
}
