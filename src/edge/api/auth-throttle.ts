/**
 * @module edge/api/auth-throttle — failed sign-ins are throttled per client address (issue 18). Every failed
 * authentication counts against the platform's rate-limiting binding `AUTH_FAILURES` (wrangler.toml: 20 per 60 s);
 * once an address is over, it is locked for the period: every request of it that carries a credential is answered
 * 429 with `Retry-After` *before* its token is checked, so a right guess during the lockout tells nothing. The lock
 * is a marker in the Cache API (shared by the isolates of a location), the count is the binding's.
 *
 * What the platform gives and what it does not: the binding counts per Cloudflare location and is eventually
 * consistent (a burst may pass a few over the limit); the Cache API is per data center. An attacker spread over many
 * locations gets `limit` guesses per period from each. Tokens are compared in constant time (edge/api/auth.ts), and
 * a random token of 32+ characters (docs/security.md: `openssl rand -hex 32`) is out of reach of guessing anyway;
 * this bounds the weak case (a short, chosen token). Without the binding (an old wrangler.toml) nothing is throttled.
 */

/** The subset of the rate-limiting binding used here (`RateLimit` in workers types). */
export interface RateLimiter {
  limit(options: { key: string }): Promise<{ success: boolean }>;
}

/** The lockout's length, seconds: the binding's period (wrangler.toml `simple.period`). */
export const AUTH_LOCK_SECONDS = 60;

/**
 * The address a request comes from: `CF-Connecting-IP`, which Cloudflare sets on every request; null without it
 * (local workerd, where every client is the one developer: not throttled, or a test suite's wrong tokens on purpose
 * would lock its own later requests out).
 */
export function clientKey(req: Request): string | null {
  return req.headers.get("cf-connecting-ip")?.trim() || null;
}

const lockUrl = (key: string) => `https://auth-lock.ajet-edge.invalid/${encodeURIComponent(key)}`;

/** The Cache API's default cache when the runtime has one (workerd; not Node). */
function defaultCache(): Cache | null {
  const c = (globalThis as { caches?: { default?: Cache } }).caches;
  return c?.default ?? null;
}

/** True while `key` is locked out (a failure over the limit in the last {@link AUTH_LOCK_SECONDS}). */
export async function isLocked(key: string): Promise<boolean> {
  const cache = defaultCache();
  if (!cache) return false;
  const hit = await cache.match(lockUrl(key)).catch(() => undefined);
  if (!hit) return false;
  const until = Number(hit.headers.get("x-locked-until"));
  return Number.isFinite(until) && until > Date.now();
}

/**
 * Counts one failed authentication of `key`; over the limit, locks it for {@link AUTH_LOCK_SECONDS}.
 * @returns true when `key` is now over the limit (answer 429)
 */
export async function countFailure(limiter: RateLimiter | undefined, key: string): Promise<boolean> {
  if (!limiter) return false;
  const { success } = await limiter.limit({ key });
  if (success) return false;
  const cache = defaultCache();
  const until = Date.now() + AUTH_LOCK_SECONDS * 1000;
  await cache
    ?.put(lockUrl(key), new Response("locked", { headers: { "cache-control": `max-age=${AUTH_LOCK_SECONDS}`, "x-locked-until": String(until) } }))
    .catch(() => undefined);
  return true;
}

/** The 429's message. */
export const THROTTLED_MESSAGE = `too many failed sign-ins from this address; wait ${AUTH_LOCK_SECONDS} s (Retry-After) and check the token (AJET_API_TOKEN)`;
