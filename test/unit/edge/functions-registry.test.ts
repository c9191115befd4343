/**
 * @module test/unit/edge/functions-registry — the rollout functions `createWorker` registers for the isolate's
 * classes: unset until the Worker's entry calls it (a clear error naming the fix), and a key that differs from its
 * function's name is refused (a run names the function by the key).
 */
import { describe, expect, it } from "vitest";
import { rolloutFunctions, setRolloutFunctions } from "../../../src/edge/consumer/functions-registry.ts";
import { defineRolloutFunction } from "../../../src/sdk/contract.ts";

const echo = defineRolloutFunction({ name: "echo", run: async () => ({ reward: 1 }) });

describe("the Worker's function registry", () => {
  it("says how to register before anything is registered, then returns what was registered", () => {
    expect(() => rolloutFunctions()).toThrow("no rollout functions registered: the Worker's entry module must `export default createWorker(functions)` (ajet-edge/worker)");
    setRolloutFunctions({ echo });
    expect(rolloutFunctions()).toEqual({ echo });
  });

  it("refuses a key that is not the function's name", () => {
    expect(() => setRolloutFunctions({ other: echo })).toThrow('rollout function registered as "other" is named "echo": the registry key must equal the function\'s name');
  });
});
