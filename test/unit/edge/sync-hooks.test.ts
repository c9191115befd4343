/**
 * The weight-sync hooks of a run object (edge/run/sync-hooks): the function module's `onWeightSync(step, metrics)` and
 * the run's webhook (POST `{runId, step, metrics}`) are each called once per `weightSyncHook` command; a throw, an
 * HTTP error or a network error is logged as a failure, a hook past {@link HOOK_TIMEOUT_MS} as slow, and neither
 * ever throws or holds the command: the command returns at once and hands the hooks to the object's `waitUntil`.
 * The real stack (workerd, the emulator in its own process) is test/e2e/agree-modes.test.ts.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { callWeightSyncHooks, HOOK_TIMEOUT_MS, runSyncCommand, type HookDeps, type SyncCommandHost } from "../../../src/edge/run/sync-hooks.ts";
import { setRolloutFunctions } from "../../../src/edge/consumer/functions-registry.ts";
import type { WeightSyncHook } from "../../../src/scheduler/index.ts";
import type { RolloutFunction } from "../../../src/sdk/contract.ts";
import type { RunMeta } from "../../../src/edge/run/run-views.ts";

const metrics = { episodes: 4, meanReward: 0.5, otherClientsEpisodes: 2, windows: 3 };
const command: WeightSyncHook = { type: "weightSyncHook", step: 3, metrics };

interface Line {
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

function deps(over: Partial<HookDeps> = {}): HookDeps & { lines: Line[]; posts: Array<{ url: string; body: unknown }> } {
  const lines: Line[] = [];
  const posts: Array<{ url: string; body: unknown }> = [];
  return {
    runId: "run-1",
    fn: null,
    webhook: undefined,
    fetch: async (url, init) => {
      posts.push({ url, body: JSON.parse(String(init?.body)) });
      return new Response("ok");
    },
    log: (level, message, fields) => void lines.push({ level, message, fields }),
    lines,
    posts,
    ...over,
  };
}

const fn = (onWeightSync: RolloutFunction["onWeightSync"]): RolloutFunction => ({ name: "hooked", run: async () => ({ reward: 1 }), onWeightSync });

afterEach(() => void vi.useRealTimers());

describe("weight-sync hooks", () => {
  it("calls the function's onWeightSync with the step and metrics and POSTs {runId, step, metrics} to the webhook, once each", async () => {
    const seen: unknown[] = [];
    const d = deps({ fn: fn((step, m) => void seen.push([step, m])), webhook: "https://hooks.example.com/ajet" });
    await callWeightSyncHooks(command, d);
    expect(seen).toEqual([[3, metrics]]);
    expect(d.posts).toEqual([{ url: "https://hooks.example.com/ajet", body: { runId: "run-1", step: 3, metrics } }]);
    expect(d.lines).toEqual([
      { level: "info", message: "onWeightSync called", fields: { step: 3 } },
      { level: "info", message: "weightSyncWebhook called", fields: { step: 3 } },
    ]);
  });

  it("no hook: nothing is called or logged", async () => {
    const d = deps({ fn: { name: "plain", run: async () => ({ reward: 1 }) } });
    await callWeightSyncHooks(command, d);
    expect({ lines: d.lines, posts: d.posts }).toEqual({ lines: [], posts: [] });
  });

  it("a throwing hook, a webhook answering 500 and one that cannot be reached are logged as failures; nothing throws", async () => {
    for (const [fetch, error] of [
      [async () => new Response("no", { status: 500 }), "HTTP 500"],
      [async () => { throw new TypeError("connect ECONNREFUSED"); }, "connect ECONNREFUSED"],
    ] as const) {
      const d = deps({ fn: fn(() => { throw new Error("boom"); }), webhook: "https://hooks.example.com/x", fetch });
      await expect(callWeightSyncHooks(command, d)).resolves.toBeUndefined();
      expect(d.lines).toEqual([
        { level: "warn", message: "onWeightSync failed; training goes on", fields: { step: 3, error: "boom" } },
        { level: "warn", message: "weightSyncWebhook failed; training goes on", fields: { step: 3, error } },
      ]);
    }
  });

  it("a hook that never settles is logged as slow at the bound, not before, and the call resolves then", async () => {
    vi.useFakeTimers();
    const d = deps({ fn: fn(() => new Promise<void>(() => undefined)) });
    let done = false;
    const p = callWeightSyncHooks(command, d).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(HOOK_TIMEOUT_MS - 1);
    expect({ done, lines: d.lines }).toEqual({ done: false, lines: [] });
    await vi.advanceTimersByTimeAsync(1);
    await p;
    expect(d.lines).toEqual([{ level: "warn", message: `onWeightSync took over ${HOOK_TIMEOUT_MS / 1000} s; training goes on without it`, fields: { step: 3 } }]);
  });

  it("the webhook's request carries a timeout signal of the same bound", async () => {
    let signal: AbortSignal | null | undefined;
    const d = deps({ webhook: "https://hooks.example.com/x", fetch: async (_u, init) => ((signal = init?.signal), new Response("ok")) });
    await callWeightSyncHooks(command, d);
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(signal?.aborted).toBe(false);
  });
});

describe("the weightSyncHook command", () => {
  it("returns without waiting for the hooks and hands them to waitUntil, which settles once they are logged", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    setRolloutFunctions({ hooked: fn(() => gate) });
    const lines: Line[] = [];
    const handed: Promise<unknown>[] = [];
    const host: SyncCommandHost = {
      meta: () => ({ runId: "run-9", spec: { function: "hooked" } }) as unknown as RunMeta,
      feed: async () => undefined,
      client: () => { throw new Error("no vote here"); },
      log: (level, message, fields) => void lines.push({ level, message, fields }),
      waitUntil: (p) => void handed.push(p),
    };
    await runSyncCommand(command, host, true);
    expect(handed).toHaveLength(1);
    expect(lines).toEqual([]); // the hook is still running
    release();
    await handed[0];
    expect(lines).toEqual([{ level: "info", message: "onWeightSync called", fields: { step: 3 } }]);
  });

  it("a function name the isolate does not know calls no function hook", async () => {
    setRolloutFunctions({});
    const handed: Promise<unknown>[] = [];
    const lines: Line[] = [];
    const host: SyncCommandHost = {
      meta: () => ({ runId: "run-9", spec: { function: "gone" } }) as unknown as RunMeta,
      feed: async () => undefined,
      client: () => { throw new Error("no vote here"); },
      log: (level, message, fields) => void lines.push({ level, message, fields }),
      waitUntil: (p) => void handed.push(p),
    };
    await runSyncCommand(command, host, true);
    await Promise.all(handed);
    expect(lines).toEqual([]);
  });
});
