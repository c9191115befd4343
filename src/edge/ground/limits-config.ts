/**
 * @module edge/ground/limits-config — the API's configured maxima (Worker vars, each with a default that suits a public
 * Worker). Shared by the routes that enforce them; a var that is not a positive whole number falls back to the
 * default (never to "no limit").
 */

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
  maxBodyBytes: 8 * 1024 * 1024,
  maxEpisodesPerRun: 1_000_000,
  maxRunsInFlight: 10,
  maxGeneratedTasks: 100_000,
};

function positive(raw: string | undefined, fallback: number): number {
  if (raw === undefined || !/^\s*\d+\s*$/.test(raw)) return fallback;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 1 ? n : fallback;
}

/** The maxima from the Worker's vars (defaults for unset or invalid ones). */
export function limitsFrom(env: LimitsEnv): ApiLimits {
  return {
    maxBodyBytes: positive(env.AJET_MAX_BODY_BYTES, DEFAULT_LIMITS.maxBodyBytes),
    maxEpisodesPerRun: positive(env.AJET_MAX_EPISODES_PER_RUN, DEFAULT_LIMITS.maxEpisodesPerRun),
    maxRunsInFlight: positive(env.AJET_MAX_RUNS_IN_FLIGHT, DEFAULT_LIMITS.maxRunsInFlight),
    maxGeneratedTasks: positive(env.AJET_MAX_GENERATED_TASKS, DEFAULT_LIMITS.maxGeneratedTasks),
  };
}
