/**
 * @module bench/cost.bench — what one local run costs, checked by hand (issue 22 §2): a 3-step `countdown` run on
 * the real stack (the emulator and the Worker in local workerd). The run's object counts its use and prices it
 * (`GET /runs/:id/metrics` `cost`); this benchmark recomputes the dollars from what it counted itself — the
 * episodes the emulator saw claimed, the API requests it sent, the run's time from its view — and the object's own
 * row and queue counts, with the price table (edge/run/board/cost `PRICES`), and prints both and their difference
 * (the check: within 5 %). It also measures workerd's CPU time over the run (user + system, /proc) per episode:
 * the figure the price table's `cpuMsPerEpisode` estimate comes from (an upper bound: the object, the API and the
 * invocations share the process).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { parseDevArgs } from "../src/cli/dev/options.ts";
import { buildDevPlan } from "../src/cli/dev/plan.ts";
import { runsApi, waitForRun } from "../src/cli/dev/runs-api.ts";
import { startDevSession } from "../src/cli/dev/session.ts";
import { DO_MEMORY_GB, PRICES, type RunCost } from "../src/edge/run/board/cost.ts";

/** What the cost run found. Dollars are US dollars; durations ms. */
export interface CostResult {
  episodes: number;
  steps: number;
  /** the API requests this benchmark sent to the run (each one Worker request and one object request) */
  apiRequestsSent: number;
  /** the object's own counts, as its export reported them */
  printed: RunCost;
  /** the total recomputed from the benchmark's counts and the price table */
  handUsd: number;
  /** |printed − hand| / hand */
  difference: number;
  /** workerd's CPU time over the run, and per ended episode (ms) */
  workerdCpuMs: number;
  cpuMsPerEpisode: number;
  wallS: number;
}

/** CPU ms (user + system) of every workerd process in a process group, from /proc (0 where unreadable). */
function workerdCpuMs(pgid: number): number {
  const ticks = 100; // USER_HZ on Linux
  const pids = execFileSync("ps", ["-eo", "pid=,pgid=,comm="], { encoding: "utf8" }).split("\n").map((l) => l.trim().split(/\s+/))
    .filter(([, g, c]) => Number(g) === pgid && c === "workerd").map(([p]) => p);
  let ms = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ");
      ms += ((Number(fields[11]) + Number(fields[12])) / ticks) * 1000;
    } catch {
      // the process ended
    }
  }
  return ms;
}

/** Runs the cost check. @throws when the run does not finish within 3 minutes */
export async function measureCost(): Promise<CostResult> {
  const started = Date.now();
  const plan = await buildDevPlan(parseDevArgs(["--function", "countdown", "--steps", "3"])!);
  const session = await startDevSession(plan);
  const emulator = session.swarms[0]!.emulator!.emulator;
  let claimed = 0;
  emulator.hooks.onClaimed = () => void claimed++;
  let sent = 0;
  const counting = ((input: URL | string | Request, init?: RequestInit) => {
    sent++;
    return fetch(input, init);
  }) as typeof fetch;
  try {
    const api = runsApi(session.worker.url, counting, { token: session.worker.token });
    const cpu0 = workerdCpuMs(session.worker.hostPid);
    const createdAt = Date.now();
    const created = await api.create(session.spec);
    const { outcome, status } = await waitForRun(api, created.runId, { timeoutMs: 180_000, pollMs: 1_000 });
    if (outcome !== "finished" || !status) throw new Error(`cost run did not finish (${outcome})`);
    const cpu = workerdCpuMs(session.worker.hostPid) - cpu0;
    // the object's active time as the benchmark saw it: its create request to the poll that saw the run finished
    const activeS = (Date.now() - createdAt) / 1000;
    const metrics = await api.metrics(created.runId);
    const printed = metrics.cost!;
    const u = printed.usage;
    const M = 1_000_000;
    const p = PRICES;
    // every claim is one episode invocation (one `started` beat); every request this benchmark sent reached the run's object
    const requests = claimed + sent;
    const lines = [
      (requests * p.workerRequestsPerMillion) / M,
      ((claimed * p.cpuMsPerEpisode + sent * p.cpuMsPerApiRequest) * p.workerCpuMsPerMillion) / M,
      ((u.doRequests + u.otherDoRequests + u.websocketMessages / 20) * p.doRequestsPerMillion) / M,
      (activeS * DO_MEMORY_GB * p.doGbSecondsPerMillion) / M,
      (u.rowsWritten * p.doRowsWrittenPerMillion) / M,
      (3 * claimed * p.queueOpsPerMillion) / M,
      (u.r2Puts * p.r2ClassAPerMillion) / M,
      (u.r2Bytes / 1e9) * (14 / 30) * p.r2StoredGbMonth,
    ];
    const handUsd = lines.reduce((a, b) => a + b, 0);
    return {
      episodes: claimed, steps: printed.steps, apiRequestsSent: sent, printed, handUsd,
      difference: Math.abs(printed.totalUsd - handUsd) / handUsd,
      workerdCpuMs: cpu, cpuMsPerEpisode: claimed ? cpu / claimed : 0,
      wallS: (Date.now() - started) / 1000,
    };
  } finally {
    await session.close();
  }
}

/** Printable lines. */
export function formatCost(r: CostResult): string[] {
  const c = r.printed;
  const usd = (x: number | null) => (x === null ? "-" : `$${x.toPrecision(4)}`);
  return [
    `cost: ${r.episodes} episodes over ${r.steps} steps, ${r.apiRequestsSent} API requests, ${r.wallS.toFixed(0)} s wall`,
    `  printed ${usd(c.totalUsd)} (${usd(c.perStepUsd)} per step, ${usd(c.per1000EpisodesUsd)} per 1,000 episodes; ${usd(c.estimatedUsd)} estimated); by hand ${usd(r.handUsd)}: ${(r.difference * 100).toFixed(2)} % apart (check < 5 %: ${r.difference < 0.05 ? "ok" : "MISSED"})`,
    `  counted: ${c.usage.episodeInvocations} invocations, ${c.usage.apiRequests} API requests, ${c.usage.doRequests} object requests, ${c.usage.rowsWritten} rows written, ${c.usage.queueOps} queue ops, ${c.usage.r2Puts} transcripts (${(c.usage.r2Bytes / 1024).toFixed(0)} KiB)`,
    ...c.lines.map((l) => `    ${l.item.padEnd(28)} ${String(+l.quantity.toPrecision(6)).padStart(12)} ${l.unit.padEnd(16)} ${usd(l.usd).padStart(12)}${l.estimate ? "  (estimate)" : ""}`),
    `  workerd CPU ${r.workerdCpuMs.toFixed(0)} ms over the run: ${r.cpuMsPerEpisode.toFixed(1)} ms per episode (an upper bound: the object and the API share the process; the price table estimates ${PRICES.cpuMsPerEpisode} ms)`,
  ];
}
