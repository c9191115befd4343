/**
 * @module cli/dev/render — what `ajet-edge dev` prints, as pure `state → string` functions: the live progress (one
 * refreshing line on a TTY, plain lines otherwise), the final per-step summary table, and API issues. No I/O, no
 * clock: the caller passes the elapsed time.
 */
import type { RunMetrics } from "../../edge/run/board/metrics.ts";
import { stripVTControlCharacters } from "node:util";
import type { RunSummary } from "../../scheduler/index.ts";
import type { ApiIssue, RunView } from "./runs-api.ts";

/** What the progress needs besides the status: the targets and the elapsed time (ms). */
export interface ProgressContext {
  /** episodes one training step needs (batchSize × numRepeat) */
  episodesPerStep: number;
  /** training steps of the run; null for eval */
  steps: number | null;
  /** eval: episodes of the whole run (tasks × epochs × numRepeat) */
  totalEpisodes?: number;
  elapsedMs: number;
  /** the CLI asked the run to stop (Ctrl-C or timeout) */
  stopping?: boolean;
}

/** The progress as the renderers see it. */
export interface Progress {
  phase: RunView["phase"];
  stopping: boolean;
  elapsedMs: number;
  /** `default ROLLING` per swarm, `ENGINE.` stripped (only the status when there is one swarm) */
  engine: string;
  globalStep: number | null;
  /** 1-based step of the open window, null before the first (or for eval) */
  step: number | null;
  stepsTotal: number | null;
  /** episodes ended in the open window (train) or in the run (eval), and the target */
  episodesDone: number;
  episodesTarget: number | null;
  /** mean reward of the open window (train) or of the run (eval) */
  meanReward: number | null;
  /** the open window is complete and waits for the engine to train on it */
  training: boolean;
  /** mean reward of each finished step, in order */
  stepRewards: (number | null)[];
  inFlight: number;
  failedAttempts: number;
  /** how long the Worker has not answered a status request, ms (absent or under {@link SILENCE_SHOWN_MS}: it answers) */
  workerSilentMs?: number;
}

/** How long the Worker may take to answer before the progress line says it does not, ms. */
export const SILENCE_SHOWN_MS = 5_000;

/** An engine status without its `ENGINE.` prefix: `ENGINE.ROLLING` → `ROLLING`. */
export const shortStatus = (engineStatus: string): string => engineStatus.replace(/^ENGINE\./, "");

/** The progress of a run from its status view. */
export function progressOf(status: RunView, ctx: ProgressContext): Progress {
  const engines = status.engines.length === 1
    ? shortStatus(status.engines[0]!.engineStatus)
    : status.engines.map((e) => `${e.swarm} ${shortStatus(e.engineStatus)}`).join(", ");
  const train = status.episodeType === "train";
  const w = status.currentWindow;
  return {
    phase: status.phase,
    stopping: ctx.stopping ?? false,
    elapsedMs: ctx.elapsedMs,
    engine: engines || "?",
    globalStep: status.globalStep,
    step: train && w ? w.windowIndex + 1 : null,
    stepsTotal: train ? ctx.steps : null,
    episodesDone: train ? (w?.episodesEnded ?? 0) : status.totals.episodesEnded,
    episodesTarget: train ? ctx.episodesPerStep : (ctx.totalEpisodes ?? null),
    meanReward: train ? (w?.meanReward ?? null) : (status.totals.meanReward ?? null),
    training: train && (w?.waitingForEngine ?? false),
    // A step is done once the engine moved past it (its wall time is then known).
    stepRewards: train ? status.steps.filter((s) => s.wallTimeMs !== null).map((s) => s.meanReward) : [],
    inFlight: status.episodes.inFlight,
    failedAttempts: status.totals.attemptsFailed ?? 0,
  };
}

/** Failed attempts by cause, most frequent first, e.g. `invalid_task 192, function_error 3` (`""` when none). */
export function formatCauses(failuresByCause: Readonly<Record<string, number>>): string {
  return Object.entries(failuresByCause)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([cause, n]) => `${cause} ${n}`)
    .join(", ");
}

/** A reward with 3 decimals, or `-`. */
export const formatReward = (r: number | null | undefined): string => (r === null || r === undefined ? "-" : r.toFixed(3));

/** Milliseconds as seconds with one decimal, e.g. `12.4s`; `-` when unknown. */
export const formatSeconds = (ms: number | null | undefined): string => (ms === null || ms === undefined ? "-" : `${(ms / 1000).toFixed(1)}s`);

/** How many of the latest step rewards the progress line shows. */
export const STEP_REWARDS_SHOWN = 5;

/** The latest {@link STEP_REWARDS_SHOWN} step rewards, `…` first when older ones are left out: `… 0.610 0.720`. */
export function recentRewards(rewards: readonly (number | null)[]): string {
  const shown = rewards.slice(-STEP_REWARDS_SHOWN).map(formatReward).join(" ");
  return rewards.length > STEP_REWARDS_SHOWN ? `… ${shown}` : shown;
}

function progressParts(p: Progress): string[] {
  // a server the Worker cannot reach: its global step is the last one seen, not the current one
  const stale = p.globalStep !== null && /CANNOT_CONNECT|unknown/.test(p.engine);
  const parts = [`engine ${p.engine}`, `global step ${p.globalStep ?? "-"}${stale ? " (last seen)" : ""}`];
  const training = p.training && !p.stopping && p.phase !== "draining" && p.phase !== "finished";
  if (p.step !== null) parts.push(`step ${p.step}${p.stepsTotal ? `/${p.stepsTotal}` : ""}${training ? " (training)" : ""}`);
  parts.push(`episodes ${p.episodesDone}${p.episodesTarget !== null ? `/${p.episodesTarget}` : ""}`);
  parts.push(`mean reward ${formatReward(p.meanReward)}`);
  if (p.stepRewards.length) parts.push(`step rewards ${recentRewards(p.stepRewards)}`);
  parts.push(`in flight ${p.inFlight}`);
  if (p.failedAttempts) parts.push(`failed attempts ${p.failedAttempts}`);
  if (p.stopping || p.phase === "draining") parts.unshift(p.phase === "finished" ? "stopped" : "stopping (draining)");
  else if (p.phase !== "running") parts.unshift(p.phase);
  // the values above are the last the Worker gave; say so while it does not answer (in 5 s steps, so a plain log
  // gets a line per step, not per second)
  if (p.workerSilentMs !== undefined && p.workerSilentMs >= SILENCE_SHOWN_MS) parts.unshift(`Worker not answering for ${Math.floor(p.workerSilentMs / SILENCE_SHOWN_MS) * (SILENCE_SHOWN_MS / 1000)}s`);
  return parts;
}

/** The plain progress line without the elapsed time: a new line is worth printing when this changes. */
export function progressKey(p: Progress): string {
  return progressParts(p).join("  ");
}

/** A plain progress line (not a TTY), e.g. `[  4.2s] engine ROLLING  global step 1  step 1/3  episodes 12/32 …`. */
export function renderProgressPlain(p: Progress): string {
  return `[${formatSeconds(p.elapsedMs).padStart(6)}] ${progressKey(p)}`;
}

/**
 * The refreshing TTY line, cut to `columns` characters (the caller writes `\r`, clear-line and this). No newline.
 */
export function renderProgressLine(p: Progress, columns = 120): string {
  const line = `${formatSeconds(p.elapsedMs).padStart(6)} | ${progressParts(p).join(" | ")}`;
  return line.length > columns ? `${line.slice(0, Math.max(0, columns - 1))}…` : line;
}

/**
 * Non-TTY pacing: print when the progress changed, or every `heartbeatMs` anyway.
 * @param last the key and time (ms) of the last printed line, null before the first
 */
export function shouldPrintPlain(last: { key: string; atMs: number } | null, key: string, nowMs: number, heartbeatMs = 5_000): boolean {
  return last === null || last.key !== key || nowMs - last.atMs >= heartbeatMs;
}

/** Rows as aligned columns (two spaces apart), the first row the header; `rightAligned` per column. */
export function table(rows: string[][], rightAligned: boolean[]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? "").length)));
  return rows.map((r) => r.map((cell, c) => (rightAligned[c] ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join("  ").trimEnd()).join("\n");
}

/**
 * The final summary: one row per training step (episodes against the target, mean reward, wall time), a total
 * row (an eval run: one totals line; a train run without a step: `no training step completed`), then the stop
 * reason, failures by cause and dropped groups.
 */
/** Per swarm server: its mean reward per 1-based step and over the run (from `GET /runs/:id/metrics`). */
export type SwarmRewards = Record<string, { steps: Record<number, number | null>; total: number | null }>;

/**
 * Each swarm's mean reward per step, from the metrics export's per-swarm groups (a one-swarm run has none: its
 * rewards are the "mean reward" column already). The total is the mean over the steps' episodes, weighted by count.
 */
export function swarmRewardsOf(metrics: Pick<RunMetrics, "groups">): SwarmRewards {
  const out: SwarmRewards = {};
  for (const g of metrics.groups) {
    if (g.swarm === "*" || g.source !== "*" || g.window === null) continue;
    const entry = (out[g.swarm] ??= { steps: {}, total: null });
    entry.steps[g.window] = g.rewardMean;
  }
  for (const [swarm, entry] of Object.entries(out)) {
    let sum = 0;
    let n = 0;
    for (const g of metrics.groups) {
      if (g.swarm !== swarm || g.source !== "*" || g.window === null || g.rewardMean === null) continue;
      const k = g.ended + g.scored;
      sum += g.rewardMean * k;
      n += k;
    }
    entry.total = n > 0 ? sum / n : null;
  }
  return out;
}

export function renderSummary(
  summary: Pick<RunSummary, "steps" | "totals" | "stopReason" | "failuresByCause" | "droppedGroups" | "wallTimeMs" | "episodeType"> & Partial<Pick<RunSummary, "untrainedRewards">>,
  ctx: { episodesPerStep: number; swarmRewards?: SwarmRewards },
): string {
  // a multi-model run: one mean-reward column per swarm server, after the episode's (the first swarm's) reward
  const swarms = Object.keys(ctx.swarmRewards ?? {});
  const perSwarm = swarms.length > 1 ? swarms : [];
  const rows = [["step", "global step", "episodes", "mean reward", ...perSwarm.map((s) => `reward ${s}`), "wall time"]];
  for (const s of summary.steps) {
    const step = s.windowIndex + 1;
    rows.push([String(step), String(s.globalStep ?? "-"), `${s.episodesEnded}/${ctx.episodesPerStep}`, formatReward(s.meanReward), ...perSwarm.map((w) => formatReward(ctx.swarmRewards![w]!.steps[step] ?? null)), formatSeconds(s.wallTimeMs)]);
  }
  rows.push(["total", "", String(summary.totals.episodesEnded), formatReward(summary.totals.meanReward), ...perSwarm.map((w) => formatReward(ctx.swarmRewards![w]!.total)), formatSeconds(summary.wallTimeMs)]);
  const total = summary.episodeType === "train"
    ? "no training step completed"
    : `${summary.totals.episodesEnded} episodes, mean reward ${formatReward(summary.totals.meanReward)}, wall time ${formatSeconds(summary.wallTimeMs)}`;
  const lines = [summary.steps.length ? table(rows, rows[0]!.map(() => true)) : total];
  const failures = formatCauses(summary.failuresByCause);
  lines.push(`stop reason: ${summary.stopReason ?? "none"}; failed attempts: ${failures || "none"}; dropped groups: ${summary.droppedGroups.length ? summary.droppedGroups.join(", ") : "none"}`);
  // batch truth, only when something happened: wipes re-run, batches topped up, rewards left untrained
  const { episodesWiped = 0, groupsRerun = 0, groupsToppedUp = 0 } = summary.totals as Partial<RunSummary["totals"]>;
  const untrained = summary.untrainedRewards ?? 0;
  if (episodesWiped || groupsToppedUp || untrained) {
    lines.push(`server batches: ${episodesWiped} rewards wiped before training (${groupsRerun} groups re-run); ${groupsToppedUp} top-up groups; untrained rewards: ${untrained}`);
  }
  return lines.join("\n");
}

const WRANGLER_PREFIX = /^(▲ \[WARNING\]|✘ \[ERROR\]|\[wrangler:(\w+)\])\s*/;

/**
 * One line the Worker host printed (wrangler's `▲ [WARNING] {json}` for the Worker's console.warn), as one compact
 * line: `[worker warn] episode stale episode=countdown/0/3#1 kind=stale …`. Colours are removed; the run id is
 * dropped (the CLI has one run).
 * @returns null for a blank line
 */
export function formatWorkerLog(raw: string): string | null {
  let line = stripVTControlCharacters(raw).trim();
  if (!line) return null;
  const prefix = WRANGLER_PREFIX.exec(line);
  let level = prefix ? (prefix[1]!.startsWith("▲") ? "warn" : prefix[1]!.startsWith("✘") ? "error" : prefix[2]!) : "log";
  if (prefix) line = line.slice(prefix[0].length);
  try {
    const json: unknown = JSON.parse(line);
    if (json && typeof json === "object" && !Array.isArray(json)) {
      const { level: l, msg, message, run: _run, ...rest } = json as Record<string, unknown>;
      if (typeof l === "string") level = l;
      const text = typeof msg === "string" ? msg : typeof message === "string" ? message : "";
      const fields = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
      line = [text, ...fields].filter(Boolean).join(" ");
    }
  } catch {
    // not JSON: keep the text
  }
  return `[worker ${level}] ${line}`;
}

/** API issues as `path: message` lines, indented. */
export function renderIssues(issues: readonly ApiIssue[]): string {
  return issues.map((i) => `  ${i.path}: ${i.message}`).join("\n");
}
