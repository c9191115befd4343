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
  /** the job's sample-collection method (spec §7.3); default the tasks method */
  method?: string;
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
}

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
export async function measureSwarmCycle(settings: SwarmCycleSettings, log: (line: string) => void = () => {}): Promise<SwarmCycleResult> {
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
      llmLatency: { kind: "fixed", ms: settings.llmLatencyMs },
    },
    // every episode: one calculator call, then the answer (two LLM calls)
    policy: { toolCallRate: 1, malformedRate: 0 },
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
  // the way `ajet-edge dev --swarm-url` runs against a real server: default tuning, job synced, engine started
  const options = parseDevArgs([
    "--swarm-url", emulator.url, "--dataset", datasetPath, "--kind", "gsm8k", "--function", "math-agent",
    "--batch-size", String(settings.batchSize), "--num-repeat", String(settings.numRepeat),
    "--max-env-worker", String(settings.maxEnvWorker), "--steps", String(settings.steps),
  ])!;
  const plan = await buildDevPlan(options);
  const session = await startDevSession(plan, { onLog: (l) => log(`  worker: ${l}`) });
  try {
    const api = runsApi(session.worker.url, fetch, { token: session.worker.token });
    const spec = settings.method ? { ...session.spec, job: { ...(session.spec.job ?? {}), swarmModeSampleCollectionMethod: settings.method } } : session.spec;
    const created = await api.create(spec);
    const budgetMs = settings.steps * (stepFloorMs(settings) + 3 * settings.tickMs) + 60_000;
    const { outcome } = await waitForRun(api, created.runId, { timeoutMs: budgetMs, pollMs: 2_000 });
    if (outcome !== "finished") throw new Error(`swarm-cycle run did not finish within ${budgetMs / 1000} s (${outcome})`);
  } finally {
    await session.close();
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
  };
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
    `swarm cycle, LLM ${r.settings.llmLatencyMs} ms: ${r.stepsPerHour.toFixed(0)} steps/h of a ${r.ceilingStepsPerHour.toFixed(0)} ceiling (${(100 * r.shareOfCeiling).toFixed(1)} %, target ≥ ${100 * SWARM_CYCLE_TARGETS.shareOfCeiling} %: ${ok(r.shareOfCeiling >= SWARM_CYCLE_TARGETS.shareOfCeiling)})`,
    `  median step ${r.medianStepS.toFixed(2)} s (floor ${r.stepFloorS.toFixed(2)} s incl. ${r.settings.tickMs / 1000} s tick quantisation), rollout ROLLING→ROLLING_POST ${r.medianRolloutS.toFixed(2)} s, idle after weight sync ${r.medianIdleAfterSyncS.toFixed(2)} s (registration delay ${r.settings.registrationDelayMs / 1000} s), steps past the first tick ${r.stepsPastFirstTick}`,
    `  claim → first LLM call p50 ${r.claimToFirstLlmP50Ms.toFixed(0)} ms, p99 ${r.claimToFirstLlmP99Ms.toFixed(0)} ms (target < ${SWARM_CYCLE_TARGETS.claimToFirstLlmP99Ms} ms: ${ok(r.claimToFirstLlmP99Ms < SWARM_CYCLE_TARGETS.claimToFirstLlmP99Ms)}); after the first cycle (warm isolate) p50 ${r.claimToFirstLlmSteadyP50Ms.toFixed(0)} ms, p99 ${r.claimToFirstLlmSteadyP99Ms.toFixed(0)} ms; ${r.episodes} episodes, ${r.llmCallsPerEpisode.toFixed(2)} LLM calls each, ${r.wallS.toFixed(0)} s wall`,
  ];
}

/** True when `r` meets both targets. */
export function metSwarmCycleTargets(r: SwarmCycleResult): boolean {
  return r.shareOfCeiling >= SWARM_CYCLE_TARGETS.shareOfCeiling && r.claimToFirstLlmP99Ms < SWARM_CYCLE_TARGETS.claimToFirstLlmP99Ms;
}
