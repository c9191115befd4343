/**
 * @module scheduler/window-capacity — can every source of a train run fill its share of a batch window with DISTINCT
 * tasks? A window never holds one task twice (scheduler/window-tasks), so a source needs at least as many tasks as
 * the most groups one window can take from it; the check refuses a run that would otherwise stall (its windows
 * could never fill the server's batch, spec §7.3).
 */
import { allocateSlots, EPSILON, sourceCaps } from "./mixing.ts";
import type { RunSpec, RunSpecIssue } from "./run-spec.ts";
/** Windows simulated at most; past them the proven bound is used instead (only for a tiny source in a long run). */
export const MAX_SIMULATED_WINDOWS = 10_000;

/** One source as the capacity check sees it. */
export interface CapacitySource {
  name: string;
  weight: number;
  taskCount: number;
  throttleRatio: number | null;
}

/** The run-wide numbers the capacity check needs. */
export interface CapacityRun {
  batchSize: number;
  epochs: number;
  /** windows to serve at most, null = until a source runs out */
  maxSteps: number | null;
  sources: readonly CapacitySource[];
}

/**
 * An upper bound on one source's groups per window: its cap (BC-31) and batchSize; without caps also
 * `ceil(share + 2) − 1`, share = batchSize × weight / Σweights (the carried credits stay in (−1, 1), so a window
 * gives a source fewer than share + 2 groups).
 */
function upperBound(run: CapacityRun, i: number, caps: readonly (number | null)[]): number {
  const cap = caps[i] ?? run.batchSize;
  if (caps.some((c) => c !== null)) return Math.min(run.batchSize, cap);
  const total = run.sources.reduce((sum, s) => sum + s.weight, 0);
  const share = (run.batchSize * (run.sources[i]?.weight ?? 0)) / total;
  return Math.min(run.batchSize, Math.ceil(share + 2 - EPSILON) - 1);
}

/**
 * The most task groups one batch window can take from each source, derived from the mixing rule itself: the
 * windows of the run are allocated exactly as `openWindow` does (largest remainder, carried deficit, per-source caps)
 * until the run cannot open another one (`maxSteps`, or a source was given all its epochs' tasks plus room for a
 * full deferred list), and the largest count per source is kept. Simulated only when some source has `taskCount ≤`
 * its upper bound (the only ones that can fall short); otherwise, and past {@link MAX_SIMULATED_WINDOWS}, the upper
 * bounds are returned. A replacement group (BC-32) comes on top of this: see `dropGroup`.
 * @returns one count per source, aligned with `run.sources`
 */
export function maxWindowGroups(run: CapacityRun): number[] {
  const { batchSize, sources } = run;
  const caps = sourceCaps(batchSize, sources);
  const bounds = sources.map((_, i) => upperBound(run, i, caps));
  if (sources.every((s, i) => s.taskCount > (bounds[i] ?? 0))) return bounds;
  const weights = sources.map((s) => s.weight);
  const most = sources.map(() => 0);
  const served = sources.map(() => 0);
  let credits = sources.map(() => 0);
  let lastWindow = run.maxSteps ?? Number.POSITIVE_INFINITY;
  for (let w = 0; w < lastWindow; w++) {
    if (w === MAX_SIMULATED_WINDOWS) return bounds;
    const allocation = allocateSlots(credits, weights, batchSize, caps);
    credits = allocation.credits;
    allocation.counts.forEach((c, i) => {
      most[i] = Math.max(most[i] ?? 0, c);
      served[i] = (served[i] ?? 0) + c;
    });
    if (most.every((m, i) => m >= (bounds[i] ?? 0))) return most;
    // the run opens no window after a source was given its epochs' tasks plus a full deferred list (≤ its bound)
    const ranOut = sources.some((s, i) => (served[i] ?? 0) >= s.taskCount * run.epochs + (bounds[i] ?? 0));
    if (ranOut) lastWindow = Math.min(lastWindow, w + 1);
  }
  return most;
}

/** Thrown by `schedulerConfig` / `initialState` when a source cannot fill its share of a window with distinct tasks. */
export class WindowCapacityError extends RangeError {
  constructor(
    /** one per source that falls short: path `datasets.N` and a message that says the fix */
    readonly issues: RunSpecIssue[],
  ) {
    super(issues.map((i) => i.message).join("; "));
    this.name = "WindowCapacityError";
  }
}

/**
 * A batch size below `run.batchSize` at which source `i` has enough tasks, for the error message: a binary search
 * between 1 (one group per window always fits) and the size whose weight share equals the task count, each probe
 * checked with {@link maxWindowGroups} (about log2(batchSize) simulations; the answer always fits, and is the largest
 * that does when the maximum grows with the batch size, as it does in practice).
 */
function fittingBatchSize(run: CapacityRun, i: number): number {
  const taskCount = run.sources[i]?.taskCount ?? 1;
  const share = (run.sources[i]?.weight ?? 0) / run.sources.reduce((sum, s) => sum + s.weight, 0);
  const fits = (b: number) => (maxWindowGroups({ ...run, batchSize: b })[i] ?? b) <= taskCount;
  let lo = 1;
  let hi = Math.max(1, Math.min(run.batchSize - 1, Math.floor(taskCount / share + EPSILON)));
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * The issues of a train run whose per-source maxima are `most` (from {@link maxWindowGroups}): one per source with
 * fewer tasks than its maximum.
 */
export function capacityIssues(run: CapacityRun, most: readonly number[]): RunSpecIssue[] {
  const issues: RunSpecIssue[] = [];
  run.sources.forEach((s, i) => {
    const needed = most[i] ?? 0;
    if (s.taskCount >= needed) return;
    const weight = run.sources.length > 1 ? ", lower its weight" : "";
    issues.push({
      path: `datasets.${i}`,
      message:
        `dataset "${s.name}" has ${s.taskCount} task${s.taskCount === 1 ? "" : "s"} but a batch window of ${run.batchSize} needs up to ` +
        `${needed} distinct tasks from it; lower batchSize to ≤ ${fittingBatchSize(run, i)}${weight} or add tasks`,
    });
  });
  return issues;
}

/**
 * The capacity problems of a train run, from its spec and dataset sizes: one issue per source whose task count is
 * below {@link maxWindowGroups}, e.g. `dataset "x" has 4 tasks but a batch window of 8 needs up to 8 distinct tasks
 * from it; lower batchSize to ≤ 4 or add tasks`. Eval runs have no windows (each group runs once per epoch; repeats
 * across epochs are fine): none. `POST /runs` calls this before creating the run (a 400 naming `datasets.N`).
 * @param taskCounts dataset name → number of tasks; a missing or invalid count is skipped (`schedulerConfig` names it)
 * @returns the issues (path `datasets.N`), empty when every source can fill its share
 */
export function windowCapacityIssues(spec: RunSpec, taskCounts: Readonly<Record<string, number>>): RunSpecIssue[] {
  if (spec.episodeType !== "train") return [];
  if (spec.datasets.some((d) => !Number.isInteger(taskCounts[d.name]) || (taskCounts[d.name] ?? 0) < 1)) return [];
  const run: CapacityRun = {
    batchSize: spec.batchSize,
    epochs: spec.epochs,
    maxSteps: spec.maxSteps,
    sources: spec.datasets.map((d) => ({ name: d.name, weight: d.weight, taskCount: taskCounts[d.name] ?? 0, throttleRatio: d.throttleRatio ?? null })),
  };
  return capacityIssues(run, maxWindowGroups(run));
}
