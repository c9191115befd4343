/**
 * @module edge/ground/limits-config — the API's maxima (body, episodes per run, runs in flight per token, generated
 * tasks per dataset): a view of the one caps table (edge/ground/caps.ts), which says each var, default and range.
 */
import { CAPS, capsFrom } from "./caps.ts";

/** The vars this module reads (all optional strings, as wrangler passes vars). */
export interface LimitsEnv {
  /** largest request body in bytes (default 8 MiB) */
  AJET_MAX_BODY_BYTES?: string;
  /** most episodes one run may plan (tasks × epochs × numRepeat, or maxSteps × batchSize × numRepeat); default 1,000,000 */
  AJET_MAX_EPISODES_PER_RUN?: string;
  /** most runs one token may have in flight (not finished); default 10 */
  AJET_MAX_RUNS_IN_FLIGHT?: string;
  /** most tasks one dataset's `generate` may ask for (default 100,000) */
  AJET_MAX_GENERATED_TASKS?: string;
}

/** The resolved maxima. */
export interface ApiLimits {
  maxBodyBytes: number;
  maxEpisodesPerRun: number;
  maxRunsInFlight: number;
  maxGeneratedTasks: number;
}

/** Defaults of {@link ApiLimits}. */
export const DEFAULT_LIMITS: Readonly<ApiLimits> = {
  maxBodyBytes: CAPS.bodyBytes.default,
  maxEpisodesPerRun: CAPS.episodesPerRun.default,
  maxRunsInFlight: CAPS.runsInFlight.default,
  maxGeneratedTasks: CAPS.generatedTasks.default,
};

/** The maxima from the Worker's vars (defaults for unset or invalid ones; clamped into the caps table's ranges). */
export function limitsFrom(env: LimitsEnv): ApiLimits {
  const caps = capsFrom(env);
  return { maxBodyBytes: caps.bodyBytes, maxEpisodesPerRun: caps.episodesPerRun, maxRunsInFlight: caps.runsInFlight, maxGeneratedTasks: caps.generatedTasks };
}
