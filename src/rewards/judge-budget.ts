/**
 * @module rewards/judge-budget — the idle-timeout budget of a judged reward (BC-23). The swarm server's janitor
 * reverts a claimed episode whose last LLM activity is older than `discard_episode_timeout`, scanning every 10 s;
 * judge calls are not swarm calls, so the time from the last policy call to `end_episode` must fit:
 *
 *   discardEpisodeTimeoutSeconds ≥ max judge latency + 10 s janitor scan + margin
 *
 * Past the timeout the runtime classifies the episode `expired` (no end sent, the repeat is retried under the same
 * task_id: `src/runtime/outcome.ts`), so a too-small timeout costs whole episodes, not wrong rewards.
 */
import { JUDGE_DEFAULTS, type OpenAIJudgeOptions } from "./judge.ts";

/** The swarm server's janitor scan interval (spec §5.4, BC-23), in seconds. */
export const JANITOR_SCAN_INTERVAL_SECONDS = 10;

/** Default safety margin on top of judge latency and the janitor scan, in seconds (scoring, clocks, the end call). */
export const DEFAULT_IDLE_MARGIN_SECONDS = 20;

/**
 * Worst-case wall time of one verdict of `createOpenAIJudge(options)`, in ms: every attempt runs into its timeout
 * and every back-off is waited: `maxAttempts × timeoutMs + Σ retryDelayMs × 2^(n-2)`.
 */
export function maxJudgeLatencyMs(
  options: Pick<OpenAIJudgeOptions, "maxAttempts" | "timeoutMs" | "retryDelayMs"> = {},
): number {
  const attempts = Math.max(1, Math.floor(options.maxAttempts ?? JUDGE_DEFAULTS.maxAttempts));
  const timeoutMs = options.timeoutMs ?? JUDGE_DEFAULTS.timeoutMs;
  const delayMs = options.retryDelayMs ?? JUDGE_DEFAULTS.retryDelayMs;
  let total = attempts * timeoutMs;
  for (let n = 2; n <= attempts; n++) total += delayMs * 2 ** (n - 2);
  return total;
}

/**
 * The smallest safe `discardEpisodeTimeoutSeconds` when `judgeCalls` verdicts run one after another after the
 * last policy call (parallel verdicts count once): ⌈judgeCalls × maxJudgeLatency / 1000⌉ + 10 + margin.
 */
export function minDiscardTimeoutSeconds(input: {
  maxJudgeLatencyMs: number;
  /** verdicts in sequence after the last policy call; default 1 */
  judgeCalls?: number;
  marginSeconds?: number;
}): number {
  const sequential = Math.max(1, input.judgeCalls ?? 1) * input.maxJudgeLatencyMs;
  return Math.ceil(sequential / 1000) + JANITOR_SCAN_INTERVAL_SECONDS + (input.marginSeconds ?? DEFAULT_IDLE_MARGIN_SECONDS);
}

/**
 * Checks a run's discard timeout against a judge's worst case.
 * @returns `null` when it fits, else a message with the numbers and the fix (raise the timeout or shorten the
 *   judge's `timeoutMs` / `maxAttempts`)
 */
export function checkIdleBudget(
  discardEpisodeTimeoutSeconds: number,
  input: Parameters<typeof minDiscardTimeoutSeconds>[0],
): string | null {
  const needed = minDiscardTimeoutSeconds(input);
  if (discardEpisodeTimeoutSeconds >= needed) return null;
  return (
    `discardEpisodeTimeoutSeconds ${discardEpisodeTimeoutSeconds} is below the judge's idle budget ${needed} s ` +
    `(${input.judgeCalls ?? 1} × ${input.maxJudgeLatencyMs} ms worst-case judge latency + ${JANITOR_SCAN_INTERVAL_SECONDS} s ` +
    `janitor scan + ${input.marginSeconds ?? DEFAULT_IDLE_MARGIN_SECONDS} s margin): raise the timeout, or lower ` +
    "the judge's timeoutMs or maxAttempts"
  );
}
