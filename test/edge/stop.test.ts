/**
 * Stop reaches the functions (issue 8 §2): `POST /runs/:id/stop` fires `ctx.signal` (reason "run stopped") in every
 * in-flight episode through the consumer's open stop watch. A function that awaits the signal ends on it; one that
 * ignores it is cut after the run's grace (`tuning.stopGraceSeconds`) and its claim aborted: nothing stays claimed.
 * Inside workerd: the real Durable Object, the real queue consumer code (with test functions) and the emulator.
 */
import { abortAllDurableObjects, createMessageBatch, env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { handleEpisodeBatch } from "../../src/edge/consumer/episode-consumer.ts";
import type { RunView } from "../../src/edge/run/run-views.ts";
import type { EpisodeMessage } from "../../src/port/index.ts";
import { defineRolloutFunction, type RolloutFunction } from "../../src/sdk/contract.ts";
import { apiFetch, ControlledRun, countdownSpec, TestEmulator } from "./support.ts";

// Date is faked (the Durable Object shares it): the object's own alarms land an hour ahead and never fire here
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(Date.now() + 3_600_000);
});
afterEach(() => void vi.useRealTimers());

/** What the test functions saw: the signal's reason per call, and whether they returned. */
const seen: { reasons: string[]; started: number } = { reasons: [], started: 0 };

const functions: Record<string, RolloutFunction> = {
  "awaits-signal": defineRolloutFunction({
    name: "awaits-signal",
    run: (_task, ctx) => {
      seen.started++;
      return new Promise((_, reject) =>
        ctx.signal.addEventListener("abort", () => {
          seen.reasons.push((ctx.signal.reason as Error).message);
          reject(ctx.signal.reason);
        }),
      );
    },
  }),
  "ignores-signal": defineRolloutFunction({
    name: "ignores-signal",
    run: (_task, ctx) => {
      seen.started++;
      ctx.signal.addEventListener("abort", () => seen.reasons.push((ctx.signal.reason as Error).message));
      return new Promise(() => {}); // never settles
    },
  }),
};

async function runningEpisodes(fn: string, tuning: Record<string, number> = {}) {
  seen.reasons = [];
  seen.started = 0;
  const emu = await TestEmulator.start();
  await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
  const run = await ControlledRun.create(countdownSpec(emu.url, { function: fn, maxSteps: 1, swarms: [{ url: emu.url, engine: { start: "never" } }], tuning }));
  await abortAllDurableObjects(); // the object's own instance loads the run: the consumer's RPCs reach it
  const messages: EpisodeMessage[] = run.sent;
  expect(messages).toHaveLength(4);
  const batch = createMessageBatch("ajet-episodes", messages.map((body, i) => ({ id: `m${i}`, timestamp: new Date(), attempts: 1, body })));
  const delivered = handleEpisodeBatch(batch as MessageBatch<unknown>, env, functions);
  // every function is running before the stop
  for (let i = 0; i < 200 && seen.started < 4; i++) await new Promise((r) => setTimeout(r, 25));
  expect(seen.started).toBe(4);
  // ... and the run knows them as running (their claim reports applied; on a loaded machine these lag the start),
  // so the stop meets four running attempts, the premise of the tests below (generous bound: 60 s)
  const running = async () => ((await run.stub.status()) as unknown as RunView).episodes.running;
  for (let until = Date.now() + 60_000; Date.now() < until && (await running()) < 4; ) await new Promise((r) => setTimeout(r, 50));
  expect(await running()).toBe(4);
  return { emu, run, delivered };
}

const claimedOn = async (emu: TestEmulator) => (await emu.state()).records.filter((r) => r.episode_status === "claimed").length;

describe("stop reaches the functions", () => {
  it('a function awaiting ctx.signal ends on POST /runs/:id/stop with reason "run stopped" (long before the grace); nothing stays claimed', async () => {
    // a grace of 10 minutes: the delivery can only finish in this test because the functions ended on the signal
    const { emu, run, delivered } = await runningEpisodes("awaits-signal", { stopGraceSeconds: 600 });
    expect(await claimedOn(emu)).toBe(4);
    const res = await apiFetch(`/runs/${run.runId}/stop`, { method: "POST" });
    expect(res.status).toBe(200);
    await delivered;
    expect(seen.reasons).toEqual(["run stopped", "run stopped", "run stopped", "run stopped"]);
    expect(await claimedOn(emu)).toBe(0);
    const view = (await run.stub.status()) as unknown as RunView;
    expect(view.phase).toBe("finished");
    expect(view.failuresByCause).toMatchObject({ run_stopped: 4 });
    expect((await emu.requests()).filter((r) => r.path === "/abort_episode")).toHaveLength(4);
  });

  it("a function that ignores ctx.signal is cut after the grace, its claim aborted: nothing stays claimed", async () => {
    const { emu, run, delivered } = await runningEpisodes("ignores-signal", { stopGraceSeconds: 1 });
    await run.stub.stop();
    await delivered; // the functions never settle: only the cut after the grace ends the delivery
    expect(seen.reasons).toEqual(["run stopped", "run stopped", "run stopped", "run stopped"]);
    expect(await claimedOn(emu)).toBe(0);
    const view = (await run.stub.status()) as unknown as RunView;
    expect(view.phase).toBe("finished");
    expect(view.failuresByCause).toMatchObject({ run_stopped: 4 });
  });
});
