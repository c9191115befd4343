/**
 * @module runtime/limits — per-invocation platform guards that local workerd does not enforce (toolchain.md,
 * "Limits that local runs do NOT enforce"): at most 6 simultaneous outbound connections (BC-48) and a subrequest
 * budget with reserves so every claimed episode can still be ended or aborted and reported (BC-49).
 * Platform-free: runs in workerd and in Node.
 */

/** Cloudflare's cap on simultaneous open outbound connections per invocation (Workers limits page). */
export const MAX_CONNECTIONS_PER_INVOCATION = 6;

/** Thrown when an invocation's subrequest budget cannot cover a call; the episode is aborted, never half ended. */
export class SubrequestBudgetExceededError extends Error {
  /** retrying cannot help within this invocation: SwarmClient's retry loops stop on `retryable: false` */
  readonly retryable = false;
  constructor(
    readonly used: number,
    readonly limit: number,
    readonly purpose: string,
  ) {
    super(`subrequest budget exhausted: ${used}/${limit} used, no room for '${purpose}'; raise the SUBREQUEST_LIMIT var to your plan's limit (Paid allows 1,000 or more) or lower the queue's max_batch_size`);
    this.name = "SubrequestBudgetExceededError";
  }
}

/**
 * Counts subrequests of one invocation against a configured limit (BC-49: 50 on Free, 1,000/10,000 on Paid;
 * every fetch, redirect hop, DO RPC and queue send counts). Work may *reserve* calls ahead (for example the end
 * or abort plus the report of each claimed episode); ordinary calls may not eat into reservations.
 */
export class SubrequestBudget {
  #used = 0;
  #reserved = 0;

  /** @param limit subrequests allowed in this invocation (from configuration) */
  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`subrequest limit must be a positive integer, got ${limit}`);
  }

  get used(): number {
    return this.#used;
  }
  get reserved(): number {
    return this.#reserved;
  }
  /** Calls still available to unreserved work. */
  get available(): number {
    return this.limit - this.#used - this.#reserved;
  }

  /**
   * Takes one subrequest for ordinary work.
   * @throws SubrequestBudgetExceededError when only reserved room is left
   */
  take(purpose = "fetch"): void {
    if (this.available < 1) throw new SubrequestBudgetExceededError(this.#used, this.limit, purpose);
    this.#used++;
  }

  /**
   * Reserves `n` future calls (e.g. end/abort + report of an episode about to be claimed).
   * @returns a reservation whose `take()` spends one reserved call and `release()` returns the rest.
   * @throws SubrequestBudgetExceededError when `n` calls are not available
   */
  reserve(n: number, purpose = "reservation"): BudgetReservation {
    if (this.available < n) throw new SubrequestBudgetExceededError(this.#used, this.limit, purpose);
    this.#reserved += n;
    let left = n;
    return {
      take: () => {
        if (left > 0) {
          left--;
          this.#reserved--;
          this.#used++;
        } else this.take(purpose);
      },
      release: () => {
        this.#reserved -= left;
        left = 0;
      },
      get left() {
        return left;
      },
    };
  }
}

/** Reserved subrequests; see {@link SubrequestBudget.reserve}. */
export interface BudgetReservation {
  /** spends one reserved call (or an ordinary one once the reservation is used up) */
  take(): void;
  release(): void;
  readonly left: number;
}

/** A counting semaphore; waiters are served in FIFO order. */
export class ConnectionLimiter {
  #active = 0;
  #peak = 0;
  readonly #waiters: Array<() => void> = [];

  /** @param max simultaneous connections allowed (default 6, BC-48) */
  constructor(readonly max = MAX_CONNECTIONS_PER_INVOCATION) {}

  get active(): number {
    return this.#active;
  }
  /** Highest number of simultaneous connections seen (for tests and benchmarks). */
  get peak(): number {
    return this.#peak;
  }

  /**
   * Waits for a slot; the returned function releases it (idempotent). A released slot is handed straight to the
   * oldest waiter, so a caller arriving at that moment cannot overtake it and push the count past `max`.
   */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (this.#active < this.max && this.#waiters.length === 0) this.#active++;
    else {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          const i = this.#waiters.indexOf(go);
          if (i >= 0) this.#waiters.splice(i, 1);
          reject(signal?.reason ?? new Error("aborted"));
        };
        const go = () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        };
        if (signal?.aborted) return onAbort();
        signal?.addEventListener("abort", onAbort, { once: true });
        this.#waiters.push(go);
      });
    }
    this.#peak = Math.max(this.#peak, this.#active);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      if (next) next(); // the slot passes to the waiter: `active` is unchanged
      else this.#active--;
    };
  }
}

/** The fetch signature the runtime passes around (the openai SDK and SwarmClient accept it). */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * Sends a request and calls `done` once when it is over: when `send` fails, or when the response body is fully
 * read, cancelled or errors (at once when there is no body) — the moment its connection closes (BC-48) and a
 * streamed generation stops being activity (spec §5.4, BC-23).
 * @returns the response, with the same status and headers, whose body reports its end
 * @throws what `send` throws
 */
export async function untilBodyDone(send: () => Promise<Response>, done: () => void): Promise<Response> {
  let called = false;
  const finish = () => {
    if (!called) done();
    called = true;
  };
  let res: Response;
  try {
    res = await send();
  } catch (err) {
    finish();
    throw err;
  }
  if (!res.body) {
    finish();
    return res;
  }
  const reader = res.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: ended, value } = await reader.read();
        if (ended) {
          finish();
          controller.close();
        } else controller.enqueue(value);
      } catch (err) {
        finish();
        controller.error(err);
      }
    },
    async cancel(reason) {
      finish();
      await reader.cancel(reason);
    },
  });
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/**
 * Wraps `fetch` so each call takes one subrequest from `budget` and holds one `limiter` slot until the response
 * body is fully read, cancelled or errors (an unread body keeps its connection open, BC-48). A response without a
 * body releases at once.
 * @throws SubrequestBudgetExceededError before sending when the budget is spent
 */
export function guardFetch(
  inner: FetchLike,
  limiter: ConnectionLimiter,
  budget?: { take(purpose?: string): void },
  purposeOf: (input: string | URL | Request) => string = (i) => String(i instanceof Request ? i.url : i),
): FetchLike {
  return async (input, init) => {
    budget?.take(purposeOf(input));
    const release = await limiter.acquire(init?.signal ?? undefined);
    return untilBodyDone(() => inner(input, init), release);
  };
}
