/**
 * @module edge/consumer/functions-registry — the rollout functions of this Worker, set once by `createWorker` (the Worker's
 * entry module calls it at load time, before any request, Durable Object or entrypoint call runs in the isolate).
 * Classes that run functions (an entrypoint running episodes) read them here instead of importing `functions/`,
 * so the same classes serve this repository and a user's project.
 */
import type { RolloutFunction } from "../../sdk/contract.ts";

/** Rollout functions by name (the key is the function's `name`). */
export type RolloutFunctions = Readonly<Record<string, RolloutFunction>>;

let registered: RolloutFunctions | null = null;

/**
 * Sets the isolate's rollout functions.
 * @throws Error when a key differs from its function's `name` (a run names the function by that key)
 */
export function setRolloutFunctions(functions: RolloutFunctions): void {
  for (const [key, fn] of Object.entries(functions)) {
    if (fn?.name !== key) {
      throw new Error(`rollout function registered as "${key}" is named "${fn?.name}": the registry key must equal the function's name`);
    }
  }
  registered = functions;
}

/**
 * The isolate's rollout functions.
 * @throws Error when the Worker's entry never called `createWorker(functions)`
 */
export function rolloutFunctions(): RolloutFunctions {
  if (!registered) {
    throw new Error("no rollout functions registered: the Worker's entry module must `export default createWorker(functions)` (ajet-edge/worker)");
  }
  return registered;
}
