/**
 * @module bench/sandbox.bench — 500 sandbox creations requested at once on the local backend (issue 21 "Done
 * when"): the sandbox server in its own process, 500 attempts each asking for a sandbox at the same instant through
 * the real attempt scope (sandbox/attempt: ledger intent, paced create with retries, first request), running one
 * command, holding it `holdMs`, then destroying it. The ledger is the memory ledger with the run's pacing rules.
 * Two settings: the run defaults (`createsPerSecond` 10, `maxLive` 128 = the default `maxParallel` of batch 32 ×
 * num_repeat 4) and a fast one (200/s, same cap) that loads the server itself. Measured: attempts aborted (no
 * sandbox), the time from asking to a ready sandbox (p50/p99: mostly pacing at the defaults), the backend create
 * call alone (p50/p99), the most live at once (ledger) against the cap, the peak create rate in any second, and
 * what is left on the server afterwards (sandboxes, processes).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { EpisodeSandboxConfig } from "../src/port/sandbox.ts";
import { attemptSandboxes } from "../src/sandbox/attempt.ts";
import type { SandboxBackend } from "../src/sandbox/backend.ts";
import { listLocalSandboxes, localSandboxBackend } from "../src/sandbox/local-backend.ts";
import { markedProcesses } from "../src/sandbox/local-server/processes.ts";
import { spawnSandboxServer } from "../src/sandbox/local-server/spawn.ts";
import { MemorySandboxLedger } from "../src/sandbox/memory-ledger.ts";

/** One setting's result. Times are milliseconds. */
export interface SandboxBurstResult {
  setting: string;
  requested: number;
  aborted: number;
  createsPerSecond: number;
  maxLive: number;
  peakLive: number;
  /** the most creations started in any one-second window */
  peakCreatesInOneSecond: number;
  readyP50Ms: number;
  readyP99Ms: number;
  createCallP50Ms: number;
  createCallP99Ms: number;
  leftOnServer: number;
  leftProcesses: number;
  wallS: number;
}

function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : Number.NaN;
}

/**
 * Runs one setting against a fresh sandbox server process.
 * @param holdMs how long each attempt keeps its sandbox (its "episode")
 */
export async function measureSandboxBurst(setting: string, o: { count: number; createsPerSecond: number; maxLive: number; holdMs: number }): Promise<SandboxBurstResult> {
  const root = mkdtempSync(join(tmpdir(), "ajet-bench-sbx-"));
  const server = await spawnSandboxServer({ root });
  const started = performance.now();
  try {
    const inner = localSandboxBackend({ url: server.url, token: server.token, requestTimeoutMs: 60_000 });
    const createMs: number[] = [];
    const createStarts: number[] = [];
    // the create call alone, timed around the backend
    const backend: SandboxBackend = {
      ...inner,
      async create(id, spec, signal) {
        const t0 = performance.now();
        createStarts.push(t0);
        const r = await inner.create(id, spec, signal);
        createMs.push(performance.now() - t0);
        return r;
      },
    };
    const config = EpisodeSandboxConfig.parse({ maxLive: o.maxLive, createsPerSecond: o.createsPerSecond });
    const ledger = new MemorySandboxLedger({ maxLive: o.maxLive, createsPerSecond: o.createsPerSecond });
    const readyMs: number[] = [];
    let aborted = 0;
    const runId = `bench-${Date.now()}`;
    await Promise.all(
      Array.from({ length: o.count }, async (_, i) => {
        const scope = attemptSandboxes({
          provider: { backend, ledger },
          config,
          runId,
          episodeKey: `bench/0/${i}#0`,
          attempt: 1,
          dispatchId: 1,
          discardEpisodeTimeoutSeconds: 240,
          secrets: {},
          episodeKeys: [],
          signal: new AbortController().signal,
          now: () => Date.now(),
          sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
          random: Math.random,
          log: { warn: () => undefined, info: () => undefined },
        });
        const t0 = performance.now();
        try {
          const sb = await scope.get();
          readyMs.push(performance.now() - t0);
          const r = await sb.commands.run("echo ok");
          if (r.stdout !== "ok\n") throw new Error(`unexpected output ${JSON.stringify(r.stdout)}`);
          await new Promise((res) => setTimeout(res, o.holdMs));
        } catch {
          aborted++;
        } finally {
          await scope.close();
        }
      }),
    );
    const sorted = [...createStarts].sort((a, b) => a - b);
    let peakRate = 0;
    for (let i = 0, j = 0; i < sorted.length; i++) {
      while (sorted[i]! - sorted[j]! >= 1_000) j++;
      peakRate = Math.max(peakRate, i - j + 1);
    }
    const left = await listLocalSandboxes({ url: server.url, token: server.token });
    const leftProcesses = markedProcesses((m) => m.includes("/sb-")).size;
    return {
      setting,
      requested: o.count,
      aborted,
      createsPerSecond: o.createsPerSecond,
      maxLive: o.maxLive,
      peakLive: ledger.peakLive,
      peakCreatesInOneSecond: peakRate,
      readyP50Ms: Math.round(quantile(readyMs, 0.5)),
      readyP99Ms: Math.round(quantile(readyMs, 0.99)),
      createCallP50Ms: Math.round(quantile(createMs, 0.5) * 10) / 10,
      createCallP99Ms: Math.round(quantile(createMs, 0.99) * 10) / 10,
      leftOnServer: left.length,
      leftProcesses,
      wallS: Math.round((performance.now() - started) / 100) / 10,
    };
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

/** Both settings, 500 creations each. */
export async function measureSandboxes(): Promise<SandboxBurstResult[]> {
  return [
    await measureSandboxBurst("run defaults (10/s, cap 128)", { count: 500, createsPerSecond: 10, maxLive: 128, holdMs: 2_000 }),
    await measureSandboxBurst("fast (200/s, cap 128)", { count: 500, createsPerSecond: 200, maxLive: 128, holdMs: 2_000 }),
  ];
}

/** The printed lines. */
export function formatSandboxes(rs: readonly SandboxBurstResult[]): string[] {
  return rs.map(
    (r) =>
      `sandboxes ${r.setting}: ${r.requested} requested at once, ${r.aborted} aborted; ready p50 ${r.readyP50Ms} ms, p99 ${r.readyP99Ms} ms; ` +
      `create call p50 ${r.createCallP50Ms} ms, p99 ${r.createCallP99Ms} ms; peak live ${r.peakLive} / cap ${r.maxLive}; ` +
      `peak ${r.peakCreatesInOneSecond} creates in one second (rate ${r.createsPerSecond}/s); left after: ${r.leftOnServer} sandboxes, ${r.leftProcesses} processes; ${r.wallS} s`,
  );
}

/** Targets: nothing aborted, the cap held, nothing left. */
export function metSandboxTargets(rs: readonly SandboxBurstResult[]): boolean {
  return rs.every((r) => r.aborted === 0 && r.peakLive <= r.maxLive && r.leftOnServer === 0 && r.leftProcesses === 0);
}
