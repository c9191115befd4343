/**
 * The Worker owns the engine lifecycle (issue 8 §1–2), end to end: the emulator in this process with its engine
 * OFFLINE, the Worker in local workerd (the `ajet-edge dev` host: wrangler's `unstable_startWorker` over
 * wrangler.toml, as `wrangler dev` runs it), and nothing but HTTP calls to the Worker's API. The emulator's request
 * log counts every `/sync_train_config` and `/start_engine`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMULATOR_WATCH } from "../../src/cli/dev/plan.ts";
import { runsApi, waitForRun, type RunsApi } from "../../src/cli/dev/runs-api.ts";
import { startLocalWorker, type LocalWorker } from "../../src/cli/dev/worker.ts";
import { fetchWithTimeout } from "./_support.ts";
import { SwarmClient } from "../../src/client/index.ts";
import { startEmulator, type RunningEmulator } from "../../src/emulator/index.ts";
import { AgentJetJob } from "../../src/job/index.ts";
import type { RunRequestInput } from "../../src/edge/api/run-request.ts";

let worker: LocalWorker;
let api: RunsApi;
const emulators: RunningEmulator[] = [];

beforeAll(async () => {
  worker = await startLocalWorker();
  api = runsApi(worker.url, fetchWithTimeout, { token: worker.token });
});
afterAll(async () => {
  await worker?.dispose();
  await Promise.all(emulators.map((e) => e.close()));
});

async function offlineEmulator(seed: number): Promise<RunningEmulator> {
  const emu = await startEmulator({ port: 0, profile: "dev", seed });
  emulators.push(emu);
  return emu;
}

/** How many times the emulator received `path`. */
const count = (emu: RunningEmulator, path: string) => emu.emulator.requestLog.filter((r) => r.path === path).length;

/** A small Countdown train run on `url`: batch 4 × num_repeat 2, 2 steps, generated tasks. */
function spec(url: string, o: { batchSize?: number; seed?: number } = {}): RunRequestInput {
  const batchSize = o.batchSize ?? 4;
  return {
    swarms: [{ url, engine: { ...EMULATOR_WATCH } }],
    function: "countdown",
    datasets: [{ name: "countdown", kind: "countdown", generate: { count: 4 * batchSize, seed: o.seed ?? 1 } }],
    batchSize,
    numRepeat: 2,
    maxEnvWorker: 2 * batchSize,
    maxSteps: 2,
    seed: o.seed ?? 1,
    tuning: { statusPollWaitingMs: 300, statusPollRollingMs: 500 },
  };
}

describe("e2e: the Worker starts the engine", () => {
  it("POST /runs alone on an OFFLINE emulator: one sync, one start, trains to maxSteps and finishes", async () => {
    const emu = await offlineEmulator(21);
    expect(emu.emulator.engine.status).toBe("ENGINE.OFFLINE");
    const created = await api.create(spec(emu.url));
    const { outcome, status } = await waitForRun(api, created.runId, { timeoutMs: 90_000 });
    expect(outcome, JSON.stringify(status?.log.slice(-5))).toBe("finished");
    expect(status!.stopReason).toBe("maxSteps");
    expect(status!.steps.map((s) => [s.globalStep, s.episodesEnded])).toEqual([[1, 8], [2, 8]]);
    expect(count(emu, "/sync_train_config")).toBe(1);
    expect(count(emu, "/start_engine")).toBe(1);
    // the server was synced with this run's batch settings
    expect(emu.emulator.engine.poolInformation()).toMatchObject({ completed_task_target: 4, task_expected_num_repeat: 2 });
    // and the run is listed, newest first, with its headline fields
    const res = await fetch(`${worker.url}/runs?limit=5`, { headers: { authorization: `Bearer ${worker.token}` } });
    const page = (await res.json()) as { runs: Array<{ runId: string; phase: string; globalStep: number | null; lastStepMeanReward: number | null }> };
    expect(page.runs.find((r) => r.runId === created.runId)).toMatchObject({ phase: "finished", function: "countdown", lastStepMeanReward: status!.steps[1]!.meanReward });
  });

  it("two runs created at the same moment on one OFFLINE emulator: exactly one sync and one start, both finish", async () => {
    const emu = await offlineEmulator(22);
    const [a, b] = await Promise.all([api.create(spec(emu.url, { seed: 1 })), api.create(spec(emu.url, { seed: 2 }))]);
    const done = await Promise.all([a, b].map((r) => waitForRun(api, r.runId, { timeoutMs: 120_000 })));
    for (const d of done) expect(d.outcome, JSON.stringify(d.status?.log.slice(-5))).toBe("finished");
    expect(count(emu, "/sync_train_config")).toBe(1);
    expect(count(emu, "/start_engine")).toBe(1);
    // nothing is left claimed on the server
    expect([...emu.emulator.engine.records.values()].filter((r) => r.episode_status === "claimed")).toHaveLength(0);
    // the list pages newest first: the second page continues where the first stopped
    const first = (await (await fetch(`${worker.url}/runs?limit=1`, { headers: { authorization: `Bearer ${worker.token}` } })).json()) as { runs: { runId: string; createdAtMs: number }[]; next: string | null };
    expect(first.runs).toHaveLength(1);
    expect(first.next).not.toBeNull();
    const second = (await (await fetch(`${worker.url}/runs?limit=1&cursor=${encodeURIComponent(first.next!)}`, { headers: { authorization: `Bearer ${worker.token}` } })).json()) as { runs: { runId: string; createdAtMs: number }[] };
    expect(second.runs[0]!.createdAtMs).toBeLessThanOrEqual(first.runs[0]!.createdAtMs);
    expect(second.runs[0]!.runId).not.toBe(first.runs[0]!.runId);
  });

  it("a ROLLING emulator synced with another batch size: the run fails at once, naming both values and the fix", async () => {
    const emu = await offlineEmulator(23);
    const client = new SwarmClient({ baseURL: emu.url, logger: { info: () => {}, warn: () => {}, error: () => {} } });
    await client.syncTrainConfig(new AgentJetJob({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 }));
    await client.startEngine({ timeoutMs: 30_000 });
    const created = await api.create(spec(emu.url, { batchSize: 4 }));
    const { outcome, status } = await waitForRun(api, created.runId, { timeoutMs: 90_000 });
    expect(outcome).toBe("finished");
    expect(status!.stopReason).toBe("failed");
    const failure = (status as unknown as { failure: string }).failure;
    expect(failure).toContain("batch size 2 and num_repeat 2");
    expect(failure).toContain("this run has batchSize 4 and numRepeat 2");
    expect(failure).toContain("Create the run with batchSize 2 and numRepeat 2, or stop that engine");
    expect(status!.totals.dispatches).toBe(0);
    // the Worker neither synced nor started anything: the test's own sync and start are the only ones
    expect(count(emu, "/sync_train_config")).toBe(1);
    expect(count(emu, "/start_engine")).toBe(1);
  });

  it('start "never" on an OFFLINE emulator: the run waits, says so, and never syncs or starts', async () => {
    const emu = await offlineEmulator(24);
    const s = spec(emu.url);
    s.swarms = [{ url: emu.url, engine: { ...EMULATOR_WATCH, start: "never" } }];
    const created = await api.create(s);
    let view = await api.get(created.runId);
    // the Worker's watcher sees OFFLINE within a poll or two; a loaded machine gets a generous bound
    for (const deadline = Date.now() + 60_000; Date.now() < deadline && !(view as unknown as { waitingFor: string | null }).waitingFor?.includes("never");) {
      await new Promise((r) => setTimeout(r, 100));
      view = await api.get(created.runId);
    }
    expect((view as unknown as { waitingFor: string }).waitingFor).toBe(
      `the engine on ${emu.url} is OFFLINE and this run's engine policy is start: "never": start it on the server (or create the run with engine.start "if-offline")`,
    );
    expect(view.phase).toBe("running");
    expect(count(emu, "/sync_train_config")).toBe(0);
    expect(count(emu, "/start_engine")).toBe(0);
    await api.stop(created.runId);
    const { outcome } = await waitForRun(api, created.runId, { timeoutMs: 60_000 });
    expect(outcome).toBe("finished");
  });
});
