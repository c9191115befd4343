/**
 * BC-45 inside workerd: the RolloutScheduler's alarm is at least once and always re-armed — with the swarm server
 * unreachable on every tick, and when a tick itself fails (storage refusing the write) — and a repeated alarm never
 * dispatches an episode twice.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { RolloutScheduler } from "../../src/edge/run/rollout-scheduler.ts";
import type { RunView } from "../../src/edge/run/run-views.ts";
import { ControlledRun, countdownSpec, createRun, DEAD_SWARM, TestEmulator, watchOnce, withFailingWrites } from "./support.ts";

const alarmOf = (stub: DurableObjectStub<RolloutScheduler>) => runInDurableObject(stub, (_i, state) => state.storage.getAlarm());

describe("BC-45 the alarm always re-arms", () => {
  it("BC-45 swarm unreachable: 10 straight watcher polls see CANNOT_CONNECT, every run tick takes them in, and an alarm is still scheduled", async () => {
    // Date is faked in this isolate (the Durable Object shares it): the object's alarms land an hour ahead in real
    // time, so only runDurableObjectAlarm runs them, and each tick finds its status poll due.
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + 3_600_000);
      const { stub } = await createRun(countdownSpec(DEAD_SWARM));
      const polls: Array<number | null> = [];
      for (let i = 0; i < 10; i++) {
        vi.setSystemTime(Date.now() + 1_001); // statusPollWaitingMs defaults to 1000
        expect(await watchOnce(DEAD_SWARM), `watcher poll ${i + 1}`).toBe(true); // the server's one watcher polls
        expect(await runDurableObjectAlarm(stub), `tick ${i + 1}`).toBe(true);
        expect(await alarmOf(stub), `alarm after tick ${i + 1}`).not.toBeNull();
        polls.push(((await stub.status()) as unknown as RunView).engines[0]!.seenAtMs);
      }
      expect(new Set(polls).size).toBe(10); // every tick saw a fresh poll of the watcher
      const view = (await stub.status()) as unknown as RunView;
      expect(view.phase).toBe("running");
      expect(view.engines).toEqual([expect.objectContaining({ engineStatus: "ENGINE.CANNOT_CONNECT" })]);
      expect(view.totals.dispatches).toBe(0); // the gate stays closed (BC-25)
      // the run log says why, once a minute at most (11 polls in ~11 s: one line)
      expect(view.log.filter((l) => l.message.includes("cannot be reached"))).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it("BC-45 a tick that throws (storage refuses the write) is caught, logged with its retry count, and re-armed, 10 times in a row", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + 3_600_000); // the object's own alarms stay an hour ahead (see above)
      const { stub } = await createRun(countdownSpec(DEAD_SWARM));
      const result = await runInDurableObject(stub, async (_real, state) => {
        const fresh = new RolloutScheduler(state, env);
        await new Promise((r) => setTimeout(r, 0)); // let the constructor load the run
        expect(state.storage.sql).toBe(state.storage.sql); // one SqlStorage object: shadowing its exec reaches the scheduler
        const alarms: Array<number | null> = [];
        await withFailingWrites(state, "INSERT OR REPLACE INTO run", async () => {
          for (let i = 0; i < 10; i++) {
            await state.storage.deleteAlarm();
            vi.setSystemTime(Date.now() + 1_001); // the status poll is due: the tick writes the run row
            await fresh.alarm({ retryCount: i, isRetry: i > 0, scheduledTime: Date.now() });
            alarms.push(await state.storage.getAlarm());
          }
        });
        return { alarms, log: fresh.status()!.log, now: Date.now() };
      });
      expect(result.alarms.every((a) => a !== null && a > result.now - 60_000)).toBe(true);
      const failed = result.log.filter((l) => l.message === "tick failed; retrying");
      expect(failed).toHaveLength(10);
      expect(failed.map((l) => l.fields.retryCount)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(String(failed[0]!.fields.error)).toContain("SQLITE_FULL");
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("alarms are at least once", () => {
  it("the same alarm run twice (and an RPC in between) dispatches each episode once", async () => {
    const emu = await TestEmulator.start();
    await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
    const run = await ControlledRun.create(countdownSpec(emu.url, { maxSteps: 1 }));
    const first = run.sent.length;
    expect(first).toBe(4);
    await run.tick();
    await run.tick();
    await run.call((s) => s.status());
    expect(run.sent).toHaveLength(first);
    expect(new Set(run.sent.map((m) => `${m.episodeKey}/${m.attempt}/${m.dispatchId}`)).size).toBe(first);
  });
});
