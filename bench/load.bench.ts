/**
 * @module bench/load.bench — 2,000 episodes in flight from one scheduler (issue 11 item 5): the emulator in its
 * `fast` profile (episodes registered at once) with capacity 2,000 (batch 500 × num_repeat 4, max_env_worker 2,000),
 * every LLM call held `holdMs` so all of them overlap, the Worker in local workerd (direct dispatch: one invocation
 * per episode), one training step of `countdown`. Measured: the most episodes claimed at once (emulator's view), the
 * Durable Object's decide + persist time per event and events per second (its `scheduler` status block), `GET
 * /runs/:id` latency sampled every 250 ms while the episodes run, and the workerd process's RSS (an upper bound of
 * the object's memory: every invocation lives in that process too).
 */
import { execFileSync } from "node:child_process";
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import { parseDevArgs } from "../src/cli/dev/options.ts";
import { buildDevPlan } from "../src/cli/dev/plan.ts";
import { runsApi } from "../src/cli/dev/runs-api.ts";
import { startDevSession } from "../src/cli/dev/session.ts";
import { startEmulator } from "../src/emulator/index.ts";
import { formatRequests, requestsPerStep, type RequestsPerStep } from "./swarm-requests.ts";

/** What the load run found. Durations are milliseconds. */
export interface LoadResult {
  episodes: number;
  maxClaimedAtOnce: number;
  /** seconds from the run's creation to its first claim, and to the moment `inFlight` episodes had been claimed (null: never) */
  firstClaimS: number | null;
  allClaimedS: number | null;
  /** requests the swarm server received over the run, by route (and claims that found no episode) */
  requests: RequestsPerStep;
  statusP50Ms: number;
  statusP95Ms: number;
  statusSamples: number;
  /** `GET /health` (the Worker alone, no Durable Object) sent at the same instant as each status poll: the local thread's own delay */
  healthP50Ms: number;
  healthP95Ms: number;
  /** per poll, status time less the health time sent with it: the Durable Object's own share, p50 / p95 */
  objectShareP50Ms: number;
  objectShareP95Ms: number;
  decideAndPersistMs: { p50: number; p99: number; max: number; mean: number } | null;
  schedulerEvents: number;
  eventsPerSecond: number;
  workerdRssMiB: number;
  /** peak RSS of each workerd process of the session (pid → MiB): the Workers of one miniflare share a process */
  workerdRssPerProcessMiB: Record<string, number>;
  wallS: number;
}

/** Targets (issue 11): `GET /runs/:id` p95 < 50 ms, memory < 128 MB; (issue 23) all 2,000 claimed within 60 s of the run's creation. */
export const LOAD_TARGETS = { statusP95Ms: 50, memoryMiB: 128, allClaimedS: 60 };

function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : Number.NaN;
}

/** RSS of each `workerd` process in a process group, MiB, by pid (empty when none is found). */
function workerdRssByPid(pgid: number): Map<number, number> {
  const rows = execFileSync("ps", ["-eo", "pgid=,pid=,rss=,comm="], { encoding: "utf8" }).split("\n").map((l) => l.trim().split(/\s+/));
  return new Map(rows.filter(([g, , , c]) => Number(g) === pgid && c === "workerd").map(([, pid, rss]) => [Number(pid), Number(rss) / 1024]));
}

/**
 * Runs the load measurement.
 * @param inFlight episodes in flight (a multiple of 4: batch = inFlight / 4, num_repeat 4)
 * @param holdMs how long each LLM call is held, so every episode is in flight together
 * @throws when the run does not finish in time
 */
export async function measureLoad(inFlight = 2_000, holdMs = 8_000, log: (line: string) => void = () => {}): Promise<LoadResult> {
  const batch = inFlight / 4;
  const emulator = await startEmulator({ port: 0, profile: "fast", seed: 3, timings: { llmLatency: { kind: "fixed", ms: holdMs } } });
  const emu = emulator.emulator;
  let maxClaimed = 0;
  let claimed = 0;
  let createdAt = 0;
  let firstClaimAt: number | null = null;
  let allClaimedAt: number | null = null;
  emu.hooks.onClaimed = () => {
    claimed++;
    firstClaimAt ??= Date.now();
    if (claimed === inFlight) allClaimedAt = Date.now();
    maxClaimed = Math.max(maxClaimed, [...emu.engine.records.values()].filter((r) => r.episode_status === "claimed").length);
  };
  const started = Date.now();
  const options = parseDevArgs(["--swarm-url", emulator.url, "--function", "countdown", "--batch-size", String(batch), "--num-repeat", "4", "--max-env-worker", String(inFlight), "--steps", "1"])!;
  const plan = await buildDevPlan(options);
  const session = await startDevSession(plan, { onLog: (l) => log(`  worker: ${l}`) });
  const statusMs: number[] = [];
  const healthMs: number[] = [];
  let rss = 0;
  const perProcess = new Map<number, number>();
  type SchedulerBlock = { events: number; eventsPerSecond: number; decideAndPersistMs: LoadResult["decideAndPersistMs"] };
  type StatusView = { phase?: string; scheduler?: SchedulerBlock; episodes?: Record<string, number>; failuresByCause?: Record<string, number>; claimFailuresByKind?: Record<string, number>; waitingFor?: string | null };
  let scheduler = null as SchedulerBlock | null;
  try {
    const api = runsApi(session.worker.url, fetch, { token: session.worker.token });
    createdAt = Date.now();
    const created = await api.create(session.spec);
    const deadline = Date.now() + holdMs * 4 + 120_000;
    for (;;) {
      const timed = async <T>(send: () => Promise<T>): Promise<[T, number]> => {
        const t0 = performance.now();
        const out = await send();
        return [out, performance.now() - t0];
      };
      // the status poll and, at the same instant, the Worker alone (no object): which of the two is slow
      const [[view, ms], [, hms]] = await Promise.all([
        timed(async () => (await (await fetch(`${session.worker.url}/runs/${created.runId}`, { headers: { authorization: `Bearer ${session.worker.token}` } })).json()) as StatusView),
        timed(async () => (await fetch(`${session.worker.url}/health`)).arrayBuffer()),
      ]);
      if (claimed > 0) {
        statusMs.push(ms); // while episodes are in flight (and until the run ends)
        healthMs.push(hms);
      }
      if (process.env["AJET_BENCH_TRACE"]) log(`  status ${ms.toFixed(0)} ms, health ${hms.toFixed(0)} ms, claimed ${claimed}, ${view.phase} ${JSON.stringify({ episodes: view.episodes, failures: view.failuresByCause, claimFailures: view.claimFailuresByKind, waitingFor: view.waitingFor })}`);
      for (const [pid, mib] of workerdRssByPid(session.worker.hostPid)) {
        perProcess.set(pid, Math.max(perProcess.get(pid) ?? 0, mib));
        rss = Math.max(rss, mib);
      }
      if (view.scheduler) scheduler = view.scheduler;
      if (view.phase === "finished") break;
      if (Date.now() > deadline) throw new Error(`load run did not finish within ${(deadline - started) / 1000} s`);
      await delay(250);
    }
  } finally {
    await session.close();
    await emulator.close();
  }
  const episodes = [...emu.stepLog].reduce((n, s) => n + s.episodes.length, 0);
  return {
    episodes,
    maxClaimedAtOnce: maxClaimed,
    firstClaimS: firstClaimAt === null ? null : (firstClaimAt - createdAt) / 1000,
    allClaimedS: allClaimedAt === null ? null : (allClaimedAt - createdAt) / 1000,
    requests: requestsPerStep(emu.requestLog, 1, claimed),
    statusP50Ms: quantile(statusMs, 0.5),
    statusP95Ms: quantile(statusMs, 0.95),
    statusSamples: statusMs.length,
    healthP50Ms: quantile(healthMs, 0.5),
    healthP95Ms: quantile(healthMs, 0.95),
    objectShareP50Ms: quantile(statusMs.map((x, i) => x - healthMs[i]!), 0.5),
    objectShareP95Ms: quantile(statusMs.map((x, i) => x - healthMs[i]!), 0.95),
    decideAndPersistMs: scheduler?.decideAndPersistMs ?? null,
    schedulerEvents: scheduler?.events ?? 0,
    eventsPerSecond: scheduler?.eventsPerSecond ?? 0,
    workerdRssMiB: rss,
    workerdRssPerProcessMiB: Object.fromEntries([...perProcess].map(([pid, mib]) => [String(pid), Math.round(mib)])),
    wallS: (Date.now() - started) / 1000,
  };
}

/** Printable lines with the targets. */
export function formatLoad(r: LoadResult): string[] {
  const ok = (met: boolean) => (met ? "ok" : "MISSED");
  const d = r.decideAndPersistMs;
  return [
    `load: ${r.maxClaimedAtOnce} episodes claimed at once (${r.episodes} ended), ${r.wallS.toFixed(0)} s wall; episodes run in the episode Worker (its own Worker, bound to the run objects)`,
    `  first claim ${r.firstClaimS?.toFixed(1)} s after the run's creation, all ${r.episodes} claimed after ${r.allClaimedS?.toFixed(1) ?? "never"} s (target ≤ ${LOAD_TARGETS.allClaimedS} s: ${ok(r.allClaimedS !== null && r.allClaimedS <= LOAD_TARGETS.allClaimedS)})`,
    formatRequests("requests to the swarm server over the run (one step)", r.requests),
    `  GET /runs/:id p50 ${r.statusP50Ms.toFixed(1)} ms, p95 ${r.statusP95Ms.toFixed(1)} ms over ${r.statusSamples} polls (target < ${LOAD_TARGETS.statusP95Ms} ms: ${ok(r.statusP95Ms < LOAD_TARGETS.statusP95Ms)})`,
    `  GET /health (the Worker alone, sent with each status poll) p50 ${r.healthP50Ms.toFixed(1)} ms, p95 ${r.healthP95Ms.toFixed(1)} ms: what local workerd's one thread adds, object or not; status less health per poll (the object's own share) p50 ${r.objectShareP50Ms.toFixed(1)} ms, p95 ${r.objectShareP95Ms.toFixed(1)} ms (target < ${LOAD_TARGETS.statusP95Ms} ms: ${ok(r.objectShareP95Ms < LOAD_TARGETS.statusP95Ms)})`,
    `  DO decide + persist per event (last 4096 events, 1 ms timer resolution in workerd): p50 ${d?.p50.toFixed(1)} ms, p99 ${d?.p99.toFixed(1)} ms, max ${d?.max.toFixed(1)} ms, mean ${d?.mean.toFixed(3)} ms; ${r.schedulerEvents} events, ${r.eventsPerSecond.toFixed(0)} events/s`,
    `  workerd RSS peak ${r.workerdRssMiB.toFixed(0)} MiB, per process ${Object.values(r.workerdRssPerProcessMiB).map((m) => `${m} MiB`).join(", ") || "none found"} (${Object.keys(r.workerdRssPerProcessMiB).length} workerd process(es): locally the main Worker, its objects and the episode Worker's ${r.maxClaimedAtOnce} invocations share one miniflare; target for the DO < ${LOAD_TARGETS.memoryMiB} MB: ${ok(r.workerdRssMiB < LOAD_TARGETS.memoryMiB)} as an upper bound)`,
  ];
}
