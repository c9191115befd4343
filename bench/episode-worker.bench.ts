/**
 * @module bench/episode-worker.bench — the per-episode overhead of issue 23 §1 (docs/design/episode-worker.md):
 *  - the episode Worker's bundle as `wrangler deploy --dry-run -c wrangler.episode.toml` builds it (minified), raw and
 *    gzipped, with the shares of the SDK clients, the project's functions and zod (esbuild's metafile); the main
 *    Worker's bundle beside it;
 *  - its cold start in workerd: a fresh workerd (miniflare) whose entry imports the bundle on the first request;
 *    the first request's time minus a plain request's, median of several fresh processes (compile + evaluate);
 *  - the CPU an episode costs beyond its function: `runEpisode` with a function that returns at once, against the
 *    in-process emulator, process CPU time per episode (Node's V8, the same engine as workerd; it includes the
 *    emulator's handling of the claim and end, so it is an upper bound).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { realSleep, SwarmClient } from "../src/client/index.ts";
import { createEmulator } from "../src/emulator/index.ts";
import { AgentJetJob } from "../src/job/index.ts";
import type { EpisodeMessage, SchedulerPort } from "../src/port/index.ts";
import { runEpisode } from "../src/runtime/episode-runner.ts";
import { ConnectionLimiter, SubrequestBudget } from "../src/runtime/limits.ts";
import { defineRolloutFunction } from "../src/sdk/contract.ts";
import { generateCountdownTasks } from "../src/tasks/index.ts";

const run = promisify(execFile);
const ROOT = new URL("..", import.meta.url).pathname;

/** Issue 23's targets: the episode bundle gzipped (KiB) and the CPU per episode beyond the function (ms). */
export const EPISODE_WORKER_TARGETS = { gzipKiB: 150, cpuMsPerEpisode: 5 } as const;

/** One bundle as wrangler builds it. */
export interface BundleSize {
  config: string;
  rawKiB: number;
  gzipKiB: number;
  /** minified bytes in the script by origin (KiB): openai, @anthropic-ai/sdk, zod, functions/, the rest */
  shares?: Record<string, number>;
}

/** What the bench measured. */
export interface EpisodeWorkerResult {
  episode: BundleSize;
  main: BundleSize;
  /** fresh workerd processes: first-request time minus a plain request's, ms */
  coldStartMs: { median: number; samples: number[] };
  /** the main Worker's (API, dashboard, objects) cold start, measured the same way; null when its bundle did not load alone */
  mainColdStartMs: { median: number; samples: number[] } | null;
  /**
   * CPU per episode with a function that returns at once, ms: `total` is the process's (runtime + the in-process
   * emulator answering it: an upper bound); `runtime` leaves out the CPU spent inside the emulator's handler (the
   * server's share, on another machine when deployed), so it is the runtime's own JS: claim, status, outcome, end,
   * reports. Node's HTTP client is not in either (the emulator is called in process), as workerd's fetch is native.
   */
  cpuPerEpisodeMs: { total: CpuPercentiles; runtime: CpuPercentiles; episodes: number };
}

/** p50 and p99 of CPU per episode, ms. */
export interface CpuPercentiles {
  p50: number;
  p99: number;
}

const kib = (bytes: number) => Math.round((bytes / 1024) * 10) / 10;

/** A module of a built bundle besides its entry (the main Worker's dashboard assets are Text modules, wrangler.toml `rules`). */
interface ExtraModule {
  type: "Text";
  path: string;
  contents: string;
}

async function buildBundle(config: string, dir: string): Promise<{ size: BundleSize; script: string; extra: ExtraModule[] }> {
  const meta = join(dir, "meta.json");
  await run(process.execPath, [join(ROOT, "node_modules/wrangler/bin/wrangler.js"), "deploy", "--dry-run", "-c", config, "--outdir", dir, `--metafile=${meta}`], {
    cwd: ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true" },
    maxBuffer: 16 * 1024 * 1024,
  });
  const metafile = JSON.parse(readFileSync(meta, "utf8")) as { outputs: Record<string, { entryPoint?: string; bytes: number; inputs: Record<string, { bytesInOutput: number }> }> };
  const [outPath, output] = Object.entries(metafile.outputs).find(([, o]) => o.entryPoint)!;
  const script = readFileSync(join(ROOT, outPath));
  const shares: Record<string, number> = {};
  for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
    const origin = /node_modules\/(@anthropic-ai\/sdk|openai|zod)\//.exec(input)?.[1] ?? (input.startsWith("functions/") ? "functions" : "rest");
    shares[origin] = (shares[origin] ?? 0) + bytesInOutput;
  }
  return {
    size: { config, rawKiB: kib(script.length), gzipKiB: kib(gzipSync(script).length), shares: Object.fromEntries(Object.entries(shares).map(([k, v]) => [k, kib(v)])) },
    script: script.toString("utf8"),
    // the other files wrangler wrote beside the entry (text assets the entry imports by name)
    extra: readdirSync(dir)
      .filter((f) => f !== basename(outPath) && !/\.(map|md|json)$/.test(f))
      .map((f) => ({ type: "Text" as const, path: `/${f}`, contents: readFileSync(join(dir, f), "utf8") })),
  };
}

/** Median over fresh workerd processes of (first request that imports the bundle) − (a plain request). */
async function coldStart(script: string, samples = 5, extra: readonly ExtraModule[] = []): Promise<{ median: number; samples: number[] }> {
  const { Miniflare } = await import("miniflare");
  const entry = `export default { async fetch(request) {
    if (new URL(request.url).pathname === "/load") { await import("./episode.js"); return new Response("loaded"); }
    return new Response("plain");
  } };`;
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const mf = new Miniflare({
      compatibilityDate: "2026-04-01",
      compatibilityFlags: ["nodejs_compat"],
      modulesRoot: "/",
      modules: [
        { type: "ESModule", path: "/entry.js", contents: entry },
        { type: "ESModule", path: "/episode.js", contents: script },
        ...extra,
      ],
    });
    try {
      await mf.ready;
      await (await mf.dispatchFetch("http://bench/plain")).text();
      const t0 = performance.now();
      await (await mf.dispatchFetch("http://bench/plain")).text();
      const plain = performance.now() - t0;
      const t1 = performance.now();
      const res = await mf.dispatchFetch("http://bench/load");
      if ((await res.text()) !== "loaded") throw new Error("the bundle did not load in workerd");
      times.push(performance.now() - t1 - plain);
    } finally {
      await mf.dispose();
    }
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { median: Math.round(sorted[Math.floor(sorted.length / 2)]! * 10) / 10, samples: times.map((t) => Math.round(t * 10) / 10) };
}

/** CPU per episode (claim, status, outcome, end, reports) with a function that returns at once. */
async function cpuPerEpisode(episodes = 300): Promise<EpisodeWorkerResult["cpuPerEpisodeMs"]> {
  const tasks = generateCountdownTasks({ count: 64, seed: 5 });
  const emulator = createEmulator({ profile: "fast", seed: 5, timings: { llmLatency: { kind: "fixed", ms: 0 } } });
  // CPU spent inside the emulator's handler, µs (episodes run one at a time, so nothing else runs meanwhile but timers)
  let serverMicros = 0;
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const before = process.cpuUsage();
    try {
      return await emulator.app.fetch(new Request(input, init));
    } finally {
      const used = process.cpuUsage(before);
      serverMicros += used.user + used.system;
    }
  };
  const url = "http://127.0.0.1:10086";
  const silent = { debug() {}, info() {}, warn() {}, error() {} };
  const applied = async () => ({ status: "applied" as const });
  const port: SchedulerPort = { episodeClaimed: applied, claimFailed: applied, episodeOutcomeRecorded: applied, episodeReported: applied, getTask: () => { throw new Error("inline tasks only"); } };
  const noop = defineRolloutFunction({ name: "noop", run: async () => ({ reward: 0 }) });
  try {
    const client = new SwarmClient({ baseURL: url, fetch, logger: silent });
    await client.autoSyncTrainConfigAndStartEngine(new AgentJetJob({ batchSize: 4096, numRepeat: 1, maxEnvWorker: 64 }));
    const cpu: number[] = [];
    const own: number[] = [];
    for (let n = 0; n < episodes; n++) {
      const task = tasks[n % tasks.length]!;
      const msg: EpisodeMessage = {
        v: 1, runId: "bench", episodeKey: `bench/0/${n}#0`, attempt: 1, dispatchId: 1, clientUuid: client.clientUuid, functionName: "noop",
        episodeType: "train", swarms: [{ name: "default", url }], discardEpisodeTimeoutSeconds: 240, throttlePolicy: null,
        taskId: task.task_id, task, taskRef: { source: "bench", taskIndex: n }, leaseDeadlineAtMs: Date.now() + 600_000, model: "bench",
      };
      const before = process.cpuUsage();
      serverMicros = 0;
      const r = await runEpisode(msg, {
        port, functions: { noop }, fetch, limiter: new ConnectionLimiter(), budget: new SubrequestBudget(100_000),
        now: () => Date.now(), sleep: realSleep, random: Math.random, log: silent, secrets: {},
      });
      const used = process.cpuUsage(before);
      if (r.kind === "reported") {
        cpu.push((used.user + used.system) / 1000);
        own.push((used.user + used.system - serverMicros) / 1000);
      }
    }
    // the first 20 warm the JIT, as an isolate's first episodes do
    const percentiles = (xs: number[]): CpuPercentiles => {
      const sorted = xs.slice(20).sort((a, b) => a - b);
      const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 100) / 100;
      return { p50: at(0.5), p99: at(0.99) };
    };
    return { total: percentiles(cpu), runtime: percentiles(own), episodes: Math.max(0, cpu.length - 20) };
  } finally {
    emulator.close();
  }
}

/** Runs the episode-Worker bench (about a minute: two wrangler builds, five workerd starts, 300 episodes). */
export async function measureEpisodeWorker(): Promise<EpisodeWorkerResult> {
  const dir = mkdtempSync(join(tmpdir(), "ajet-bench-episode-"));
  try {
    const episode = await buildBundle("wrangler.episode.toml", join(dir, "episode"));
    const main = await buildBundle("wrangler.toml", join(dir, "main"));
    const mainColdStartMs = await coldStart(main.script, 5, main.extra).catch(() => null);
    return { episode: episode.size, main: main.size, coldStartMs: await coldStart(episode.script, 5, episode.extra), mainColdStartMs, cpuPerEpisodeMs: await cpuPerEpisode() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** True when the bundle and the CPU per episode are within issue 23's targets. */
export function metEpisodeWorkerTargets(r: EpisodeWorkerResult): boolean {
  return r.episode.gzipKiB < EPISODE_WORKER_TARGETS.gzipKiB && r.cpuPerEpisodeMs.runtime.p50 < EPISODE_WORKER_TARGETS.cpuMsPerEpisode;
}

/** The printed lines. */
export function formatEpisodeWorker(r: EpisodeWorkerResult): string[] {
  const shares = Object.entries(r.episode.shares ?? {}).map(([k, v]) => `${k} ${v} KiB`).join(", ");
  return [
    `episode Worker bundle: ${r.episode.rawKiB} KiB raw, ${r.episode.gzipKiB} KiB gzipped (target < ${EPISODE_WORKER_TARGETS.gzipKiB}); minified shares: ${shares}`,
    `main Worker bundle (API, dashboard, objects): ${r.main.rawKiB} KiB raw, ${r.main.gzipKiB} KiB gzipped`,
    `episode Worker cold start in workerd (compile + evaluate on first import): median ${r.coldStartMs.median} ms over ${r.coldStartMs.samples.length} fresh processes (${r.coldStartMs.samples.join(", ")})`,
    r.mainColdStartMs
      ? `main Worker cold start in workerd (compile + evaluate on first import): median ${r.mainColdStartMs.median} ms over ${r.mainColdStartMs.samples.length} fresh processes (${r.mainColdStartMs.samples.join(", ")})`
      : "main Worker cold start: its bundle did not load on its own in a bare workerd (not measured)",
    `CPU per episode beyond the function (Node V8), the runtime's own: p50 ${r.cpuPerEpisodeMs.runtime.p50} ms, p99 ${r.cpuPerEpisodeMs.runtime.p99} ms (target < ${EPISODE_WORKER_TARGETS.cpuMsPerEpisode} ms); with the in-process emulator's handling (upper bound): p50 ${r.cpuPerEpisodeMs.total.p50} ms, p99 ${r.cpuPerEpisodeMs.total.p99} ms; over ${r.cpuPerEpisodeMs.episodes} episodes`,
  ];
}
