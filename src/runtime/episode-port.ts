/**
 * @module runtime/episode-port — the scheduler port as one episode invocation uses it: every call is a Durable
 * Object RPC paid from the episode's subrequest reservation, and an idempotent report is sent once more after a
 * failure the platform does not forbid retrying (util/retry).
 */
import type { SleepFn } from "../client/index.ts";
import type { SchedulerPort } from "../port/index.ts";
import type { RolloutLogger } from "../sdk/contract.ts";
import { isRetryable, retrying } from "../util/retry.ts";
import type { BudgetReservation } from "./limits.ts";

/** Pause before sending a failed scheduler RPC once more (ms, on the injected clock). */
export const RPC_RETRY_DELAY_MS = 1_000;
/**
 * The scheduler port as one episode uses it: every call is a Durable Object RPC, a subrequest paid from the
 * episode's reservation (BC-49). Reports are idempotent by `(episodeKey, attempt)`, so {@link EpisodePort.twice}
 * sends one once more after a failure (util/retry `retrying`): the object may have applied it before its answer was
 * lost (a reset, BC-51), and the second answer then says `duplicate`. An error the platform marks `overloaded` or not
 * `retryable` is not sent again; one without flags is (the call is idempotent).
 */
export class EpisodePort {
  constructor(
    private readonly port: SchedulerPort,
    private readonly reservation: BudgetReservation | undefined,
    private readonly deps: { log: RolloutLogger; sleep: SleepFn },
  ) {}

  /** One call. @throws what the call throws */
  async once<T>(call: (port: SchedulerPort) => Promise<T> | T): Promise<T> {
    this.reservation?.take();
    return call(this.port);
  }

  /**
   * The call, and once more {@link RPC_RETRY_DELAY_MS} after a failure that may be retried.
   * @returns the answer and whether it came from the second send @throws what the last send throws
   */
  async twice<T>(call: (port: SchedulerPort) => Promise<T> | T): Promise<{ answer: T; resent: boolean }> {
    const { value, attempts } = await retrying(() => this.once(call), {
      maxAttempts: 2,
      delayMs: RPC_RETRY_DELAY_MS,
      sleep: (ms) => this.deps.sleep(ms),
      isRetryable: (err) => isRetryable(err, true),
      onRetry: (err) => this.deps.log.warn("scheduler RPC failed; sending it once more", { error: String(err) }),
    });
    return { answer: value, resent: attempts > 1 };
  }
}
