/**
 * @module port/abort — why an episode attempt was aborted: the one list of abort causes every room uses (the
 * runtime's outcomes, the SDK's LLM guards, the rewards' judge, the scheduler's leases), the causes that must not be
 * retried, and {@link EpisodeAbortError}, the error a function (or the runtime) throws to abort an episode.
 */

/**
 * The abort causes the project itself raises, by name. A rollout function may throw its own reason too (any
 * snake_case string): the scheduler counts it like any other cause. Causes from an `/end_episode` refusal carry the
 * client's reason after a colon (`expired:notClaimed`, `lost:weightSyncing`).
 */
export const AbortCause = {
  /** the function threw something other than an {@link EpisodeAbortError} */
  functionError: "function_error",
  /** the result is not one finite reward per swarm (BC-22) */
  invalidReward: "invalid_reward",
  /** no successful LLM call on some swarm: the server would train on nothing (BC-29) */
  noLlmCall: "no_llm_call",
  /** past the local lifetime, 8 × the discard timeout (BC-24) */
  lifetimeExceeded: "lifetime_exceeded",
  /** stopped to leave time to report before the invocation's wall limit */
  timeLimit: "time_limit",
  /** no LLM activity for the discard timeout less a margin: stopped before the server's janitor reverts the claim (BC-23) */
  idleDeadline: "idle_deadline",
  /** the run was stopped by its owner while the episode ran */
  runStopped: "run_stopped",
  /**
   * over-provisioning: the episode's batch closed on other task groups while it ran, so its claim is given back
   * (`/abort_episode`, never ended) and its group runs again in a later window (scheduler/over-provision)
   */
  batchClosed: "batch_closed",
  /** a request with the key of an episode that is over (its key may be another client's now): refused, not sent */
  episodeOver: "episode_over",
  /** the server never confirmed an `/abort_episode` after its retries: the claim may still be held */
  abortUnconfirmed: "abort_unconfirmed",
  /** idle longer than the discard timeout, or end refused as not claimed / other client (BC-23) */
  expired: "expired",
  /** the invocation's subrequest budget ran out (BC-49) */
  subrequestBudget: "subrequest_budget",
  /** a 200 body without `choices`: the episode key was refused (BC-38) */
  authError: "auth_error",
  /** a malformed body, an in-band stream error, or a stream cut short (BC-40) */
  infraError: "infra_error",
  /** the engine aborted generation, e.g. for a weight sync (BC-43) */
  llmAborted: "llm_aborted",
  /** the task lacks what the function needs (no gold, wrong columns): a data error */
  invalidTask: "invalid_task",
  /** the context holds no claimed episode for a swarm the function uses */
  noEpisode: "no_episode",
  /** no usable judge verdict after the retry budget (BC-21) */
  judgeUnparseable: "judge_unparseable",
  /** the judge endpoint failed (timeouts, connection errors, 408/409/429/5xx after the budget; other 4xx at once) */
  judgeUnavailable: "judge_unavailable",
  /** only some of the judge's secrets are set: a configuration error */
  judgeMisconfigured: "judge_misconfigured",
  /** the outcome could not be recorded: claims given back, nothing ended (BC-26) */
  outcomeUnrecorded: "outcome_unrecorded",
  /** an in-flight attempt went quiet past its lease (BC-51) */
  leaseExpired: "lease_expired",
  /** a train episode recorded a score (eval) outcome */
  scoreInTrainRun: "score_in_train_run",
  /** `/end_episode` refused because the record is gone (weight-sync wipe, engine left rolling, spec §5.5) */
  lost: "lost",
  /**
   * an end whose outcome the server's record could not tell (its answer lost, its batch closed without a trace of
   * it): neither counted nor run again (scheduler/unknown-ends)
   */
  endUnknown: "end_unknown",
  /** the outbox held no output to resend */
  outboxMissing: "outbox_missing",
  /** an abort was reported without a cause */
  aborted: "aborted",
  /** an LLM request body or an inline image over the Worker's limits (sdk/llm-request-limits): the same task sends it again, so it is not retried */
  requestTooLarge: "request_too_large",
  /**
   * an LLM request sent again inside one episode while the same request was still open on the server (a "ghost
   * sample" that would train twice, runtime/ghost-guard): refused, and the attempt stopped
   */
  ghostSample: "ghost_sample",
  /**
   * a sandbox's infrastructure failed: its create was refused or unanswered after the retries, the sandbox died, or
   * its backend timed out. Never a reward: the attempt is aborted and runs again within the attempt budget
   */
  sandboxFailure: "sandbox_failure",
  /** the function asked for a sandbox in a run without the `sandbox` block: a configuration error */
  sandboxDisabled: "sandbox_disabled",
  /** the function asked for a sandbox the backend cannot give (an unknown instance type or image): a configuration error */
  sandboxMisconfigured: "sandbox_misconfigured",
  /** the function tried to put a secret into a sandbox that the run's `sandbox.secrets` does not name */
  sandboxSecret: "sandbox_secret",
  /** the scheduler's own: an episode not yet claimed, dropped because the run stops (nothing was sent to a server) */
  stopped: "stopped",
  /** the scheduler's own: the server batch an accepted end landed in was wiped before training; the repeat runs again (not a failure) */
  wiped: "wiped",
} as const;
/** One of the project's own abort causes (see {@link AbortCause}). */
export type AbortCause = (typeof AbortCause)[keyof typeof AbortCause];

/**
 * Causes that fail the same way on every try — a data or configuration error, not the model or the infrastructure:
 * the scheduler drops the task group at once instead of burning `maxAttempts` tries per repeat (BC-32).
 */
export const NON_RETRYABLE_CAUSES: ReadonlySet<string> = new Set<AbortCause>([
  AbortCause.invalidTask,
  AbortCause.judgeMisconfigured,
  AbortCause.sandboxDisabled,
  AbortCause.sandboxMisconfigured,
  AbortCause.sandboxSecret,
  AbortCause.requestTooLarge,
]);

/** True when a failed attempt with this cause may run again (every cause but {@link NON_RETRYABLE_CAUSES}). */
export function isRetryableCause(cause: string): boolean {
  return !NON_RETRYABLE_CAUSES.has(cause);
}

/**
 * Thrown by a function (or the runtime) to abort the episode as an infrastructure or data failure, not a model
 * failure: the runtime records an abort with `reason` as its cause and sends `/abort_episode`.
 * @param reason one of {@link AbortCause} or the function's own snake_case reason
 */
export class EpisodeAbortError extends Error {
  constructor(
    readonly reason: AbortCause | (string & {}),
    message?: string,
    options?: { cause?: unknown },
  ) {
    super(message ?? reason, options);
    this.name = "EpisodeAbortError";
  }
}
