/**
 * Dispatch inside workerd against the Cloudflare Queues limits (≤ 100 messages, ≤ 256 KB per `sendBatch`, ≤ 128 KB
 * per message): one window's messages are split so every call fits, with the real queue (miniflare enforces the
 * limits) and with a capturing queue that enforces them the same way.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { RunView } from "../../src/edge/run/run-views.ts";
import { createDispatcher, QueueDispatcher } from "../../src/edge/run/dispatcher.ts";
import type { Env } from "../../src/edge/ground/env.ts";
import type { EpisodeMessage } from "../../src/port/index.ts";
import { CapturingQueue, ControlledRun, createRun, QUEUE_LIMITS, TestEmulator } from "./support.ts";

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

describe("dispatch across queue shards and modes", () => {
  const message = (i: number): EpisodeMessage => ({
    v: 1, runId: "r", episodeKey: `e${i}`, attempt: 1, dispatchId: 1, clientUuid: "c", functionName: "countdown", episodeType: "train",
    swarms: [{ name: "default", url: "http://127.0.0.1:1" }], discardEpisodeTimeoutSeconds: 240, throttlePolicy: null, taskId: `t${i}`,
    taskRef: { source: "s", taskIndex: i }, leaseDeadlineAtMs: 0, model: "agentjet-policy",
  });
  const asQueue = (q: CapturingQueue) => q as unknown as Queue<EpisodeMessage>;

  it("EPISODE_QUEUES with 3 shards: 10 then 5 episodes are dealt round-robin, 5 per shard, none twice", async () => {
    const shards = [new CapturingQueue(), new CapturingQueue(), new CapturingQueue()];
    const fakeEnv = { EPISODE_QUEUES: "EPISODES, EPISODES_2,EPISODES_3", EPISODES: asQueue(shards[0]!), EPISODES_2: asQueue(shards[1]!), EPISODES_3: asQueue(shards[2]!) } as unknown as Env;
    const dispatcher = createDispatcher(fakeEnv, undefined);
    expect(dispatcher).toBeInstanceOf(QueueDispatcher);
    await dispatcher.dispatch(Array.from({ length: 10 }, (_, i) => message(i)));
    await dispatcher.dispatch(Array.from({ length: 5 }, (_, i) => message(10 + i)));
    expect(shards.map((q) => q.sent.length)).toEqual([5, 5, 5]);
    expect(new Set(shards.flatMap((q) => q.sent.map((m) => m.episodeKey))).size).toBe(15);
  });

  it("a misnamed shard or an unknown mode is refused with the binding, the value and the fix", () => {
    const q = asQueue(new CapturingQueue());
    expect(() => createDispatcher({ EPISODES: q, EPISODE_QUEUES: "EPISODES,EPISODS_2" } as unknown as Env, undefined)).toThrow(/'EPISODS_2', which is not a queue producer binding; add a \[\[queues.producers\]\]/);
    expect(() => createDispatcher({ EPISODES: q, AJET_DISPATCH: "rpc" } as unknown as Env, undefined)).toThrow("AJET_DISPATCH is 'rpc'; use one of queue, direct");
    expect(() => createDispatcher({ EPISODES: q, AJET_DISPATCH: "direct" } as unknown as Env, {})).toThrow(/needs the episode Worker's EpisodeRunner entrypoint/);
  });

  it("direct mode starts one runner call per episode and fails the dispatch when one cannot be started", async () => {
    const started: string[] = [];
    const runner = { run: async (m: EpisodeMessage) => { if (m.episodeKey === "e3") throw new Error("boom"); started.push(m.episodeKey); return { accepted: true as const }; } };
    const dispatcher = createDispatcher({ EPISODES: asQueue(new CapturingQueue()), AJET_DISPATCH: "direct" } as unknown as Env, { EpisodeRunner: runner });
    await dispatcher.dispatch([message(0), message(1), message(2)]);
    expect(started).toEqual(["e0", "e1", "e2"]);
    await expect(dispatcher.dispatch([message(3), message(4)])).rejects.toThrow("1 of 2 episodes could not be started: Error: boom");
  });
});
