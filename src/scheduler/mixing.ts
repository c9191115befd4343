/**
 * @module scheduler/mixing — task-source mixing by weight: largest remainder with the deficit carried from window to
 * window (so long-run shares converge), optional per-source caps, and the BC-31 check that the caps can fill a batch.
 */

/** Credits closer than this are equal: float noise must not decide a tie (ties go to the lower source index). */
export const EPSILON = 1e-9;

/** The outcome of one allocation: which source each slot went to, the counts, and the carried credits. */
export interface Allocation {
  /** source index of each slot, in the order the slots were assigned (groups open in this order) */
  picks: number[];
  /** slots per source */
  counts: number[];
  /** credit (target − assigned, in tasks) to carry into the next allocation; each is in (−1, 1) without caps */
  credits: number[];
}

/**
 * Assigns `slots` task slots to sources in proportion to `weights`, carrying the rounding deficit. Each call adds
 * `slots × weightᵢ / Σweights` to source i's credit, then gives every slot, one by one, to the source with the largest
 * credit (lower index on a tie) and takes 1 from it. For a window this is the largest-remainder method with the
 * deficit carried over: weights 0.25/0.75 and 8 slots give exactly 2 and 6 every window; 1/1/1 and 4 slots give
 * 2/1/1, 1/2/1, 1/1/2 (12 tasks, 4 each).
 * @param credits carried credits, one per source (from the previous allocation; zeros at the start)
 * @param weights one per source, ≥ 0; a 0 weight (an exhausted source) gets no slot and its credit resets to 0
 * @param slots tasks to assign (the window's `batchSize`, or 1 for one eval group)
 * @param caps optional per-source maximum slots in this allocation (null = no cap, BC-31); a capped source is skipped
 * @returns the allocation; fewer picks than `slots` only when every source with weight is capped or no weight is > 0
 */
export function allocateSlots(
  credits: readonly number[],
  weights: readonly number[],
  slots: number,
  caps?: readonly (number | null)[],
): Allocation {
  const total = weights.reduce((sum, w) => sum + (w > 0 ? w : 0), 0);
  const next = weights.map((w, i) => (w > 0 && total > 0 ? (credits[i] ?? 0) + (slots * w) / total : 0));
  const counts = weights.map(() => 0);
  const picks: number[] = [];
  for (let slot = 0; slot < slots; slot++) {
    let best = -1;
    for (let i = 0; i < weights.length; i++) {
      if (!((weights[i] ?? 0) > 0)) continue;
      const cap = caps?.[i];
      if (cap !== undefined && cap !== null && (counts[i] ?? 0) >= cap) continue;
      if (best < 0 || (next[i] ?? 0) > (next[best] ?? 0) + EPSILON) best = i;
    }
    if (best < 0) break;
    picks.push(best);
    counts[best] = (counts[best] ?? 0) + 1;
    next[best] = (next[best] ?? 0) - 1;
  }
  return { picks, counts, credits: next.map((c) => (Math.abs(c) < EPSILON ? 0 : c)) };
}

/**
 * Maximum unique tasks a throttle ratio allows in one batch: `ceil(batchSize × ratio)` (BC-31, spec §7.1: a client
 * is throttled when its unique tasks reach `batchSize × ratio`, so it holds at most the ceiling, e.g. 12.8 → 13).
 */
export function throttleCap(batchSize: number, ratio: number): number {
  return Math.ceil(batchSize * ratio - EPSILON);
}

/** The per-source caps of one window (BC-31): {@link throttleCap} of each source's `throttleRatio`, null = uncapped. */
export function sourceCaps(batchSize: number, sources: readonly { throttleRatio: number | null }[]): (number | null)[] {
  return sources.map((s) => (s.throttleRatio === null ? null : throttleCap(batchSize, s.throttleRatio)));
}

/** One source as {@link sourceCapIssues} sees it: name, weight and optional per-source throttle ratio. */
export interface MixSource {
  name: string;
  weight: number;
  throttleRatio?: number | undefined;
}

/** A configuration problem found by {@link sourceCapIssues}: the field path and a message that says the fix. */
export interface MixIssue {
  path: (string | number)[];
  message: string;
}

/**
 * BC-31, defined precisely. With per-source caps `capᵢ = ceil(batchSize × throttleRatioᵢ)` (sources without a
 * `throttleRatio` are uncapped):
 *  1. the caps must be able to fill a window: Σ capᵢ ≥ batchSize when every source is capped (otherwise the
 *     server's batch can never fill and the run stalls);
 *  2. each source's weight share must fit under its cap: `batchSize × wᵢ / Σw ≤ capᵢ` (otherwise the mix cannot be
 *     honoured and the deficit grows without bound);
 *  3. the run-level ratio sent in every claim's throttle policy must allow one whole window from this client:
 *     `ceil(batchSize × throttleRatio) ≥ batchSize`.
 * @returns the issues, empty when the configuration is sound
 */
export function sourceCapIssues(batchSize: number, runThrottleRatio: number, sources: readonly MixSource[]): MixIssue[] {
  const issues: MixIssue[] = [];
  if (throttleCap(batchSize, runThrottleRatio) < batchSize) {
    issues.push({
      path: ["throttleRatio"],
      message:
        `throttleRatio ${runThrottleRatio} caps this run at ${throttleCap(batchSize, runThrottleRatio)} unique tasks per batch, ` +
        `below batchSize ${batchSize}, so its windows could never fill the batch; use a ratio ≥ 1 (default 1.5)`,
    });
  }
  const totalWeight = sources.reduce((sum, s) => sum + s.weight, 0);
  const capped = sources.filter((s) => s.throttleRatio !== undefined);
  if (capped.length === sources.length && sources.length > 0) {
    const capSum = capped.reduce((sum, s) => sum + throttleCap(batchSize, s.throttleRatio ?? 0), 0);
    if (capSum < batchSize) {
      issues.push({
        path: ["datasets"],
        message:
          `the per-source caps ceil(batchSize × throttleRatio) sum to ${capSum}, below batchSize ${batchSize}: the batch ` +
          `can never fill; raise the datasets' throttleRatio values so they sum to at least 1, or remove them`,
      });
    }
  }
  sources.forEach((s, i) => {
    if (s.throttleRatio === undefined || totalWeight <= 0) return;
    const share = (batchSize * s.weight) / totalWeight;
    const cap = throttleCap(batchSize, s.throttleRatio);
    if (share > cap + EPSILON) {
      issues.push({
        path: ["datasets", i, "throttleRatio"],
        message:
          `dataset "${s.name}" has weight share ${share.toFixed(2)} tasks per window but throttleRatio ${s.throttleRatio} ` +
          `caps it at ${cap}; raise its throttleRatio to at least ${(share / batchSize).toFixed(3)} or lower its weight`,
      });
    }
  });
  return issues;
}
