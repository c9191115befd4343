/**
 * @module util/retry — the one retry of Durable Object and service-binding calls (issue 17), platform-free. The
 * platform marks the errors of such a call: `retryable: true` when sending it again is safe (e.g. the object was
 * reset or its code updated), `overloaded: true` when the object sheds load (sending again only adds to the load, so
 * it is never retried, whatever else the error says). cloudflare/agents decides the same way (`isErrorRetryable`:
 * `retryable && !overloaded`). Source: developers.cloudflare.com, Durable Objects "Error handling".
 */

/** The flags the platform sets on the error of a Durable Object or service call. */
export interface PlatformErrorFlags {
  retryable?: boolean;
  overloaded?: boolean;
}

/**
 * Whether a failed call may be sent again: never when the platform says the object is overloaded or that the error
 * is not retryable; yes when it says retryable; an error without flags (thrown by the callee itself, or a transport
 * outside the platform) by `unflagged` — true only for calls that are idempotent by design.
 */
export function isRetryable(err: unknown, unflagged = false): boolean {
  const flags = (typeof err === "object" && err !== null ? err : {}) as PlatformErrorFlags;
  if (flags.overloaded === true) return false;
  if (flags.retryable === true) return true;
  if (flags.retryable === false) return false;
  return unflagged;
}

/** How {@link retrying} sends a call again. */
export interface RetryOptions {
  /** sends in all, the first included (≥ 1) */
  maxAttempts: number;
  /** pause before each resend, ms (≥ 0), on the injected clock */
  delayMs: number;
  sleep(ms: number): Promise<void>;
  /** whether an error may be retried; default {@link isRetryable} (flags only: an unflagged error is not) */
  isRetryable?(err: unknown): boolean;
  /** told of each error that is retried, with the number of the send that failed (1-based) */
  onRetry?(err: unknown, attempt: number): void;
}

/** @throws RangeError naming the option when `maxAttempts` is not a whole number ≥ 1 or `delayMs` not a finite number ≥ 0 */
export function validateRetryOptions(options: Pick<RetryOptions, "maxAttempts" | "delayMs">): void {
  if (!Number.isInteger(options.maxAttempts) || options.maxAttempts < 1) throw new RangeError(`maxAttempts must be a whole number ≥ 1, got ${options.maxAttempts}`);
  if (!Number.isFinite(options.delayMs) || options.delayMs < 0) throw new RangeError(`delayMs must be a finite number ≥ 0, got ${options.delayMs}`);
}

/**
 * Sends `call` until it answers, an error may not be retried, or `maxAttempts` sends were made.
 * @param call the call; it gets the number of this send (1-based)
 * @returns the answer and how many sends it took
 * @throws the last error (RangeError for bad options, before any send)
 */
export async function retrying<T>(call: (attempt: number) => Promise<T> | T, options: RetryOptions): Promise<{ value: T; attempts: number }> {
  validateRetryOptions(options);
  const retryable = options.isRetryable ?? ((err: unknown) => isRetryable(err));
  for (let attempt = 1; ; attempt++) {
    try {
      return { value: await call(attempt), attempts: attempt };
    } catch (err) {
      if (attempt >= options.maxAttempts || !retryable(err)) throw err;
      options.onRetry?.(err, attempt);
      await options.sleep(options.delayMs);
    }
  }
}
