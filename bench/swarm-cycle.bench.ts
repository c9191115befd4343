/**
 * @module bench/swarm-cycle.bench — the swarm-cycle benchmark on the real stack (issue 11 item 2): the emulator on
 * a socket with the upstream server's timing shape (trainer tick 4 s, weight sync 5 s, episodes registered 1 s
 * after each ROLLING edge, fixed LLM latency), the Worker in local workerd reached the way `ajet-edge dev
 * --swarm-url` does (default run tuning), batch 8 × num_repeat 4, max_env_worker 32, `math-agent` with two LLM calls
 * per episode (a calculator call, then the answer), 10 training steps. Everything is read from the emulator's view
 * (its status history, claims and chat calls), never from the run's own report.
 *
 * The physical limit for these settings: a step cannot be shorter than the registration delay plus the two LLM
 * calls, and the trainer only looks on its tick (every `tickMs` from the ROLLING edge), so a step's rollout is
 * rounded up to whole ticks, then the weight sync follows:
 *   step floor = ceil((registrationDelay + 2 × LLM latency) / tick) × tick + weightSync,   ceiling = 3600 / floor.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseDevArgs } from "../src/cli/dev/options.ts";
import { buildDevPlan } from "../src/cli/dev/plan.ts";
import { runsApi, waitForRun } from "../src/cli/dev/runs-api.ts";
import { startDevSession } from "../src/cli/dev/session.ts";
import { startEmulator } from "../src/emulator/index.ts";
import { ENGINE } from "../src/protocol/index.ts";
import type { LatencySpec } from "../src/emulator/latency.ts";
import { formatRequests, requestsPerStep, runPythonBaseline, type RequestsPerStep } from "./swarm-requests.ts";

/** The shape of one swarm-cycle measurement (times in milliseconds). */
export interface SwarmCycleSettings {
  llmLatencyMs: number;
  tickMs: number;
  weightSyncMs: number;
  registrationDelayMs: number;
  batchSize: number;
  numRepeat: number;
  maxEnvWorker: number;
  steps: number;
  llmCallsPerEpisode: number;
  /** the LLM latency distribution; absent: fixed at `llmLatencyMs` (a heavy tail: lognormal, `llmLatencyMs` its median) */
  llmLatency?: LatencySpec;
  /** share of episodes that call the calculator first (2 LLM calls; the others answer at once: 1 call); default 1 */
  toolCallRate?: number;
  /** the job's sample-collection method (spec §7.3); default the tasks method */
  method?: string;
  /** the run spec's `overProvision` (extra task groups per window as a share of the batch); default 0 (off) */
  overProvision?: number;
  /** the run spec's `throttleRatio` (unique tasks per batch: ceil(batchSize × ratio)); default the spec's 1.5 */
  throttleRatio?: number;
}

/** What one measurement found. Durations are seconds unless named `Ms`. */
export interface SwarmCycleResult {
  settings: SwarmCycleSettings;
  /** steps per hour over steps 2..N (the first cycle includes the engine boot and the run's creation) */
  stepsPerHour: number;
  /** the physical ceiling for these settings (see the module doc) and the share of it reached */
  ceilingStepsPerHour: number;
  shareOfCeiling: number;
  /** the floor of one step, tick quantisation included */
  stepFloorS: number;
  medianStepS: number;
  /** per step: ROLLING edge → first ROLLING_POST (median) */
  medianRolloutS: number;
  /** per step: ROLLING edge → first claimed episode (median; the registration delay is part of it) */
  medianIdleAfterSyncS: number;
  claimToFirstLlmP50Ms: number;
  claimToFirstLlmP99Ms: number;
  /** the same after the first cycle's episodes (their invocations load and compile the Worker's modules first) */
  claimToFirstLlmSteadyP50Ms: number;
  claimToFirstLlmSteadyP99Ms: number;
  /** steps whose rollout missed the first tick (each costs a whole tick) */
  stepsPastFirstTick: number;
  /** chat calls per ended episode seen by the emulator (the shape asks for 2) */
  llmCallsPerEpisode: number;
  episodes: number;
  wallS: number;
  /** who ran the episodes: ajet-edge (the Worker in local workerd) or the Python-client-like baseline (bench/swarm-requests.ts) */
  client: SwarmCycleClient;
  /** requests the emulator received over the whole run, per trained step, by route */
  requests: RequestsPerStep;
}

/** Who runs the episodes of a swarm-cycle measurement. */
export type SwarmCycleClient = "ajet-edge" | "python";

const median = (xs: readonly number[]) => quantile(xs, 0.5);
function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return Number.NaN;
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

/** The step floor for `s` in milliseconds (see the module doc). */
export function stepFloorMs(s: SwarmCycleSettings): number {
  const rollout = s.registrationDelayMs + s.llmCallsPerEpisode * s.llmLatencyMs;
  return Math.max(1, Math.ceil(rollout / s.tickMs)) * s.tickMs + s.weightSyncMs;
}

/** GSM8K-shaped rows the emulator's built-in recogniser answers ("What is A + B?"). */
function rows(n: number): string {
  return Array.from({ length: n }, (_, i) => JSON.stringify({ question: `What is ${i + 2} + ${2 * i + 3}?`, answer: `#### ${3 * i + 5}` })).join("\n") + "\n";
}

/**
 * Runs one swarm-cycle measurement: emulator, Worker in local workerd, 10 steps.
 * @throws when the run does not finish within its time budget
 */
export async function measureSwarmCycle(settings: SwarmCycleSettings, log: (line: string) => void = () => {}, client: SwarmCycleClient = "ajet-edge"): Promise<SwarmCycleResult> {
  const dir = await mkdtemp(join(tmpdir(), "ajet-bench-"));
  const datasetPath = join(dir, "sums.jsonl");
  await writeFile(datasetPath, rows(settings.batchSize * settings.steps * 2));
  const emulator = await startEmulator({
    port: 0,
    profile: "real",
    seed: 1,
    timings: {
      startEngineMs: 1_000,
      bootMs: 500,
      tickMs: settings.tickMs,
      weightSyncMs: settings.weightSyncMs,
      registrationDelayMs: settings.registrationDelayMs,
      llmLatency: settings.llmLatency ?? { kind: "fixed", ms: settings.llmLatencyMs },
    },
    // by default every episode: one calculator call, then the answer (two LLM calls)
    policy: { toolCallRate: settings.toolCallRate ?? 1, malformedRate: 0 },
  });
  const emu = emulator.emulator;
  const claimedAt = new Map<string, number>();
  const claimOrder = new Map<string, number>();
  const claimToFirstLlm: number[] = [];
  const claimToFirstLlmSteady: number[] = [];
  const callsPerEpisode = new Map<string, number>();
  emu.hooks.onClaimed = ({ episodeUuid, atMs }) => {
    claimedAt.set(episodeUuid, atMs);
    claimOrder.set(episodeUuid, claimOrder.size);
  };
  const firstCycle = settings.batchSize * settings.numRepeat;
  emu.hooks.chatCompletion = (call) => {
    callsPerEpisode.set(call.episodeUuid, call.callIndex);
    const at = claimedAt.get(call.episodeUuid);
    if (call.callIndex !== 1 || at === undefined) return;
    claimToFirstLlm.push(emu.clock.nowMs() - at);
    if ((claimOrder.get(call.episodeUuid) ?? 0) >= firstCycle) claimToFirstLlmSteady.push(emu.clock.nowMs() - at);
  };
  const started = Date.now();
  try {
    if (client === "python") {
      const yaml = `ajet:\n  data:\n    train_batch_size: ${settings.batchSize}\n  rollout:\n    num_repeat: ${settings.numRepeat}\n    max_env_worker: ${settings.maxEnvWorker}\n  trainer_common:\n    total_training_steps: ${settings.steps + 1}\n`;
      const trained = (n: number) => emu.engine.statusHistory.filter((c) => c.to === ENGINE.ROLLING && c.from !== ENGINE.ROLLING).length > n;
      await runPythonBaseline({ url: emulator.url, batchSize: settings.batchSize, numRepeat: settings.numRepeat, steps: settings.steps, llmCallsPerEpisode: settings.llmCallsPerEpisode, trainConfigYaml: yaml }, trained);
    } else await runAjetEdge(emulator.url, datasetPath, settings, log);
  } finally {
    await emulator.close();
    await rm(dir, { recursive: true, force: true });
  }

  // The timeline from the emulator's status history: per step its ROLLING edge, first ROLLING_POST, next edge.
  const history = emu.engine.statusHistory;
  const allEdges = history.filter((c) => c.to === ENGINE.ROLLING && c.from !== ENGINE.ROLLING);
  const edges = allEdges.slice(0, settings.steps);
  // a step ends at the next edge to ROLLING, or for the engine's last step when it goes OFFLINE
  const end = allEdges[settings.steps] ?? history.find((c) => c.to === ENGINE.OFFLINE && c.atMs > (edges.at(-1)?.atMs ?? 0));
  const stepRows = edges.map((edge, i) => {
    const next = edges[i + 1]?.atMs ?? end?.atMs ?? Number.NaN;
    const post = history.find((c) => c.to === ENGINE.ROLLING_POST && c.atMs >= edge.atMs && c.atMs < next);
    const firstClaim = Math.min(...[...claimedAt.values()].filter((t) => t >= edge.atMs && t < next));
    return { stepMs: next - edge.atMs, rolloutMs: (post?.atMs ?? Number.NaN) - edge.atMs, idleMs: firstClaim - edge.atMs };
  });
  const after = stepRows.slice(1);
  const meanStepMs = after.reduce((a, r) => a + r.stepMs, 0) / Math.max(1, after.length);
  const floor = stepFloorMs(settings);
  const stepsPerHour = 3_600_000 / meanStepMs;
  const ceiling = 3_600_000 / floor;
  const ended = [...emu.stepLog].reduce((n, s) => n + s.episodes.length, 0);
  const calls = [...callsPerEpisode.values()];
  return {
    settings,
    stepsPerHour,
    ceilingStepsPerHour: ceiling,
    shareOfCeiling: stepsPerHour / ceiling,
    stepFloorS: floor / 1000,
    medianStepS: median(after.map((r) => r.stepMs)) / 1000,
    medianRolloutS: median(after.map((r) => r.rolloutMs)) / 1000,
    medianIdleAfterSyncS: median(after.map((r) => r.idleMs)) / 1000,
    claimToFirstLlmP50Ms: quantile(claimToFirstLlm, 0.5),
    claimToFirstLlmP99Ms: quantile(claimToFirstLlm, 0.99),
    claimToFirstLlmSteadyP50Ms: quantile(claimToFirstLlmSteady, 0.5),
    claimToFirstLlmSteadyP99Ms: quantile(claimToFirstLlmSteady, 0.99),
    stepsPastFirstTick: after.filter((r) => r.rolloutMs > settings.tickMs).length,
    llmCallsPerEpisode: calls.reduce((a, b) => a + b, 0) / Math.max(1, calls.length),
    episodes: ended,
    wallS: (Date.now() - started) / 1000,
    client,
    requests: requestsPerStep(emu.requestLog, edges.length, claimedAt.size),
  };
}

/** The way `ajet-edge dev --swarm-url` runs against a real server: default tuning, job synced, engine started. */
async function runAjetEdge(url: string, datasetPath: string, settings: SwarmCycleSettings, log: (line: string) => void): Promise<void> {
  const options = parseDevArgs([
    "--swarm-url", url, "--dataset", datasetPath, "--kind", "gsm8k", "--function", "math-agent",
    "--batch-size", String(settings.batchSize), "--num-repeat", String(settings.numRepeat),
    "--max-env-worker", String(settings.maxEnvWorker), "--steps", String(settings.steps),
  ])!;
  const plan = await buildDevPlan(options);
  const session = await startDevSession(plan, { onLog: (l) => log(`  worker: ${l}`) });
  try {
    const api = runsApi(session.worker.url, fetch, { token: session.worker.token });
    const withMethod = settings.method ? { ...session.spec, job: { ...(session.spec.job ?? {}), swarmModeSampleCollectionMethod: settings.method } } : session.spec;
    const spec = { ...withMethod, ...(settings.overProvision ? { overProvision: settings.overProvision } : {}), ...(settings.throttleRatio ? { throttleRatio: settings.throttleRatio } : {}) };
    const created = await api.create(spec);
    const tailMs = settings.llmLatency?.kind === "lognormal" ? 2 * lognormalQuantileMs(settings.llmLatency.medianMs, settings.llmLatency.sigma, 0.99) : 0;
    const budgetMs = settings.steps * (stepFloorMs(settings) + 3 * settings.tickMs + tailMs) + 60_000;
    const { outcome } = await waitForRun(api, created.runId, { timeoutMs: budgetMs, pollMs: 2_000 });
    if (outcome !== "finished") throw new Error(`swarm-cycle run did not finish within ${budgetMs / 1000} s (${outcome})`);
  } finally {
    await session.close();
  }
}

/** The issue's shape: tick 4 s, weight sync 5 s, registration 1 s, batch 8 × 4, max_env_worker 32, 2 calls, 10 steps. */
export function issueShape(llmLatencyMs: number, steps = 10): SwarmCycleSettings {
  return { llmLatencyMs, tickMs: 4_000, weightSyncMs: 5_000, registrationDelayMs: 1_000, batchSize: 8, numRepeat: 4, maxEnvWorker: 32, steps, llmCallsPerEpisode: 2 };
}

/** Targets (issue 11): ≥ 97 % of the ceiling after the first cycle; claim → first LLM call p99 < 50 ms. */
export const SWARM_CYCLE_TARGETS = { shareOfCeiling: 0.97, claimToFirstLlmP99Ms: 50 };

/** One printable line per measurement, with its targets. */
export function formatSwarmCycle(r: SwarmCycleResult): string[] {
  const ok = (met: boolean) => (met ? "ok" : "MISSED");
  return [
    `swarm cycle${r.client === "python" ? " (Python-client-like baseline)" : ""}, LLM ${latencyLabel(r.settings)}: ${r.stepsPerHour.toFixed(0)} steps/h of a ${r.ceilingStepsPerHour.toFixed(0)} ceiling (${(100 * r.shareOfCeiling).toFixed(1)} %, target ≥ ${100 * SWARM_CYCLE_TARGETS.shareOfCeiling} %: ${ok(r.shareOfCeiling >= SWARM_CYCLE_TARGETS.shareOfCeiling)})`,
    `  median step ${r.medianStepS.toFixed(2)} s (floor ${r.stepFloorS.toFixed(2)} s incl. ${r.settings.tickMs / 1000} s tick quantisation), rollout ROLLING→ROLLING_POST ${r.medianRolloutS.toFixed(2)} s, idle after weight sync ${r.medianIdleAfterSyncS.toFixed(2)} s (registration delay ${r.settings.registrationDelayMs / 1000} s), steps past the first tick ${r.stepsPastFirstTick}`,
    `  claim → first LLM call p50 ${r.claimToFirstLlmP50Ms.toFixed(0)} ms, p99 ${r.claimToFirstLlmP99Ms.toFixed(0)} ms (target < ${SWARM_CYCLE_TARGETS.claimToFirstLlmP99Ms} ms: ${ok(r.claimToFirstLlmP99Ms < SWARM_CYCLE_TARGETS.claimToFirstLlmP99Ms)}); after the first cycle (warm isolate) p50 ${r.claimToFirstLlmSteadyP50Ms.toFixed(0)} ms, p99 ${r.claimToFirstLlmSteadyP99Ms.toFixed(0)} ms; ${r.episodes} episodes, ${r.llmCallsPerEpisode.toFixed(2)} LLM calls each, ${r.wallS.toFixed(0)} s wall`,
    formatRequests("requests to the swarm server", r.requests),
  ];
}

/** True when `r` meets both targets. */
export function metSwarmCycleTargets(r: SwarmCycleResult): boolean {
  return r.shareOfCeiling >= SWARM_CYCLE_TARGETS.shareOfCeiling && r.claimToFirstLlmP99Ms < SWARM_CYCLE_TARGETS.claimToFirstLlmP99Ms;
}

/** Target (issue 23): requests to the swarm server per trained step at most this many times the Python client's. */
export const REQUEST_RATIO_TARGET = 1.2;

/** True when `ours` sends at most {@link REQUEST_RATIO_TARGET} × the baseline's requests per trained step. */
export function metRequestTarget(ours: SwarmCycleResult, python: SwarmCycleResult): boolean {
  return ours.requests.total <= REQUEST_RATIO_TARGET * python.requests.total;
}

/** One line: our requests per trained step against the baseline's on the same cycle. */
export function formatRequestRatio(ours: SwarmCycleResult, python: SwarmCycleResult): string {
  const ratio = ours.requests.total / Math.max(1e-9, python.requests.total);
  return `  requests per trained step, LLM ${ours.settings.llmLatencyMs} ms: ajet-edge ${ours.requests.total} vs Python-client-like ${python.requests.total} = ${ratio.toFixed(2)}× (target ≤ ${REQUEST_RATIO_TARGET}×: ${metRequestTarget(ours, python) ? "ok" : "MISSED"}); steps/h ${ours.stepsPerHour.toFixed(0)} vs ${python.stepsPerHour.toFixed(0)}`;
}

/** The latency of a measurement in words: fixed, or the lognormal's median, σ and p99. */
export function latencyLabel(s: SwarmCycleSettings): string {
  const l = s.llmLatency;
  const turns = s.toolCallRate !== undefined && s.toolCallRate < 1 ? `, 1–2 LLM calls per episode (${Math.round(100 * s.toolCallRate)} % two)` : "";
  if (!l || l.kind === "fixed") return `${l?.ms ?? s.llmLatencyMs} ms${turns}`;
  return `lognormal median ${l.medianMs} ms σ ${l.sigma} (p99 ${(lognormalQuantileMs(l.medianMs, l.sigma, 0.99) / 1000).toFixed(1)} s, cap ${l.maxMs / 1000} s)${turns}`;
}

/** The q-quantile of a lognormal with this median and log-space σ, ms (z of 0.99 = 2.3263). */
export function lognormalQuantileMs(medianMs: number, sigma: number, q: 0.99 | 0.5): number {
  return medianMs * Math.exp(sigma * (q === 0.99 ? 2.3263 : 0));
}

/**
 * The tail shape (issue 23): the issue's cycle with LLM calls of median 1 s and a heavy tail (lognormal σ 1.2: p99
 * 16.3 s, capped at 60 s) and 1 or 2 calls per episode; `tail: false` is the same cycle without the tail (every call
 * 1 s), the figure the tail is compared with.
 */
export function tailShape(tail: boolean, steps = 10, overProvision = 0, throttleRatio?: number): SwarmCycleSettings {
  return {
    ...issueShape(1_000, steps),
    toolCallRate: 0.5,
    ...(tail ? { llmLatency: { kind: "lognormal", medianMs: 1_000, sigma: 1.2, maxMs: 60_000 } as const } : {}),
    ...(overProvision > 0 ? { overProvision } : {}),
    ...(throttleRatio !== undefined ? { throttleRatio } : {}),
  };
}

/** The over-provisioning the tail bench measures: 0.5 × batch 8 = 4 extra groups, the most the default throttle ratio 1.5 allows. */
export const TAIL_OVER_PROVISION = 0.5;

/** Target (issue 23): steps/h with the tail at least this share of the no-tail figure. */
export const TAIL_TARGET_SHARE = 0.9;

/** Lines comparing the tail runs (without, then with over-provisioning) with the no-tail run (same emulator cycle). */
export function formatTail(noTail: SwarmCycleResult, tail: SwarmCycleResult, provisioned?: SwarmCycleResult): string[] {
  const line = (r: SwarmCycleResult, how: string) => {
    const share = r.stepsPerHour / noTail.stepsPerHour;
    return `  tail ${how}: ${r.stepsPerHour.toFixed(0)} steps/h vs ${noTail.stepsPerHour.toFixed(0)} without the tail = ${(100 * share).toFixed(0)} % (target ≥ ${100 * TAIL_TARGET_SHARE} %: ${share >= TAIL_TARGET_SHARE ? "ok" : "MISSED"}); median step ${r.medianStepS.toFixed(2)} s, rollout ${r.medianRolloutS.toFixed(2)} s, ${r.requests.total} requests / trained step`;
  };
  return [
    ...formatSwarmCycle(noTail),
    ...formatSwarmCycle(tail),
    ...(provisioned ? formatSwarmCycle(provisioned) : []),
    line(tail, "without over-provisioning (one slot per episode the batch needs, the Python client's way)"),
    ...(provisioned ? [line(provisioned, `with over-provisioning (overProvision ${provisioned.settings.overProvision}: ${Math.ceil(provisioned.settings.batchSize * (provisioned.settings.overProvision ?? 0))} extra groups per window)`)] : []),
  ];
}
