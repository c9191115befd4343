/**
 * @module emulator/step-log — per training step, every train episode `/end_episode` accepted, as the engine saw
 * it (reward, claimant, LLM calls, dropped or not), and the task ids that completed their group. End-to-end tests
 * compare a scheduler's counts with it. Zero-LLM-call episodes are dropped as the real engine does (BC-29);
 * a reward that is not one finite number breaks the real runner and is logged as dropped too (spec §11.12).
 */

/** Why the engine discarded an accepted episode. */
export type DropReason = "no_llm_call" | "invalid_reward";

/** One train episode accepted by `/end_episode`. `reward` is null when it was not a number. */
export interface StepLogEpisode {
  episodeUuid: string;
  taskId: string;
  reward: number | null;
  clientUuid: string;
  llmCallCount: number;
  dropped: boolean;
  dropReason?: DropReason;
  /** Acceptance time, epoch ms. */
  atMs: number;
}

/** One training step (one `global_step` of one engine run). */
export interface StepLogEntry {
  /** 1 for the first `/start_engine`, +1 at each later start. */
  run: number;
  globalStep: number;
  /** `num_repeat` of the run: a task completes with this many kept episodes. */
  numRepeat: number;
  episodes: StepLogEpisode[];
  /** Task ids with ≥ numRepeat kept (not dropped) episodes, in completion order. */
  completedTaskIds: string[];
  /** Mean reward of the kept episodes, or null when none. */
  meanReward: number | null;
}

/**
 * The engine's verdict on an accepted train episode: dropped when it made no LLM call (BC-29) or its reward
 * is not a single finite number (spec §6.2, §11.12).
 */
export function classifyTrainResult(llmCallCount: number, reward: unknown): { dropped: boolean; dropReason?: DropReason } {
  if (llmCallCount <= 0) return { dropped: true, dropReason: "no_llm_call" };
  if (typeof reward !== "number" || !Number.isFinite(reward)) return { dropped: true, dropReason: "invalid_reward" };
  return { dropped: false };
}

/** The log itself: entries in creation order, one per (run, global step) that saw an accepted episode. */
export class StepLog {
  readonly entries: StepLogEntry[] = [];

  /** The entry of (run, globalStep), created when missing. */
  entry(run: number, globalStep: number, numRepeat: number): StepLogEntry {
    let e = this.entries.find((x) => x.run === run && x.globalStep === globalStep);
    if (!e) {
      e = { run, globalStep, numRepeat, episodes: [], completedTaskIds: [], meanReward: null };
      this.entries.push(e);
    }
    return e;
  }

  /** Records one accepted episode and updates the step's completed tasks and mean reward. */
  record(run: number, globalStep: number, numRepeat: number, episode: StepLogEpisode): StepLogEntry {
    const e = this.entry(run, globalStep, numRepeat);
    e.episodes.push(episode);
    const kept = e.episodes.filter((x) => !x.dropped);
    const sameTask = kept.filter((x) => x.taskId === episode.taskId).length;
    if (!episode.dropped && sameTask === numRepeat) e.completedTaskIds.push(episode.taskId);
    e.meanReward = kept.length ? kept.reduce((s, x) => s + (x.reward ?? 0), 0) / kept.length : null;
    return e;
  }

  /** The entry of (run, globalStep) if any episode was accepted in it. */
  find(run: number, globalStep: number): StepLogEntry | undefined {
    return this.entries.find((x) => x.run === run && x.globalStep === globalStep);
  }
}
