/**
 * @module runtime/key-fence — no request with an episode's key leaves the runtime once the episode stopped
 * (BC-23). A seed-style function (`fromAgentRun`) gets only `baseUrl` and `apiKey` and calls the LLM with its own
 * client, i.e. with the global fetch, past every guard of `ctx`. The fence sits in front of the global fetch: a
 * request whose `Authorization: Bearer <key>` or `x-api-key` is an open episode's key takes that episode's guarded route (the
 * same limiter, budget, activity watch, retries and signal as `ctx.openai`); a request with the key of an episode
 * that stopped or is over is refused before it is sent; every other request passes untouched.
 */
import { AbortCause, EpisodeAbortError } from "../port/index.ts";
import type { FetchLike } from "./limits.ts";

/** Reason of a request refused because its episode is over. */
export const EPISODE_OVER = AbortCause.episodeOver;

const FENCE = Symbol.for("ajet-edge.key-fence");

function headersOf(input: string | URL | Request, init?: RequestInit): Headers | null {
  return init?.headers ? new Headers(init.headers) : input instanceof Request ? input.headers : null;
}

/** The `Bearer` token of a request, else its `x-api-key`, if any (where the LLM SDKs put an API key). */
export function bearerOf(input: string | URL | Request, init?: RequestInit): string | undefined {
  return keysOf(input, init)[0];
}

/**
 * Every API key a request carries: its `Authorization: Bearer` token and its `x-api-key` (an Anthropic client may
 * send both, and a different key in each).
 */
export function keysOf(input: string | URL | Request, init?: RequestInit): string[] {
  const headers = headersOf(input, init);
  const auth = headers?.get("authorization") ?? null;
  const bearer = auth ? /^Bearer\s+(\S+)$/i.exec(auth.trim())?.[1] : undefined;
  const apiKey = headers?.get("x-api-key")?.trim() || undefined;
  return [bearer, apiKey].filter((k, i, all): k is string => k !== undefined && all.indexOf(k) === i);
}

/** Routes requests by episode key; see the module text. */
export class KeyFence {
  readonly #open = new Map<string, FetchLike>();
  /** keys of episodes that are over; kept for the life of the isolate (a few bytes per episode) */
  readonly #closed = new Set<string>();

  /** @param original the platform fetch requests without an episode key go to */
  constructor(readonly original: FetchLike) {}

  /** The fenced fetch (what the global fetch becomes). */
  readonly fetch: FetchLike = (input, init) => {
    const keys = keysOf(input, init);
    if (keys.some((k) => this.#closed.has(k))) {
      return Promise.reject(new EpisodeAbortError(EPISODE_OVER, "this episode is over: its key may already belong to another client's episode, so the request was not sent"));
    }
    for (const key of keys) {
      const route = this.#open.get(key);
      if (route) return route(input, init);
    }
    return this.original(input, init);
  };

  /**
   * Opens `key` with its episode's guarded fetch. @returns the close function: from then on the key is refused
   */
  open(key: string, route: FetchLike): () => void {
    this.#open.set(key, route);
    this.#closed.delete(key);
    return () => {
      this.#open.delete(key);
      this.#closed.add(key);
    };
  }

  /** True while `key` is open (tests). */
  isOpen(key: string): boolean {
    return this.#open.has(key);
  }
}

/**
 * Puts a {@link KeyFence} in front of `scope.fetch` once (idempotent: a second call returns the same fence).
 * @param scope the global object (`globalThis` in the Worker)
 */
export function installKeyFence(scope: { fetch: FetchLike } = globalThis as unknown as { fetch: FetchLike }): KeyFence {
  const current = scope.fetch as FetchLike & { [FENCE]?: KeyFence };
  if (current[FENCE]) return current[FENCE];
  const original = current.bind(scope) as FetchLike;
  const fence = new KeyFence(original);
  const fenced = Object.assign((input: string | URL | Request, init?: RequestInit) => fence.fetch(input, init), { [FENCE]: fence });
  scope.fetch = fenced;
  return fence;
}
