/**
 * @module scheduler/spec-ranges — the range of every number of a run spec (issue 18): a minimum and a maximum that mean
 * something for a real run, finite everywhere. The schemas (`run-spec.ts`, `tuning.ts`) build their fields from this
 * table, so a refusal always names the range; `docs/security-and-limits.md` prints it. Platform-free (the Worker's
 * counts and sizes, which an operator may change, are `edge/ground/caps.ts`).
 */
import { z } from "zod";

/** One number's range: inclusive bounds, its unit, whole or not, and what the maximum stands for. */
export interface SpecRange {
  readonly min: number;
  readonly max: number;
  readonly unit: "seconds" | "milliseconds" | "count" | "ratio" | "reward";
  readonly whole: boolean;
  /** why the maximum (or the minimum) is where it is */
  readonly why: string;
}

const r = (min: number, max: number, unit: SpecRange["unit"], whole: boolean, why: string): SpecRange => ({ min, max, unit, whole, why });

/** The table, by field path (`tuning.*` and `swarms[].engine.*` by their last part under a prefix). */
export const SPEC_RANGES = {
  epochs: r(1, 1000, "count", true, "passes over a dataset"),
  numRepeat: r(1, 512, "count", true, "episodes per task group (GRPO)"),
  batchSize: r(1, 4096, "count", true, "tasks per training step"),
  maxEnvWorker: r(1, 16_384, "count", true, "engine worker threads"),
  maxParallel: r(1, 16_384, "count", true, "episodes in flight (Queues run 250 invocations per queue)"),
  maxSteps: r(1, 1_000_000, "count", true, "training windows"),
  maxAttempts: r(1, 20, "count", true, "tries per repeat"),
  discardEpisodeTimeoutSeconds: r(1, 3600, "seconds", false, "an idle episode is reverted after this; an hour-long episode is the longest the runtime serves (8 × its lifetime factor)"),
  successThreshold: r(-1e9, 1e9, "reward", false, "a reward threshold"),
  weight: r(1e-6, 1e6, "ratio", false, "a dataset's share; the largest weight is at most 10,000 × the smallest"),
  "tuning.statusPollWaitingMs": r(100, 60_000, "milliseconds", false, "each poll is a request to the swarm server"),
  "tuning.statusPollRollingMs": r(100, 60_000, "milliseconds", false, "each poll is a request to the swarm server"),
  "tuning.dispatchLeaseSeconds": r(1, 3600, "seconds", false, "a dispatched episode must be claimed within this"),
  "tuning.dispatchStartLeaseSeconds": r(1, 3600, "seconds", false, "an invocation must start within this"),
  "tuning.heartbeatSeconds": r(1, 300, "seconds", false, "a running episode says it is alive this often"),
  "tuning.heartbeatLeaseSeconds": r(3, 3600, "seconds", false, "a silent running episode is given up after this"),
  "tuning.runLeaseSeconds": r(1, 36_000, "seconds", false, "a claimed episode must record its outcome within this (8 × an hour-long discard timeout fits)"),
  "tuning.reportLeaseSeconds": r(1, 86_400, "seconds", false, "an outcome must be reported within this"),
  "tuning.claimRetryMs": r(10, 600_000, "milliseconds", false, "first claim back-off"),
  "tuning.claimRetryNotRollingMs": r(10, 600_000, "milliseconds", false, "claim back-off while the engine is not ROLLING"),
  "tuning.claimRetryMaxMs": r(10, 3_600_000, "milliseconds", false, "longest claim back-off"),
  "tuning.stopGraceSeconds": r(1, 3600, "seconds", false, "a stopped function may run on this long"),
  "engine.bootTimeoutSeconds": r(1, 86_400, "seconds", false, "an engine may stay BOOTING this long"),
  "engine.pollQuickMs": r(100, 60_000, "milliseconds", false, "each poll is a request to the swarm server"),
  "engine.pollSlowMs": r(100, 600_000, "milliseconds", false, "each poll is a request to the swarm server"),
  "engine.maxPollsPerMinute": r(2, 600, "count", true, "status polls of one server per minute"),
} as const satisfies Record<string, SpecRange>;

/** A field of {@link SPEC_RANGES}. */
export type RangedField = keyof typeof SPEC_RANGES;

/** The largest weight of a run's datasets over its smallest, at most. */
export const MAX_WEIGHT_RATIO = 10_000;

/** A number as messages say it: `3,600`, `0.000001`, `1e9`, `1e-320`. */
export function numberText(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (n !== 0 && (Math.abs(n) >= 1e9 || Math.abs(n) < 1e-6)) return n.toExponential().replace("+", "");
  return n.toLocaleString("en-US", { maximumFractionDigits: 6 });
}

/** `1 to 3,600 seconds` — a range as messages say it. */
export function rangeText(field: RangedField): string {
  const { min, max, unit } = SPEC_RANGES[field];
  return `${numberText(min)} to ${numberText(max)}${unit === "count" || unit === "ratio" || unit === "reward" ? "" : ` ${unit}`}`;
}

/**
 * A zod number for a ranged field: finite, whole where the table says so, within [min, max]; each refusal names the
 * field, the range and an example.
 * @param label the field as messages name it (e.g. `tuning.heartbeatSeconds`)
 */
export function rangedNumber(field: RangedField, label: string, example: string) {
  const range = SPEC_RANGES[field];
  const says = (input: unknown) => `${label} is ${typeof input === "number" ? numberText(input) : "out of range"}; it must be from ${rangeText(field)} (${range.why}), e.g. ${example}`;
  let schema = z.number({ error: `${label} must be a number, e.g. ${example}` });
  if (range.whole) schema = schema.int({ error: `${label} must be a whole number, e.g. ${example}` });
  return schema.min(range.min, { error: (iss) => says(iss.input) }).max(range.max, { error: (iss) => says(iss.input) });
}
