/**
 * The RolloutScheduler's SQLite inside workerd: BC-53 (a 200 KB prompt round-trips through storage and reaches
 * the consumer by `getTask`, never inlined in a queue message), and atomic persistence (a decision whose rows cannot
 * all be written leaves storage as it was, so a reload never sees half a decision).
 */
import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { MAX_INLINE_TASK_BYTES } from "../../src/port/index.ts";
import type { RunView } from "../../src/edge/run/run-views.ts";
import { ControlledRun, deliver, TestEmulator, withFailingWrites } from "./support.ts";

describe("BC-53 large tasks", () => {
  it("BC-53 a task with a 200 KB prompt round-trips through storage, is not inlined, and reaches the consumer via getTask", async () => {
    const question = `Q: what is 2 + 3? ${"(a very long context) ".repeat(10_000)}`.slice(0, 200_000) + " Answer in \\boxed{}.";
    expect(question.length).toBeGreaterThan(200_000);
    const emu = await TestEmulator.start({ policy: { toolCallRate: 0 } });
    await emu.boot({ batchSize: 1, numRepeat: 1, maxEnvWorker: 1 });
    const run = await ControlledRun.create({
      swarms: [{ url: emu.url }],
      datasets: [{ name: "big", kind: "gsm8k", tasks: [{ question, answer: "2 + 3 = 5\n#### 5" }] }],
      function: "math-agent",
      batchSize: 1,
      numRepeat: 1,
      maxEnvWorker: 1,
      maxSteps: 1,
    });

    // stored whole, read back equal
    const stored = await run.call((s) => s.getTask({ source: "big", taskIndex: 0 }));
    expect(stored.main_query).toBe(question);
    // the message names the task instead of carrying it, and fits a queue message (128 KB)
    expect(run.sent).toHaveLength(1);
    const msg = run.sent[0]!;
    expect(msg.task).toBeUndefined();
    expect(msg.taskRef).toEqual({ source: "big", taskIndex: 0 });
    expect(new TextEncoder().encode(JSON.stringify(msg)).length).toBeLessThan(MAX_INLINE_TASK_BYTES);

    // the consumer (this Worker's queue handler) fetches it from the object and sends the whole prompt to the LLM
    await abortAllDurableObjects(); // the object's own instance now loads the run from storage
    const { acked, retried } = await deliver([msg]);
    expect(acked).toHaveLength(1);
    expect(retried).toHaveLength(0);
    const chats = (await emu.requests()).filter((r) => r.path === "/v1/chat/completions");
    expect(chats.length).toBeGreaterThan(0);
    expect(chats[0]!.body.messages.some((m: { role: string; content: string }) => m.role === "user" && m.content === question)).toBe(true);
    const view = (await run.stub.status()) as unknown as RunView;
    expect(view.totals.episodesEnded).toBe(1);
  });
});

describe("atomic persistence", () => {
  it("a decision whose episode rows cannot be written leaves the run row unchanged too (no half decision after a reload)", async () => {
    // Date is faked in this isolate (the object shares it): its own alarms land an hour ahead in real time
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + 3_600_000);
      const emu = await TestEmulator.start();
      const run = await ControlledRun.create({
        // the test boots the engine itself; a slow poll of 100 ms makes every tick's question to the server's watcher
        // find its last poll stale, so the watcher polls for that tick (its own alarms are an hour ahead here)
        swarms: [{ url: emu.url, engine: { start: "never", pollSlowMs: 100 } }],
        datasets: [{ name: "cd", kind: "countdown", tasks: [{ target: 24, nums: [2, 3, 4] }, { target: 24, nums: [2, 3, 4] }] }],
        function: "countdown",
        batchSize: 2,
        numRepeat: 2,
        maxEnvWorker: 4,
      });
      expect(run.sent).toHaveLength(0); // the engine is OFFLINE: the gate is closed
      await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
      const rowsOf = (state: DurableObjectState) => ({
        run: JSON.parse(state.storage.sql.exec<{ row: string }>("SELECT row FROM run").one().row) as { windowsOpened: number; totals: { dispatches: number } },
        episodes: state.storage.sql.exec("SELECT episode_key FROM episodes").toArray().length,
        steps: state.storage.sql.exec("SELECT window_index FROM steps").toArray().length,
      });
      const before = await runInDurableObject(run.stub, (_i, state) => rowsOf(state));

      // the next tick sees ROLLING and opens a window: run + step + 4 episode rows in one decision; episodes fail
      vi.setSystemTime(Date.now() + 1_001);
      await run.call((s, state) => withFailingWrites(state, "INSERT OR REPLACE INTO episodes", () => s.alarm()));
      expect(run.sent).toHaveLength(0); // nothing was dispatched
      const after = await runInDurableObject(run.stub, (_i, state) => rowsOf(state));
      expect(after.episodes).toBe(before.episodes);
      expect(after.steps).toBe(before.steps);
      expect(after.run.windowsOpened).toBe(before.run.windowsOpened);
      expect(after.run.totals.dispatches).toBe(0);

      // and the next healthy tick makes the whole decision
      vi.setSystemTime(Date.now() + 1_001);
      await run.tick();
      expect(run.sent).toHaveLength(4);
    } finally {
      vi.useRealTimers();
    }
  });
});
