/**
 * @module util/backoff — the doubling back-off with jitter that both claim back-offs that run share, each with its
 * own numbers: the runtime's inside one invocation (`runtime/claims.ts`) and the scheduler's between dispatches
 * (`scheduler/dispatch.ts`). Pure: the random draw is an input.
 */

/** A doubling back-off: the first delay and its cap (ms), and the range `[lo, hi)` of the factor the jitter multiplies by. */
export interface BackoffPolicy {
  firstMs: number;
  maxMs: number;
  jitter: readonly [lo: number, hi: number];
}

/**
 * The `n`-th delay of a back-off (1-based), ms: min(maxMs, firstMs × 2^(n−1)) × (lo + (hi − lo) × u).
 * @param u a uniform draw in [0, 1)
 */
export function backoffDelayMs(policy: BackoffPolicy, n: number, u: number): number {
  const [lo, hi] = policy.jitter;
  return Math.min(policy.maxMs, policy.firstMs * 2 ** Math.max(0, n - 1)) * (lo + (hi - lo) * u);
}
