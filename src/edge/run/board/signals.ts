/**
 * @module edge/run/board/signals — the learning signals of a set of attempt rows (issue 22 §1), beside the reward
 * statistics of edge/run/board/metrics: how many GRPO groups carry no signal (every repeat scored the same: zero
 * advantage), split all-0 / all-1; the reward histogram; answer length in characters and tokens (mean, p95, max, the
 * share the length limit cut); LLM latency p50/p95 per call and tokens per second; turns and tool calls per episode;
 * and, per window, where its time went (rollout, waiting for the trainer, weight sync) from the engine statuses the
 * run saw. Built from what the end reports carried (runtime/episode-meter); pure.
 */
import { ENGINE } from "../../../protocol/index.ts";
import type { AttemptRow } from "../attempts.ts";

/** mean, 95th percentile (nearest rank), max and how many values. */
export interface Spread {
  mean: number;
  p95: number;
  max: number;
  n: number;
}

/** Where one window's time went (ms). Null parts were not observed. */
export interface StepTime {
  /** the window's first claim to its last ended episode */
  rolloutMs: number | null;
  /** the last end to the first `WEIGHT_SYNCING` seen after it (else to the engine's next step): the trainer's turn */
  trainerWaitMs: number | null;
  /** `WEIGHT_SYNCING` to the next `ROLLING` seen */
  weightSyncMs: number | null;
}

/** The learning signals of one metrics group. */
export interface LearningSignals {
  /** task groups with two or more rewarded repeats (the latest attempt of each repeat) */
  groups: number;
  /** share of those groups whose repeats all scored the same (GRPO advantage zero), null without a group */
  zeroAdvantageShare: number | null;
  /** share of groups whose repeats all scored 0, and all 1 */
  allZeroShare: number | null;
  allOneShare: number | null;
  /** rewarded attempts per bin of the run's histogram edges (`RunMetrics.histogramEdges`) */
  histogram: number[];
  /** per rewarded episode: characters of the model's answers, summed over its calls */
  responseChars: Spread | null;
  /** per rewarded episode whose answers carried `usage` */
  promptTokens: Spread | null;
  completionTokens: Spread | null;
  /** share of rewarded episodes with at least one call cut by the length limit */
  lengthCutShare: number | null;
  /** per LLM call (every reported attempt, failed ones too), ms */
  latencyP50Ms: number | null;
  latencyP95Ms: number | null;
  calls: number;
  /** completion tokens over the seconds of the calls that reported them */
  tokensPerSecond: number | null;
  /** per rewarded episode */
  turns: { mean: number; max: number } | null;
  toolCalls: { mean: number; max: number } | null;
  /** the window's time split; only on the all-sources, all-swarms row of a training window */
  stepTime: StepTime | null;
}

/** Bins of the reward histogram. */
export const HISTOGRAM_BINS = 10;

/** The value at quantile `q` of sorted values (nearest rank). */
export function nearestRank(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** mean, p95 and max of `values`, null when empty. */
export function spread(values: readonly number[]): Spread | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return { mean: sorted.reduce((a, b) => a + b, 0) / sorted.length, p95: nearestRank(sorted, 0.95), max: sorted[sorted.length - 1]!, n: sorted.length };
}

/**
 * The histogram's edges for a run whose rewards lie in [min, max]: {@link HISTOGRAM_BINS} equal bins (one bin of
 * width 0 when every reward is the same; none without rewards).
 */
export function histogramEdges(min: number | null, max: number | null): number[] {
  if (min === null || max === null) return [];
  if (max <= min) return [min, max];
  // edges rounded to 1e-9, so a [0, 1] run's read 0, 0.1, … 1 (the counts use the same edges)
  return Array.from({ length: HISTOGRAM_BINS + 1 }, (_, i) => (i === HISTOGRAM_BINS ? max : Math.round((min + ((max - min) * i) / HISTOGRAM_BINS) * 1e9) / 1e9));
}

/** Counts per bin (the last bin includes its upper edge). */
export function histogram(values: readonly number[], edges: readonly number[]): number[] {
  const bins = Math.max(0, edges.length - 1);
  const counts = new Array<number>(bins).fill(0);
  if (bins === 0) return counts;
  for (const v of values) {
    let i = edges.findIndex((e, k) => k > 0 && v < e) - 1;
    if (i < 0) i = v >= edges[bins]! ? bins - 1 : 0;
    counts[Math.min(bins - 1, Math.max(0, i))]!++;
  }
  return counts;
}

/** The task group of an episode key (`source/epoch/taskIndex#repeat` → `source/epoch/taskIndex`). */
export const groupKeyOf = (episodeKey: string): string => episodeKey.replace(/#\d+$/, "");

function grpo(rewarded: readonly { episodeKey: string; attempt: number; reward: number }[]) {
  const latest = new Map<string, { attempt: number; reward: number }>();
  for (const r of rewarded) if ((latest.get(r.episodeKey)?.attempt ?? 0) < r.attempt) latest.set(r.episodeKey, r);
  const groups = new Map<string, number[]>();
  for (const [key, r] of latest) groups.set(groupKeyOf(key), [...(groups.get(groupKeyOf(key)) ?? []), r.reward]);
  let n = 0;
  let same = 0;
  let zero = 0;
  let one = 0;
  for (const rewards of groups.values()) {
    if (rewards.length < 2) continue;
    n++;
    if (rewards.some((x) => x !== rewards[0])) continue;
    same++;
    if (rewards[0] === 0) zero++;
    if (rewards[0] === 1) one++;
  }
  return { groups: n, zeroAdvantageShare: n ? same / n : null, allZeroShare: n ? zero / n : null, allOneShare: n ? one / n : null };
}

const meanMax = (xs: readonly number[]) => (xs.length ? { mean: xs.reduce((a, b) => a + b, 0) / xs.length, max: Math.max(...xs) } : null);

/** The LLM side: lengths, tokens, the length cut, latency, tokens per second, turns and tool calls. */
function llmSignals(rows: readonly AttemptRow[]): Omit<LearningSignals, "groups" | "zeroAdvantageShare" | "allZeroShare" | "allOneShare" | "histogram" | "stepTime"> {
  const measured = rows.filter((r) => r.signals);
  const rewarded = measured.filter((r) => r.kind !== "failed").map((r) => r.signals!);
  const calls = measured.flatMap((r) => r.signals!.callMs.map((ms, i) => ({ ms, tokens: r.signals!.callTokens[i] ?? null })));
  const latency = calls.map((c) => c.ms).sort((a, b) => a - b);
  const timed = calls.filter((c) => c.tokens !== null && c.ms > 0);
  const seconds = timed.reduce((s, c) => s + c.ms / 1000, 0);
  return {
    responseChars: spread(rewarded.map((s) => s.responseChars)),
    promptTokens: spread(rewarded.flatMap((s) => (s.promptTokens === null ? [] : [s.promptTokens]))),
    completionTokens: spread(rewarded.flatMap((s) => (s.completionTokens === null ? [] : [s.completionTokens]))),
    lengthCutShare: rewarded.length ? rewarded.filter((s) => s.lengthCut > 0).length / rewarded.length : null,
    latencyP50Ms: latency.length ? nearestRank(latency, 0.5) : null,
    latencyP95Ms: latency.length ? nearestRank(latency, 0.95) : null,
    calls: measured.reduce((n, r) => n + r.signals!.llmCalls, 0),
    tokensPerSecond: seconds > 0 ? timed.reduce((n, c) => n + c.tokens!, 0) / seconds : null,
    turns: meanMax(rewarded.map((s) => s.llmCalls)),
    toolCalls: meanMax(rewarded.map((s) => s.toolCalls)),
  };
}

/**
 * The learning signals of one group's rows.
 * @param rewardOf the reward a row counts with in this group (its swarm's, or the episode's), null when none
 * @param llm whether this group shows the LLM side (an episode's measurements are not split by swarm: per-swarm rows leave it out)
 */
export function learningSignals(rows: readonly AttemptRow[], rewardOf: (r: AttemptRow) => number | null, edges: readonly number[], llm: boolean): LearningSignals {
  const rewarded = rows.flatMap((r) => {
    const reward = r.kind === "failed" ? null : rewardOf(r);
    return reward === null ? [] : [{ episodeKey: r.episodeKey, attempt: r.attempt, reward }];
  });
  const side = llmSignals(llm ? rows : []);
  return { ...grpo(rewarded), histogram: histogram(rewarded.map((r) => r.reward), edges), ...side, stepTime: null };
}

/** One engine status the run saw change (edge/run/engine-timeline), epoch ms. */
export interface EngineMark {
  atMs: number;
  status: string;
}

/**
 * Where a window's time went: its first claim to its last end (rollout), then the trainer's turn until the engine
 * was seen `WEIGHT_SYNCING` (or, when that was never seen, until `closedAtMs`: the engine seen past the step), then
 * the weight sync until `ROLLING` was seen again. Times are as the run observed them (its polls and the watcher's).
 * @param marks the first swarm's status changes, oldest first
 */
export function stepTime(rows: readonly AttemptRow[], window: { closedAtMs: number | null }, marks: readonly EngineMark[]): StepTime | null {
  const claims = rows.flatMap((r) => (r.claimedAtMs != null ? [r.claimedAtMs] : []));
  const ends = rows.filter((r) => r.kind === "ended").map((r) => r.atMs);
  if (ends.length === 0) return null;
  const lastEnd = Math.max(...ends);
  const sync = marks.find((m) => m.atMs >= lastEnd && m.status === ENGINE.WEIGHT_SYNCING);
  const rolling = sync ? marks.find((m) => m.atMs > sync.atMs && m.status === ENGINE.ROLLING) : undefined;
  const trainerEnd = sync?.atMs ?? window.closedAtMs;
  return {
    rolloutMs: claims.length ? lastEnd - Math.min(...claims) : null,
    trainerWaitMs: trainerEnd != null && trainerEnd >= lastEnd ? trainerEnd - lastEnd : null,
    weightSyncMs: sync && rolling ? rolling.atMs - sync.atMs : null,
  };
}

/** The flat columns of the learning signals in the CSV and JSON Lines exports, in order. */
export const SIGNAL_COLUMNS = [
  "groups", "zero_adv_share", "zero_adv_all0_share", "zero_adv_all1_share", "reward_hist",
  "response_chars_mean", "response_chars_p95", "response_chars_max",
  "prompt_tokens_mean", "prompt_tokens_p95", "prompt_tokens_max",
  "completion_tokens_mean", "completion_tokens_p95", "completion_tokens_max", "length_cut_share",
  "llm_calls", "llm_latency_p50_ms", "llm_latency_p95_ms", "tokens_per_s",
  "turns_mean", "turns_max", "tool_calls_mean", "tool_calls_max",
  "rollout_ms", "trainer_wait_ms", "weight_sync_ms",
] as const;

/**
 * The signals as one flat row of {@link SIGNAL_COLUMNS}. `reward_hist` is `lower:count` per bin, `;`-separated
 * (the lower edges are the run's `histogramEdges`).
 */
export function signalRow(s: LearningSignals, edges: readonly number[]): Record<(typeof SIGNAL_COLUMNS)[number], number | string | null> {
  return {
    groups: s.groups, zero_adv_share: s.zeroAdvantageShare, zero_adv_all0_share: s.allZeroShare, zero_adv_all1_share: s.allOneShare,
    reward_hist: s.histogram.map((n, i) => `${edges[i]}:${n}`).join(";"),
    response_chars_mean: s.responseChars?.mean ?? null, response_chars_p95: s.responseChars?.p95 ?? null, response_chars_max: s.responseChars?.max ?? null,
    prompt_tokens_mean: s.promptTokens?.mean ?? null, prompt_tokens_p95: s.promptTokens?.p95 ?? null, prompt_tokens_max: s.promptTokens?.max ?? null,
    completion_tokens_mean: s.completionTokens?.mean ?? null, completion_tokens_p95: s.completionTokens?.p95 ?? null, completion_tokens_max: s.completionTokens?.max ?? null,
    length_cut_share: s.lengthCutShare, llm_calls: s.calls, llm_latency_p50_ms: s.latencyP50Ms, llm_latency_p95_ms: s.latencyP95Ms, tokens_per_s: s.tokensPerSecond,
    turns_mean: s.turns?.mean ?? null, turns_max: s.turns?.max ?? null, tool_calls_mean: s.toolCalls?.mean ?? null, tool_calls_max: s.toolCalls?.max ?? null,
    rollout_ms: s.stepTime?.rolloutMs ?? null, trainer_wait_ms: s.stepTime?.trainerWaitMs ?? null, weight_sync_ms: s.stepTime?.weightSyncMs ?? null,
  };
}
