/**
 * @module cli/rescore/rescore — re-scoring a run's stored transcripts with another reward (issue 22 §3), pure: the
 * reported attempts and their transcripts in, per step the old and new mean reward, the share of episodes whose
 * reward changed, and the task groups whose GRPO signal appears or disappears (every repeat scored the same before
 * and not now, or the reverse) out. A transcript cut by the size cap, one without its task (stored before tasks were
 * kept) and one that is missing are skipped and counted, never scored on half their text.
 */
import type { AttemptRow } from "../../edge/run/attempts.ts";
import { groupKeyOf } from "../../edge/run/board/signals.ts";
import type { EpisodeTranscript } from "../../runtime/transcript.ts";
import type { Task } from "../../protocol/index.ts";

/** A reward to re-score with: a transcript and its task in, a reward (or an output with `reward`) out; may be async. */
export type Rescorer = (transcript: EpisodeTranscript, task: Task) => number | { reward: number } | Promise<number | { reward: number }>;

/** Why a reported attempt was not re-scored. */
export type SkipReason = "truncated" | "no_task" | "missing" | "score_failed";

/** One re-scored attempt. */
export interface RescoredEpisode {
  episodeKey: string;
  attempt: number;
  /** 1-based window, null for eval */
  window: number | null;
  oldReward: number;
  newReward: number;
}

/** One step's comparison (window null: the eval attempts). */
export interface RescoreStep {
  window: number | null;
  episodes: number;
  oldMean: number | null;
  newMean: number | null;
  changed: number;
}

/** What a re-score found. */
export interface RescoreReport {
  runId: string;
  /** what scored: the reward file or the function */
  scorer: string;
  steps: RescoreStep[];
  episodes: number;
  /** share of the re-scored episodes whose reward changed (|Δ| > 1e-9), null when none was re-scored */
  changedShare: number | null;
  oldMean: number | null;
  newMean: number | null;
  /** task groups (`source/epoch/task`) of two or more re-scored repeats that gained / lost a GRPO signal */
  signalAppears: string[];
  signalDisappears: string[];
  skipped: Record<SkipReason, number>;
  /** the first failure of each kind, for the one line that says why */
  skipNotes: string[];
  rescored: RescoredEpisode[];
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
const same = (xs: readonly number[]) => xs.every((x) => Math.abs(x - xs[0]!) <= 1e-9);

/** The latest rewarded attempt of each episode (a re-run after a wipe replaces the earlier one). */
export function rewardedAttempts(rows: readonly AttemptRow[]): AttemptRow[] {
  const latest = new Map<string, AttemptRow>();
  for (const r of rows) {
    if (r.kind === "failed" || r.reward === null) continue;
    if ((latest.get(r.episodeKey)?.attempt ?? 0) < r.attempt) latest.set(r.episodeKey, r);
  }
  return [...latest.values()];
}

/** The reward a scorer returned, as a finite number. @throws naming what it returned otherwise */
function rewardOf(out: number | { reward: number }): number {
  const r = typeof out === "number" ? out : out?.reward;
  if (typeof r !== "number" || !Number.isFinite(r)) throw new Error(`score must return a finite number or { reward: number }; it returned ${JSON.stringify(out)}`);
  return r;
}

/**
 * Re-scores the rewarded attempts.
 * @param transcriptOf the stored transcript of an attempt, null when there is none
 */
export async function rescore(
  runId: string,
  scorer: { name: string; score: Rescorer },
  rows: readonly AttemptRow[],
  transcriptOf: (row: AttemptRow) => Promise<EpisodeTranscript | null>,
  concurrency = 8,
): Promise<RescoreReport> {
  const attempts = rewardedAttempts(rows);
  const skipped: Record<SkipReason, number> = { truncated: 0, no_task: 0, missing: 0, score_failed: 0 };
  const notes = new Map<SkipReason, string>();
  const skip = (why: SkipReason, row: AttemptRow, note: string) => {
    skipped[why]++;
    if (!notes.has(why)) notes.set(why, `${row.episodeKey} attempt ${row.attempt}: ${note}`);
  };
  const done: (RescoredEpisode | null)[] = new Array(attempts.length).fill(null);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < attempts.length; i = next++) {
      const row = attempts[i]!;
      const t = await transcriptOf(row);
      if (!t) skip("missing", row, "no stored transcript (transcripts off, expired or never written)");
      else if (t.truncated) skip("truncated", row, "the transcript was cut by the size cap (TRANSCRIPT_MAX_BYTES)");
      else if (!t.task) skip("no_task", row, "the transcript was stored without its task (written before tasks were kept)");
      else {
        try {
          const newReward = rewardOf(await scorer.score(t, t.task));
          done[i] = { episodeKey: row.episodeKey, attempt: row.attempt, window: row.windowIndex === null ? null : row.windowIndex + 1, oldReward: row.reward!, newReward };
        } catch (err) {
          skip("score_failed", row, err instanceof Error ? err.message : String(err));
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, attempts.length)) }, worker));
  const rescored = done.filter((d): d is RescoredEpisode => d !== null);
  const changed = (e: RescoredEpisode) => Math.abs(e.newReward - e.oldReward) > 1e-9;
  const windows = [...new Set(rescored.map((e) => e.window))].sort((a, b) => (a ?? Infinity) - (b ?? Infinity));
  const steps = windows.map((w) => {
    const es = rescored.filter((e) => e.window === w);
    return { window: w, episodes: es.length, oldMean: mean(es.map((e) => e.oldReward)), newMean: mean(es.map((e) => e.newReward)), changed: es.filter(changed).length };
  });
  const groups = new Map<string, RescoredEpisode[]>();
  for (const e of rescored) groups.set(groupKeyOf(e.episodeKey), [...(groups.get(groupKeyOf(e.episodeKey)) ?? []), e]);
  const appears: string[] = [];
  const disappears: string[] = [];
  for (const [key, es] of groups) {
    if (es.length < 2) continue;
    const before = !same(es.map((e) => e.oldReward));
    const after = !same(es.map((e) => e.newReward));
    if (!before && after) appears.push(key);
    if (before && !after) disappears.push(key);
  }
  return {
    runId, scorer: scorer.name, steps, episodes: rescored.length,
    changedShare: rescored.length ? rescored.filter(changed).length / rescored.length : null,
    oldMean: mean(rescored.map((e) => e.oldReward)), newMean: mean(rescored.map((e) => e.newReward)),
    signalAppears: appears.sort(), signalDisappears: disappears.sort(), skipped, skipNotes: [...notes.values()], rescored,
  };
}
