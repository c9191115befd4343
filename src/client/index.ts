/** @module client — the SwarmClient (issue 2 §3): typed, fetch-injectable, runs in workerd and Node. */
export * from "./swarm-client.ts";
export * from "./errors.ts";
export * from "./types.ts";
export * from "./throttle.ts";
export * from "./end-outcome.ts";
export * from "./url.ts";
export * from "./claim.ts";
export { DEFAULT_BACKOFF, realClock, realSleep, withJitter, type SleepFn, type SwarmBackoff, type SwarmClock, type WaitOptions } from "./timing.ts";
export { DEFAULT_LOCAL_EXPIRY } from "./local-expiry.ts";
export { callEndpoint, type SwarmFetch, type SwarmRequestOptions, type EndpointResponse } from "./transport.ts";
