/**
 * Dispatch inside workerd against the Cloudflare Queues limits (≤ 100 messages, ≤ 256 KB per `sendBatch`, ≤ 128 KB
 * per message): one window's messages are split so every call fits, with the real queue (miniflare enforces the
 * limits) and with a capturing queue that enforces them the same way.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { RunView } from "../../src/edge/run-views.ts";
import { ControlledRun, createRun, QUEUE_LIMITS, TestEmulator } from "./support.ts";

/** A gsm8k dataset of `n` tasks whose question is about `bytes` long (inlined: below the 64 KiB threshold). */
function bigTasks(n: number, bytes: number) {
  return Array.from({ length: n }, (_, i) => ({ question: `Task ${i}: what is 2 + 3? ${"context ".repeat(bytes / 8)}`, answer: "#### 5" }));
}

const spec = (url: string, n: number, bytes: number) => ({
  swarms: [{ url }],
  datasets: [{ name: "big", kind: "gsm8k", tasks: bigTasks(n, bytes) }],
  function: "math-agent",
  batchSize: n,
  numRepeat: 1,
  maxEnvWorker: n,
  maxSteps: 1,
});

describe("dispatch within the Queues limits", () => {
  it("8 inline tasks of 40 KB: the window's 320 KB of messages go out in several sendBatch calls, each ≤ 256 KB", async () => {
    const emu = await TestEmulator.start();
    await emu.boot({ batchSize: 8, numRepeat: 1, maxEnvWorker: 8 });
    const run = await ControlledRun.create(spec(emu.url, 8, 40_000));
    expect(run.sent.filter((m) => m.task !== undefined)).toHaveLength(8); // inlined, each under 64 KiB
    expect(run.batches.length).toBeGreaterThan(1);
    expect(run.batches.every((b) => b <= QUEUE_LIMITS.batchBytes)).toBe(true);
    const view = (await run.call((s) => s.status()))!;
    expect(view.claimFailuresByKind).toEqual({});
    expect(view.episodes.dispatched).toBe(8);
  });

  it("the same run through the real queue: all 8 episodes are delivered and end", async () => {
    const emu = await TestEmulator.start({ policy: { toolCallRate: 0 } });
    await emu.boot({ batchSize: 8, numRepeat: 1, maxEnvWorker: 8 });
    const { stub } = await createRun({ ...spec(emu.url, 8, 40_000), tuning: { statusPollRollingMs: 100, statusPollWaitingMs: 100, claimRetryMs: 50 } });
    let view = (await stub.status()) as unknown as RunView;
    for (let i = 0; i < 300 && view.totals.groupsCompleted + view.totals.groupsDropped < 8; i++) {
      await runDurableObjectAlarm(stub);
      await new Promise((r) => setTimeout(r, 10));
      view = (await stub.status()) as unknown as RunView;
    }
    expect(view.claimFailuresByKind.dispatch ?? 0).toBe(0);
    expect(view.totals.groupsCompleted).toBe(8);
    const accepted = (await emu.state()).stepLog.flatMap((s) => s.episodes);
    expect(accepted).toHaveLength(8);
  });
});
