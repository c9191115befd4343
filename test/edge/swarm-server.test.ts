/**
 * The SwarmServer object of one swarm server (issue 8 §1) inside workerd, with real alarms: it starts an OFFLINE
 * engine for a run once, stops it when the last run that asked for `stopWhenDone` is done, and does not restart an
 * engine another client stopped — the run waits and says so.
 */
import { env, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { RunView } from "../../src/edge/run/run-views.ts";
import { normalizeServerUrl } from "../../src/client/index.ts";
import { POOL_SHARE_MS } from "../../src/edge/swarm-server/swarm-server.ts";
import { countdownSpec, createRun, TestEmulator } from "./support.ts";

const FAST = { statusPollRollingMs: 100, statusPollWaitingMs: 100 };
const WATCH = { pollQuickMs: 100, pollSlowMs: 200, maxPollsPerMinute: 600 };

/** Waits until `check` holds, up to `boundMs` (generous: a loaded 2-core machine runs workerd's alarms late). */
async function until(what: string, check: () => Promise<boolean>, boundMs = 90_000): Promise<void> {
  for (const deadline = Date.now() + boundMs; Date.now() < deadline;) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what} (${boundMs / 1000} s)`);
}

/** Per test: room for two waits at their bound. */
const TEST_MS = 200_000;

describe("the SwarmServer object", () => {
  it("stopWhenDone: the run starts the OFFLINE engine, trains its step, and the engine is stopped once the run is done", async () => {
    const emu = await TestEmulator.start({ policy: { initialAccuracy: 1, malformedRate: 0 }, answerKey: [{ target: 24, nums: [2, 3, 4] }] });
    const { stub } = await createRun(countdownSpec(emu.url, { maxSteps: 1, tuning: FAST, swarms: [{ url: emu.url, engine: { ...WATCH, stopWhenDone: true } }] }));
    await until("the run to finish", async () => {
      await runDurableObjectAlarm(stub); // the alarm fires by itself too; this only makes the test quicker
      return ((await stub.status()) as unknown as RunView).phase === "finished";
    });
    expect(((await stub.status()) as unknown as RunView).stopReason).toBe("maxSteps");
    await until("the engine to be stopped", async () => (await emu.state()).status === "ENGINE.OFFLINE");
    const paths = (await emu.requests()).map((r) => r.path);
    expect(paths.filter((p) => p === "/sync_train_config")).toHaveLength(1);
    expect(paths.filter((p) => p === "/start_engine")).toHaveLength(1);
    expect(paths.filter((p) => p === "/stop_engine")).toHaveLength(1);
  }, TEST_MS);

  it("an engine stopped by another client is not started again: the run waits and its status says why", async () => {
    const emu = await TestEmulator.start();
    await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
    const { stub } = await createRun(countdownSpec(emu.url, { maxSteps: 50, taskCount: 200, tuning: FAST, swarms: [{ url: emu.url, engine: WATCH }] }));
    const swarm = env.SWARM_SERVERS.get(env.SWARM_SERVERS.idFromName(normalizeServerUrl(emu.url)));
    await until("the watcher to see ROLLING", async () => (await swarm.view()).runs.some((r) => r.sawRolling));
    await emu.client().stopEngine({ timeoutMs: 10_000 }); // another client stops the engine mid-run
    let view = (await stub.status()) as unknown as RunView;
    await until("the run to say why it waits", async () => {
      view = (await stub.status()) as unknown as RunView;
      return view.waitingFor?.includes("stopped by another client") ?? false;
    });
    expect(view.waitingFor).toBe(`the engine on ${normalizeServerUrl(emu.url)} was stopped by another client (or its training process exited): start it again, or stop this run`);
    expect(view.phase).not.toBe("finished");
    expect((await emu.requests()).filter((r) => r.path === "/start_engine")).toHaveLength(1); // the test's own
    await stub.stop();
  }, TEST_MS);

  it("runs that ask for the pool information at once share one pool read and one status poll after it", async () => {
    const emu = await TestEmulator.start();
    await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
    const swarm = env.SWARM_SERVERS.get(env.SWARM_SERVERS.idFromName(normalizeServerUrl(emu.url)));
    const sub = (runId: string) => ({
      runId, swarm: "default", url: emu.url, yaml: "", batchSize: 2, numRepeat: 2, start: "never" as const, stopWhenDone: false, bootTimeoutSeconds: 60, ...WATCH,
    });
    const counts = async () => {
      const paths = (await emu.requests()).map((r) => r.path);
      return { pool: paths.filter((p) => p === "/get_current_batch_rollout_pool_information").length, status: paths.filter((p) => p === "/get_engine_status").length };
    };
    await swarm.subscribe(sub("run-0")); // the watcher's first poll
    const before = await counts();
    const seen = await Promise.all(Array.from({ length: 6 }, (_, i) => swarm.subscribe(sub(`run-${i}`), { withPool: true })));
    for (const o of seen) expect(o.pool?.globalStep).toBe(seen[0]!.pool!.globalStep);
    const shared = await counts();
    expect(shared.pool - before.pool).toBe(1);
    expect(shared.status - before.status).toBeLessThanOrEqual(2); // the shared fresh poll (+ at most one the watcher's alarm made)
    await new Promise((r) => setTimeout(r, POOL_SHARE_MS + 50));
    await swarm.subscribe(sub("run-1"), { withPool: true });
    expect((await counts()).pool - shared.pool).toBe(1); // past the share window a run reads afresh
    for (let i = 0; i < 6; i++) await swarm.unsubscribe(`run-${i}`);
  }, TEST_MS);
});
