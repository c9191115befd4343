/**
 * @module scheduler/config — the part of a validated RunSpec the core needs, as plain data stored in the run row:
 * numbers, swarm names and per-source task counts. No task contents, no secrets, no URLs.
 */
import { SampleCollectionMethod, type EpisodeType } from "../protocol/index.ts";
import type { RunSpec } from "./run-spec.ts";
import type { SchedulerTiming } from "./tuning.ts";
import { capacityIssues, maxWindowGroups, WindowCapacityError } from "./window-capacity.ts";

/** One task source as the core sees it: a name, a weight and a task count (never task contents). */
export interface SourceConfig {
  /** dataset name from the run spec (unique; namespaces episode keys) */
  name: string;
  /** relative share of every window (> 0) */
  weight: number;
  /** number of tasks in the source (≥ 1), counted by the dataset reader before the run starts */
  taskCount: number;
  /** optional per-window cap ratio (BC-31): at most ceil(batchSize × throttleRatio) groups per window */
  throttleRatio: number | null;
  /**
   * train: the most groups one window can take from this source by the mix (`maxWindowGroups`; ≤ taskCount, so a
   * window never needs a task twice); an upper bound when it cannot matter (taskCount above it). Eval: null.
   */
  maxWindowGroups: number | null;
}

/** The core's configuration (copied into the run row at creation; never changes afterwards). */
export interface SchedulerConfig {
  episodeType: EpisodeType;
  /** swarm names in spec order; the FIRST defines the run's global steps */
  swarms: string[];
  sources: SourceConfig[];
  /** tasks (task groups) per window = server train_batch_size = throttle expected_batch_size */
  batchSize: number;
  /** episodes per task group = throttle expected_num_repeat */
  numRepeat: number;
  /** episodes in flight at most (dispatched + running + reporting) */
  maxParallel: number;
  /** passes over each source */
  epochs: number;
  /** windows to serve at most (train), null = until the data runs out */
  maxSteps: number | null;
  /** tries per repeat before its group is dropped (BC-32) */
  maxAttempts: number;
  /** SwarmThrottlePolicy.ratio sent with every train claim (spec §7.1) */
  throttleRatio: number;
  /** seconds of LLM inactivity before the server reverts a claimed episode (sent with every claim) */
  discardEpisodeTimeoutSeconds: number;
  /** eval: reward ≥ this is a success for pass@k */
  successThreshold: number;
  /** seeds the shuffles and the RNG */
  seed: number;
  /**
   * train: top up a server batch that holds this run's rewards but would not close (true, the default), or finish
   * and report the untrained rewards (false). Absent in a config stored before it existed: true.
   */
  topUpLastBatch?: boolean;
  /**
   * the job's `swarmModeSampleCollectionMethod` (spec §7.3): how the server closes a batch, so how the run counts what
   * a batch lacks and whether it votes for the sync. Absent in a config stored before it existed: the tasks method.
   */
  sampleCollectionMethod?: SampleCollectionMethod;
  /**
   * over-provisioning (scheduler/over-provision): extra task groups per window as a share of `batchSize` (0 = none, the
   * default), so the server's batch closes on its first complete groups. Absent in a config stored before it existed: 0.
   */
  overProvision?: number;
  /** the job's `max_env_worker` (the server's worker budget, spec §5.2); bounds the extras. Absent in older configs. */
  maxEnvWorker?: number;
  timing: SchedulerTiming;
}

/**
 * Derives the core's configuration from a validated spec and the dataset sizes.
 * @param taskCounts dataset name → number of tasks (an integer ≥ 1 for every dataset of the spec)
 * @throws RangeError naming the dataset when a count is missing, not an integer, or 0 (load the dataset first)
 * @throws WindowCapacityError (a RangeError with `issues`, path `datasets.N`) for a train run with a source that has
 *   fewer tasks than one window can take from it, e.g. `dataset "x" has 4 tasks but a batch window of 8 needs up to 8
 *   distinct tasks from it; lower batchSize to ≤ 4 or add tasks` (a window never holds one task twice)
 */
export function schedulerConfig(spec: RunSpec, taskCounts: Readonly<Record<string, number>>): SchedulerConfig {
  const sources = spec.datasets.map((d): SourceConfig => {
    const taskCount = taskCounts[d.name];
    if (taskCount === undefined || !Number.isInteger(taskCount) || taskCount < 1) {
      throw new RangeError(
        `taskCounts["${d.name}"] must be the number of tasks in dataset "${d.name}" (an integer ≥ 1), got ${String(taskCount)}; ` +
          `load the dataset and count its tasks before starting the run`,
      );
    }
    return { name: d.name, weight: d.weight, taskCount, throttleRatio: d.throttleRatio ?? null, maxWindowGroups: null };
  });
  if (spec.episodeType === "train") {
    const run = { batchSize: spec.batchSize, epochs: spec.epochs, maxSteps: spec.maxSteps, sources };
    const most = maxWindowGroups(run);
    const issues = capacityIssues(run, most);
    if (issues.length > 0) throw new WindowCapacityError(issues);
    sources.forEach((s, i) => (s.maxWindowGroups = most[i] ?? null));
  }
  return {
    episodeType: spec.episodeType,
    swarms: spec.swarms.map((s) => s.name),
    sources,
    batchSize: spec.batchSize,
    numRepeat: spec.numRepeat,
    maxParallel: spec.maxParallel,
    epochs: spec.epochs,
    maxSteps: spec.maxSteps,
    maxAttempts: spec.maxAttempts,
    throttleRatio: spec.throttleRatio,
    discardEpisodeTimeoutSeconds: spec.discardEpisodeTimeoutSeconds,
    successThreshold: spec.successThreshold,
    seed: spec.seed,
    topUpLastBatch: spec.topUpLastBatch,
    sampleCollectionMethod: sampleCollectionMethodOf(spec.job["swarmModeSampleCollectionMethod"]),
    overProvision: spec.episodeType === "train" ? spec.overProvision : 0,
    maxEnvWorker: spec.maxEnvWorker,
    timing: spec.tuning,
  };
}

/** The job's sample-collection method (spec §7.3); absent or unknown: `rollout_until_finish_enough_tasks`. */
function sampleCollectionMethodOf(value: unknown): SampleCollectionMethod {
  const parsed = SampleCollectionMethod.safeParse(value);
  return parsed.success ? parsed.data : "rollout_until_finish_enough_tasks";
}
