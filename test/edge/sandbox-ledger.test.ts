/**
 * The run object's sandbox ledger inside workerd: a run with a `sandbox` block sends its resolved settings in every
 * queue message; `sandboxIntent` is answered `go` (the row written first) only for the attempt in flight and `stale`
 * otherwise; the rows survive a reset; the sweep destroys the sandbox of every attempt that is over, leaves a running
 * one alone, tries a failed destroy again after its back-off, destroys an unreleased one once more, and the run's
 * view counts alive / created / destroyed / failed and sandbox seconds per window.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { RunSandboxes } from "../../src/edge/run/sandboxes.ts";
import type { SchedulerState } from "../../src/scheduler/index.ts";
import type { SandboxBackend } from "../../src/sandbox/backend.ts";
import { SWEEP_RECHECK_MS } from "../../src/sandbox/ledger.ts";
import { ControlledRun, TestEmulator } from "./support.ts";

async function sandboxRun() {
  const emu = await TestEmulator.start({ policy: { toolCallRate: 0 } });
  await emu.boot({ batchSize: 1, numRepeat: 2, maxEnvWorker: 2 });
  const run = await ControlledRun.create({
    swarms: [{ url: emu.url }],
    datasets: [{ name: "g", kind: "gsm8k", tasks: [{ question: "What is 2 + 3?", answer: "#### 5" }] }],
    function: "math-agent",
    batchSize: 1,
    numRepeat: 2,
    maxEnvWorker: 2,
    maxSteps: 1,
    sandbox: { createsPerSecond: 50 },
  });
  return { run };
}

/** A backend whose destroys are counted and can fail. */
function fakeBackend() {
  const destroyed: string[] = [];
  let failing = 0;
  const backend = {
    name: "local",
    async destroy(id: string) {
      if (failing > 0) {
        failing--;
        throw new Error("backend timeout");
      }
      destroyed.push(id);
      return { existed: true };
    },
  } as unknown as SandboxBackend;
  return { backend, destroyed, fail: (n: number) => void (failing = n) };
}

const state = (episodes: Record<string, { attempt: number; status: string; windowIndex?: number }>, phase = "running") =>
  ({ run: { phase }, episodes: new Map(Object.entries(episodes).map(([k, e]) => [k, { windowIndex: 0, ...e }])) }) as unknown as SchedulerState;
const noLog = () => undefined;

describe("the run object's sandbox ledger", () => {
  it("messages carry the run's resolved sandbox block; intents go for the attempt in flight, stale otherwise", async () => {
    const { run } = await sandboxRun();
    expect(run.sent.length).toBeGreaterThan(0);
    const msg = run.sent[0]!;
    expect(msg.sandbox).toEqual({ enabled: true, instanceType: "lite", createsPerSecond: 50, commandTimeoutSeconds: 60, maxOutputBytes: 1_048_576, secrets: [], maxLive: 2 });
    const intent = { episodeKey: msg.episodeKey, attempt: msg.attempt, dispatchId: msg.dispatchId, sandboxId: "sb-aaaa", backend: "local", instanceType: "lite" as const };
    expect(await run.call((s) => s.sandboxIntent(intent))).toMatchObject({ status: "go" });
    // sent again (a lost answer): the same row, go at once
    expect(await run.call((s) => s.sandboxIntent(intent))).toEqual({ status: "go", delayMs: 0 });
    expect(await run.call((s) => s.sandboxIntent({ ...intent, attempt: msg.attempt + 1, sandboxId: "sb-bbbb" }))).toEqual({ status: "stale", reason: "the attempt is over" });
    expect(await run.call((s) => s.sandboxReleased({ episodeKey: msg.episodeKey, attempt: msg.attempt, sandboxId: "sb-aaaa", end: "destroyed", seconds: 1.5, commands: 2 }))).toEqual({ status: "applied" });
    expect(await run.call((s) => s.sandboxReleased({ episodeKey: msg.episodeKey, attempt: msg.attempt, sandboxId: "sb-aaaa", end: "destroyed", seconds: 1.5, commands: 2 }))).toEqual({ status: "duplicate" });
    const view = await run.call((s) => s.status());
    expect(view?.sandboxes?.total).toEqual({ alive: 0, created: 1, destroyed: 1, failed: 0, seconds: 1.5 });
    expect(view?.sandboxes?.byWindow).toEqual({ "0": { alive: 0, created: 1, destroyed: 1, failed: 0, seconds: 1.5 } });
  });

  it("the sweep destroys what an attempt that is over left, retries a failed destroy, rechecks an unreleased one; rows survive a reset", async () => {
    const { run } = await sandboxRun();
    await runInDurableObject(run.stub, async (_i, ds) => {
      const { backend, destroyed, fail } = fakeBackend();
      const ledger = new RunSandboxes(ds.storage.sql, () => backend, noLog);
      const meta = { spec: { sandbox: { enabled: true, instanceType: "lite", createsPerSecond: 1000, commandTimeoutSeconds: 60, maxOutputBytes: 1024, secrets: [] }, maxParallel: 4 } } as never;
      let s = state({ "g/0/0#0": { attempt: 1, status: "running" }, "g/0/0#1": { attempt: 1, status: "running" } });
      const intent = (key: string, id: string) => ledger.intent(s, meta, { episodeKey: key, attempt: 1, dispatchId: 1, sandboxId: id, backend: "local", instanceType: "lite" }, 1_000, 0);
      expect(intent("g/0/0#0", "sb-0").status).toBe("go");
      expect(intent("g/0/0#1", "sb-1").status).toBe("go");
      // nothing is over: nothing is swept
      await ledger.sweep(s, 2_000, () => 0.5);
      expect(destroyed).toEqual([]);
      expect(ledger.nextWakeAt(s, 2_000)).toBeNull();
      // repeat 0's attempt is over (its consumer died: no release); repeat 1 still runs
      s = state({ "g/0/0#0": { attempt: 2, status: "queued" }, "g/0/0#1": { attempt: 1, status: "running" } });
      expect(ledger.nextWakeAt(s, 3_000)).toBe(3_000);
      fail(1);
      await ledger.sweep(s, 3_000, () => 0.5);
      expect(destroyed).toEqual([]);
      expect(ledger.counts(3_000).total.alive).toBe(2);
      // a reset: a new ledger over the same storage holds the same rows
      const again = new RunSandboxes(ds.storage.sql, () => backend, noLog);
      expect(again.counts(3_000).total).toMatchObject({ alive: 2, created: 2 });
      await again.sweep(s, 3_500, () => 0.5);
      expect(destroyed, "not before the back-off").toEqual([]);
      await again.sweep(s, 6_000, () => 0.5);
      expect(destroyed).toEqual(["sb-0"]);
      expect(again.counts(6_000).total).toMatchObject({ alive: 1, destroyed: 1 });
      // destroyed without a release: once more after the recheck delay
      const recheckAt = again.nextWakeAt(s, 6_000)!;
      expect(recheckAt).toBeGreaterThanOrEqual(6_000 + SWEEP_RECHECK_MS - 1_000);
      await again.sweep(s, recheckAt + 1, () => 0.5);
      expect(destroyed).toEqual(["sb-0", "sb-0"]);
      expect(again.nextWakeAt(s, recheckAt + 1)).toBeNull();
      // the run finishes: every attempt is over, the last sandbox goes too
      const finished = state({ "g/0/0#1": { attempt: 1, status: "running" } }, "finished");
      await again.sweep(finished, recheckAt + 2, () => 0.5);
      expect(destroyed).toContain("sb-1");
      expect(again.counts(recheckAt + 2).total.alive).toBe(0);
    });
  });
});
