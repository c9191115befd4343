/**
 * @module port/swarms — which of a run's swarm servers a function's swarm name runs on: the one rule the runtime
 * (its claims), the Durable Object (its clients) and the scheduler core (each claim's server batch) share. The SDK
 * re-exports it (`serverOfSwarm`, `DEFAULT_SWARM`; public API unchanged).
 */

/** The name of the single swarm a function uses unless it declares `swarms` (issue 4 §1). */
export const DEFAULT_SWARM = "default";

/**
 * The run's server a swarm name runs on: the one of that name, except that `"default"` (what a single-swarm
 * function claims on) is the run's first server when none is named `"default"` (issue 4 §4). The one home of that
 * rule: `bindSwarms`, the Durable Object's clients and the scheduler's batches use it.
 * @returns undefined when the run has no such server
 */
export function serverOfSwarm<S extends { name: string }>(swarm: string, runSwarms: readonly S[]): S | undefined {
  return runSwarms.find((s) => s.name === swarm) ?? (swarm === DEFAULT_SWARM ? runSwarms[0] : undefined);
}
