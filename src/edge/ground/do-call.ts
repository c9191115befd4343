/**
 * @module edge/ground/do-call — a call to one of the Worker's Durable Objects that is idempotent (a quota release, a
 * registration, leaving a swarm server's object), made with the one retry of Durable Object and service calls
 * (util/retry): an error the platform marks `retryable` (the object was reset, its code updated) is sent again after
 * {@link DO_CALL_DELAY_MS}, up to {@link DO_CALL_ATTEMPTS} sends; an `overloaded` object, or any other error, is not.
 */
import { retrying } from "../../util/retry.ts";

/** Sends of one call, the first included. */
export const DO_CALL_ATTEMPTS = 3;
/** Pause before a resend, ms. */
export const DO_CALL_DELAY_MS = 100;

/** Makes an idempotent Durable Object call, resending it while the platform says it may. @throws the last error */
export async function callObject<T>(call: () => Promise<T>): Promise<T> {
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  return (await retrying(call, { maxAttempts: DO_CALL_ATTEMPTS, delayMs: DO_CALL_DELAY_MS, sleep })).value;
}
