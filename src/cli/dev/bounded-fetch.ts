/**
 * @module cli/dev/bounded-fetch — every request the CLI sends to a Worker has a timeout and its command's abort
 * signal (Ctrl-C): a request that is lost or that a hung Worker never answers fails instead of waiting for the
 * platform's 300 s default.
 */

/** How long one request to the Worker may take by default, seconds (`--request-timeout`). */
export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 30;

/**
 * fetch with a timeout on every request and the caller's current abort signal (read per request, so a command can
 * switch it between phases: following a run aborts on Ctrl-C or the deadline, draining it only on a second Ctrl-C).
 * A request that times out rejects with a `TimeoutError` (see {@link isRequestTimeout}); the timeout also bounds
 * reading the answer's body.
 *
 * One controller per request, held by its own timer: not `AbortSignal.any`, whose composite signal fetch may hold
 * only weakly — collected, it never aborts, and the request waits for the platform's 300 s default.
 */
export function boundedFetch(timeoutMs: number, signal: () => AbortSignal | undefined = () => undefined, fetchFn: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, "TimeoutError")), timeoutMs);
    timer.unref?.();
    const parents = [signal(), init?.signal ?? undefined].filter((x): x is AbortSignal => x !== undefined);
    const onAbort = (event: Event) => controller.abort((event.target as AbortSignal).reason);
    for (const p of parents) {
      if (p.aborted) controller.abort(p.reason);
      else p.addEventListener("abort", onAbort, { once: true });
    }
    try {
      return await fetchFn(input, { ...init, signal: controller.signal });
    } finally {
      for (const p of parents) p.removeEventListener("abort", onAbort);
    }
  };
}

/** Whether a failed request timed out (the Worker did not answer in time). */
export function isRequestTimeout(err: unknown): boolean {
  return err instanceof Error && err.name === "TimeoutError";
}

