/**
 * @module runtime/ghost-guard — refuses a "ghost sample" (issue 20 §2, llm-routes §1 step 7 and §5): an LLM request
 * sent again inside one episode while the same request is still open on the server. The server's generation is
 * shielded from its client: when a client gives up (its timeout, an inactivity watchdog, a cut connection) the
 * generation still finishes, up to the proxy's budget, and is recorded as a turn of the episode; a harness that then
 * re-issues the call gets a second turn of the same prompt, and the episode trains on both. So a request equal to
 * one that is in flight, or that was given up less than the proxy's budget ago, is never sent: the call is refused,
 * the attempt stopped with cause `ghost_sample` (counted in the run's failures), and the repeat runs again. The same
 * request after the first one's answer was read to its end is a new turn and passes. Requests are compared by the
 * SHA-256 of swarm, path and body (the SDKs serialise the same parameters to the same body). Platform-free.
 */
import { AbortCause, EpisodeAbortError } from "../port/index.ts";
import { llmCallRoute, urlOf } from "../sdk/llm-routes.ts";
import type { FetchLike } from "./limits.ts";

/** How long the newest proxy waits for one generation (600 slices of 6 s, llm-routes §1 step 5), milliseconds. */
export const SERVER_LLM_CALL_BUDGET_MS = 3_600_000;

/** Options of a {@link GhostGuard}. Times are epoch ms. */
export interface GhostGuardOptions {
  now(): number;
  /** stops the attempt (the episode's stop: fires `ctx.signal`) */
  stop(cause: string, message: string): void;
  /** how long the server may still generate for a call its client gave up (default {@link SERVER_LLM_CALL_BUDGET_MS}) */
  serverCallBudgetMs?: number;
}

interface OpenCall {
  key: string;
  startedAtMs: number;
  /** false once the answer was read or the client gave up */
  inFlight: boolean;
  /** the client gave up before the answer ended: open until the server's budget has passed */
  givenUp: boolean;
}

/** The key of an LLM request: hex SHA-256 of swarm, URL path and body. */
export async function requestKey(swarm: string, url: string, body: string): Promise<string> {
  let path = url;
  try {
    path = new URL(url).pathname;
  } catch {
    // a relative URL: keep the text as it is
  }
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${swarm}\n${path}\n${body}`));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Keys already computed, by the request's init object (one per call the SDK makes; retries pass it on unchanged). */
const keysByInit = new WeakMap<object, { swarm: string; body: string; key: Promise<string> }>();

/**
 * {@link requestKey} of one call, computed once per request object: the ghost guard and the call journal
 * (runtime/call-journal) both key every LLM call, and retries send the same request again.
 */
export function requestKeyOf(swarm: string, input: Parameters<FetchLike>[0], init: RequestInit, body: string): Promise<string> {
  const hit = keysByInit.get(init);
  if (hit && hit.swarm === swarm && hit.body === body) return hit.key;
  const key = requestKey(swarm, urlOf(input), body);
  keysByInit.set(init, { swarm, body, key });
  return key;
}

/** The open LLM calls of one episode attempt; see the module text. */
export class GhostGuard {
  readonly #o: GhostGuardOptions;
  readonly #budgetMs: number;
  readonly #open: OpenCall[] = [];
  /** re-issues refused */
  refused = 0;

  constructor(o: GhostGuardOptions) {
    this.#o = o;
    this.#budgetMs = o.serverCallBudgetMs ?? SERVER_LLM_CALL_BUDGET_MS;
  }

  /**
   * Wraps one swarm's LLM fetch. Requests that are not LLM calls (or have no string body) pass untouched.
   * @throws EpisodeAbortError `ghost_sample` for a re-issue (nothing is sent; the attempt's stop fires first)
   */
  wrap(swarm: string, inner: FetchLike): FetchLike {
    return async (input, init) => {
      const body = typeof init?.body === "string" ? init.body : null;
      if (body === null || !llmCallRoute(input, init)) return inner(input, init);
      const key = await requestKeyOf(swarm, input, init!, body);
      this.#refuseReissue(key);
      const call: OpenCall = { key, startedAtMs: this.#o.now(), inFlight: true, givenUp: false };
      this.#open.push(call);
      // the client giving up (its timeout, its abort) leaves the server generating, however the body then ends
      init?.signal?.addEventListener("abort", () => this.#giveUp(call), { once: true });
      let res: Response;
      try {
        res = await inner(input, init);
      } catch (err) {
        this.#giveUp(call); // the request may have reached the server: it stays open for the server's budget
        throw err;
      }
      if (!res.body) {
        this.#answered(call);
        return res;
      }
      return this.#watchBody(res, call);
    };
  }

  #refuseReissue(key: string): void {
    const nowMs = this.#o.now();
    // calls given up longer ago than the server's budget are over on the server too
    for (let i = this.#open.length - 1; i >= 0; i--) {
      const c = this.#open[i]!;
      if (c.givenUp && nowMs >= c.startedAtMs + this.#budgetMs) this.#open.splice(i, 1);
    }
    const open = this.#open.find((c) => c.key === key);
    if (!open) return;
    this.refused++;
    const since = Math.round((nowMs - open.startedAtMs) / 1000);
    const state = open.inFlight ? "whose answer is still pending" : "which its client gave up while the server may still be generating it";
    const message =
      `an LLM request was sent again ${since} s after the same request, ${state}: the server would record both as turns of ` +
      "the episode (a ghost sample that trains twice). The re-issue was refused and the attempt stopped; give a long call " +
      "more time instead of re-sending it";
    this.#o.stop(AbortCause.ghostSample, message);
    throw new EpisodeAbortError(AbortCause.ghostSample, message);
  }

  /** The answer was read to its end: the call is over (unless its client had given up first). */
  #answered(call: OpenCall): void {
    if (call.givenUp) return;
    call.inFlight = false;
    const i = this.#open.indexOf(call);
    if (i >= 0) this.#open.splice(i, 1);
  }

  #giveUp(call: OpenCall): void {
    if (!call.inFlight) return;
    call.inFlight = false;
    call.givenUp = true;
  }

  /** Passes the body through: read to its end = answered; cut, failed or cancelled = given up (still open). */
  #watchBody(res: Response, call: OpenCall): Response {
    const reader = res.body!.getReader();
    const body = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        try {
          const { done, value } = await reader.read();
          if (done) {
            this.#answered(call);
            controller.close();
          } else controller.enqueue(value);
        } catch (err) {
          this.#giveUp(call);
          controller.error(err);
        }
      },
      cancel: async (reason) => {
        this.#giveUp(call);
        await reader.cancel(reason);
      },
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  }
}
