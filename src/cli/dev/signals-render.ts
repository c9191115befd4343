/**
 * @module cli/dev/signals-render — the learning signals and the cost of a run as the CLI prints them (`dev`'s
 * summary, `status`): one row per training window from the metrics export's all-sources, all-swarms groups
 * (edge/run/board/signals), then one cost line (edge/run/board/cost). Pure `metrics → string`.
 */
import type { RunMetrics } from "../../edge/run/board/metrics.ts";
import type { RunCost } from "../../edge/run/board/cost.ts";
import { table } from "./render.ts";

const num = (x: number | null | undefined, digits = 0): string => (x === null || x === undefined ? "-" : x.toFixed(digits));
const share = (x: number | null | undefined): string => (x === null || x === undefined ? "-" : `${Math.round(x * 100)}%`);
const seconds = (ms: number | null | undefined): string => (ms === null || ms === undefined ? "-" : `${(ms / 1000).toFixed(1)}s`);

/**
 * The per-window signals table: GRPO groups with no signal (all-0 / all-1), answer characters and completion
 * tokens (mean / p95), the length-cut share, LLM latency p50 / p95 (ms), tokens per second, turns and tool calls
 * per episode, and the window's time split (rollout, trainer, weight sync). "" when the run has no training window.
 */
export function renderSignals(metrics: Pick<RunMetrics, "groups">): string {
  const rows = [["step", "no-signal groups (0s/1s)", "answer chars mean/p95", "tokens mean/p95", "cut", "latency p50/p95", "tok/s", "turns", "tools", "rollout", "trainer", "sync"]];
  for (const g of metrics.groups) {
    if (g.window === null || g.source !== "*" || g.swarm !== "*") continue;
    const s = g.signals;
    rows.push([
      String(g.window),
      s.groups ? `${share(s.zeroAdvantageShare)} of ${s.groups} (${share(s.allZeroShare)}/${share(s.allOneShare)})` : "-",
      s.responseChars ? `${num(s.responseChars.mean)}/${num(s.responseChars.p95)}` : "-",
      s.completionTokens ? `${num(s.completionTokens.mean)}/${num(s.completionTokens.p95)}` : "-",
      share(s.lengthCutShare),
      s.latencyP50Ms === null ? "-" : `${num(s.latencyP50Ms)}/${num(s.latencyP95Ms)}ms`,
      num(s.tokensPerSecond),
      num(s.turns?.mean, 1), num(s.toolCalls?.mean, 1),
      seconds(s.stepTime?.rolloutMs), seconds(s.stepTime?.trainerWaitMs), seconds(s.stepTime?.weightSyncMs),
    ]);
  }
  return rows.length > 1 ? table(rows, rows[0]!.map((_, i) => i !== 1)) : "";
}

/** Dollars with enough digits for a small run ($0.000123). */
export function formatUsd(usd: number | null): string {
  if (usd === null) return "-";
  if (usd === 0) return "$0";
  return usd >= 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toPrecision(3)}`;
}

/** One line: the run's estimated cost in total, per step and per 1,000 episodes, and what is an estimate. */
export function renderCost(cost: RunCost): string {
  return `estimated cost on Cloudflare: ${formatUsd(cost.totalUsd)} (${formatUsd(cost.perStepUsd)} per step, ${formatUsd(cost.per1000EpisodesUsd)} per 1,000 episodes; ` +
    `${formatUsd(cost.estimatedUsd)} of it estimated: CPU time, object duration, R2 storage) at the Workers Paid list prices of ${cost.prices.asOf}`;
}
