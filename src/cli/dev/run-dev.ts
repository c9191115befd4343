/**
 * @module cli/dev/run-dev — the one run client of `ajet-edge dev` and `ajet-edge run` (issue 8 §3): plan (flags or
 * `--spec`) → connect (`dev`: start the local emulator(s) and the Worker in local workerd; `run`: the Worker at
 * `--worker`; the Worker starts the engine) → `POST /runs` (or re-attach to the unfinished run of `dev --persist DIR`) →
 * live progress → summary. Ctrl-C or the
 * timeout drains the run (`POST /runs/:id/stop`, bounded wait) before workerd and the emulator stop, so no episode
 * is left claimed. Exit codes: 0 finished as asked, 1 failed (including a finished run that ended no episode or
 * stopped short of its steps, see `verdict.ts`) / timed out, 2 bad input, 130 Ctrl-C, 143 SIGTERM.
 */
import { parseRunRequest } from "../../edge/api/run-request.ts";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import type { DevOnlyOptions, DevOptions, WorkerOptions } from "./options.ts";
import { ProgressPrinter, RepeatLimiter, type DevIo, type InterruptSignal } from "./output.ts";
import { buildDevPlan, runSpecFor, type DevDataset, type DevPlan } from "./plan.ts";
import { formatReward, formatSeconds, formatWorkerLog, progressOf, renderIssues, renderSummary, swarmRewardsOf } from "./render.ts";
import { renderCost, renderSignals } from "./signals-render.ts";
import { runsApi, RunsApiError, waitForRun, type RunReport, type RunsApi, type RunView, type WaitOutcome } from "./runs-api.ts";
import { DevHints } from "./hints.ts";
import { startDevSession, type DevSession, type SessionSwarm } from "./session.ts";
import { readSpecFile, specPlan } from "./spec-file.ts";
import { summaryJson, type DevSummaryJson } from "./summary-json.ts";
import { runFailure } from "./verdict.ts";
import { tokenHint } from "./worker-call.ts";

/** How long a stopped run may take to drain before the CLI gives up waiting, milliseconds. */
export const DRAIN_TIMEOUT_MS = 30_000;

/** What a dev run ended with (also what `--json` prints). */
export interface DevResult {
  exitCode: number;
  /** null when the run was never created */
  json: DevSummaryJson | null;
}

/** Test hooks of {@link runDev}: datasets and policy knobs the flags cannot express. */
export interface RunDevExtras {
  datasets?: DevDataset[];
  policy?: DevPlan["policy"];
  /** called once the session runs (tests inspect the emulator) */
  onSession?: (session: DevSession) => void;
}

/** Ctrl-C / SIGTERM: the first one stops the start or the wait for the run (`first`), a second one the drain. */
class Interrupts {
  readonly first = new AbortController();
  readonly force = new AbortController();
  signal: InterruptSignal | null = null;

  on(signal: InterruptSignal): void {
    if (this.signal === null) {
      this.signal = signal;
      this.first.abort(new Error(`interrupted (${signal})`));
    } else {
      this.force.abort();
    }
  }

  get exitCode(): number {
    return this.signal === "SIGTERM" ? 143 : 130;
  }
}

/** Where a run goes: a Worker's runs API and the swarm servers (with the emulators this process started). */
export interface RunTarget {
  workerUrl: string;
  /** the API token (`Authorization: Bearer`); absent = none sent */
  token?: string;
  /** `Worker: URL (…)` — how the target is described in the start lines */
  workerLabel: string;
  /** how to sign in to the run's dashboard page, e.g. `sign in with your API token` */
  signIn: string;
  swarms: SessionSwarm[];
  /** an unfinished run to re-attach to instead of creating one (dev --persist) */
  resumeRunId?: string;
  /** called with the run id once it is created or re-attached (dev --persist records it) */
  onRun?: (runId: string) => Promise<void>;
  /** called once the run's end was seen and summarised (dev --persist forgets it: the next dev starts a new run) */
  onRunEnded?: (runId: string) => Promise<void>;
  /** stops what was started for the run (workerd, emulators); idempotent */
  close(): Promise<void>;
}

/** How {@link runClient} gets its target: starting the local Worker and emulators (dev), or a given Worker (run). */
export type ConnectTarget = (plan: DevPlan, o: { onLog: (line: string) => void; signal: AbortSignal }) => Promise<RunTarget>;

/** Builds the plan from the options: the run flags, or `--spec FILE`. @throws what buildDevPlan / readSpecFile throw */
export async function planOf(options: DevOptions, extras: RunDevExtras, local: boolean): Promise<DevPlan> {
  if (!options.specPath) return buildDevPlan(options, extras);
  const file = await readSpecFile(options.specPath, options.swarms.length ? options.swarms : undefined);
  return { ...specPlan(file, options, local), ...(extras.policy ? { policy: extras.policy } : {}) };
}

/**
 * Runs `ajet-edge dev` with parsed options: starts the local emulator(s) and the Worker in local workerd, then the
 * same client as `ajet-edge run` ({@link runClient}).
 * @returns the exit code and the JSON summary (also printed with `--json`)
 */
export async function runDev(options: DevOptions & DevOnlyOptions, io: DevIo, extras: RunDevExtras = {}): Promise<DevResult> {
  return runClient("dev", options, io, extras, async (plan, o) => {
    const state = options.persistDir ? await readPersistState(options.persistDir) : null;
    const session = await startDevSession(plan, {
      onLog: o.onLog,
      signal: o.signal,
      logLevel: options.logLevel,
      ...(options.persistDir ? { persistDir: options.persistDir } : {}),
      ...(state?.emulatorPorts ? { emulatorPorts: state.emulatorPorts } : {}),
    });
    extras.onSession?.(session);
    return {
      workerUrl: session.worker.url,
      token: session.worker.token,
      workerLabel: `${session.worker.url} (local workerd${options.persistDir ? `, state in ${options.persistDir}` : ""})`,
      signIn: `sign in with this session's token ${session.worker.token}`,
      swarms: session.swarms,
      ...(state?.runId ? { resumeRunId: state.runId } : {}),
      ...(options.persistDir
        ? {
          onRun: (runId: string) => writePersistState(options.persistDir!, { runId, emulatorPorts: emulatorPortsOf(session.swarms) }),
          onRunEnded: () => writePersistState(options.persistDir!, { emulatorPorts: emulatorPortsOf(session.swarms) }),
        }
        : {}),
      close: () => session.close(),
    };
  });
}

/**
 * Runs `ajet-edge run`: the same client against a deployed or `wrangler dev` Worker and the servers named.
 * @returns the exit code and the JSON summary
 */
export async function runOnWorker(options: DevOptions & WorkerOptions, io: DevIo): Promise<DevResult> {
  return runClient("run", options, io, {}, async (plan) => ({
    workerUrl: options.workerUrl,
    ...(options.token ? { token: options.token } : {}),
    workerLabel: options.workerUrl,
    signIn: "sign in with the Worker's API token",
    swarms: (plan.externalSwarms ?? []).map((s) => ({ name: s.name, url: s.url, emulator: null })),
    close: async () => {},
  }));
}

/**
 * The one run client of `dev` and `run`: plan → connect (start or reach the Worker) → `POST /runs` (or re-attach)
 * → live progress → summary. Ctrl-C or the timeout drains the run before the target closes.
 */
async function runClient(command: "dev" | "run", options: DevOptions, io: DevIo, extras: RunDevExtras, connect: ConnectTarget): Promise<DevResult> {
  const startedAtMs = io.now();
  const write = options.json ? io.err : io.out;
  const printer = new ProgressPrinter(write, io.isTTY(options.json), io.columns);
  const say = (text: string) => printer.line(text);
  const fail = (code: number, text: string): DevResult => {
    printer.done();
    io.err(`ajet-edge ${command}: ${text}\n`);
    return { exitCode: code, json: null };
  };

  let plan: DevPlan;
  try {
    plan = await planOf(options, extras, command === "dev");
  } catch (err) {
    return fail(2, (err as Error).message); // a DatasetLoadError, a SpecFileError or an unknown function: each names the fix
  }
  const local = parseRunRequest(runSpecFor(plan, plan.swarmNames.map((name) => ({ name, url: "http://127.0.0.1:10086" }))));
  if (!local.success) return fail(2, `the run spec is invalid:\n${renderIssues(local.issues)}`);

  const interrupts = new Interrupts();
  const unsubscribe = io.onInterrupt((s) => interrupts.on(s));
  const deadline = AbortSignal.timeout(plan.timeoutMs);
  let target: RunTarget | null = null;
  const workerLines = new RepeatLimiter();
  try {
    say(`ajet-edge ${command}: function ${plan.functionName}; ${plan.datasets.map((d) => d.label).join("; ")}${plan.spec ? ` (from ${plan.spec.path})` : ""}`);
    for (const d of plan.datasets) if (d.warning) say(`  ${d.warning}`);
    for (const w of plan.warnings) say(`  ${w}`);
    say(`  batch ${plan.job.batchSize} tasks x num_repeat ${plan.job.numRepeat} = ${plan.episodesPerStep} episodes per step; ${stepsText(plan.steps)}`);
    if (command === "dev") say(startingLine(plan));
    try {
      const onLog = (raw: string) => {
        const line = formatWorkerLog(raw);
        if (line && workerLines.admit(line)) say(`  ${line}`);
      };
      target = await connect(plan, { onLog, signal: AbortSignal.any([interrupts.first.signal, deadline]) });
    } catch (err) {
      if (interrupts.signal) return fail(interrupts.exitCode, "interrupted while starting; everything started was stopped");
      if (deadline.aborted) return fail(1, `could not start within --timeout ${plan.timeoutMs / 1000} s`);
      return fail(1, (err as Error).message);
    }
    for (const s of target.swarms) say(`  swarm ${s.name}: ${s.url}${s.emulator ? " (local emulator)" : ""}`);
    say(`  Worker: ${target.workerLabel}`);
    const api = runsApi(target.workerUrl, fetch, target.token !== undefined ? { token: target.token } : {});
    let runId: string | null = null;
    if (target.resumeRunId) {
      // the run a killed dev left: the Worker carries it on by itself once workerd is up, so it may even be
      // finished by now; either way it is followed to its summary (a run whose end was seen is not kept)
      const previous = await api.get(target.resumeRunId).catch(() => null);
      if (previous) {
        runId = previous.runId;
        say(`resuming run ${runId} (phase ${previous.phase}, ${previous.steps.length} steps so far) from the persisted state; Ctrl-C stops it cleanly`);
      }
    }
    if (runId === null) {
      try {
        runId = (await api.create(runSpecFor(plan, target.swarms))).runId;
      } catch (err) {
        if (err instanceof RunsApiError && err.status === 400) return fail(2, `POST /runs refused the run spec: ${err.message}\n${renderIssues(err.issues)}`);
        if (err instanceof RunsApiError && (err.status === 401 || err.status === 403)) return fail(2, `${err.message}\n  ${tokenHint(command)}`);
        return fail(1, `POST /runs failed: ${(err as Error).message}`);
      }
      say(`run ${runId} created (${Math.round((io.now() - startedAtMs) / 100) / 10} s after start); Ctrl-C stops it cleanly`);
    }
    say(`  dashboard: ${target.workerUrl}/runs/${runId} (${target.signIn})`);
    await target.onRun?.(runId);
    const result = await follow(api, runId, plan, target, { io, printer, interrupts, deadline, startedAtMs, json: options.json, workerLines, command });
    if (result.json) await target.onRunEnded?.(runId);
    return result;
  } finally {
    reportSuppressed(printer, workerLines);
    printer.done();
    await target?.close();
    unsubscribe(); // after the close: a Ctrl-C while workerd stops must not kill the CLI half-way
  }
}

/** What `dev --persist DIR` keeps besides the Worker's state: the run to resume and the emulators' ports. */
export interface PersistState {
  /** the run whose end no dev has seen yet (absent once a dev summarised it) */
  runId?: string;
  /** swarm name → the local emulator's port (a resumed run's spec names these URLs) */
  emulatorPorts?: Record<string, number>;
}

/** The file in the persist dir that holds {@link PersistState}. */
export const PERSIST_STATE_FILE = "ajet-edge-dev.json";

/** Reads the persist dir's state; null when there is none (a new dir). @throws Error naming the file when it is not JSON */
export async function readPersistState(dir: string): Promise<PersistState | null> {
  let text: string;
  try {
    text = await readFile(join(dir, PERSIST_STATE_FILE), "utf8");
  } catch {
    return null;
  }
  try {
    return JSON.parse(text) as PersistState;
  } catch {
    throw new Error(`${join(dir, PERSIST_STATE_FILE)} is not JSON; delete it to start a new run in ${dir}`);
  }
}

async function writePersistState(dir: string, state: PersistState): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, PERSIST_STATE_FILE), `${JSON.stringify(state, null, 2)}\n`);
}

function emulatorPortsOf(swarms: readonly SessionSwarm[]): Record<string, number> {
  return Object.fromEntries(swarms.filter((s) => s.emulator).map((s) => [s.name, s.emulator!.port]));
}

function reportSuppressed(printer: ProgressPrinter, limiter: RepeatLimiter): void {
  for (const [kind, n] of limiter.flush()) printer.line(`  ${kind}: ${n} more lines like this not shown`);
}

/** `eval run`, `1 training step`, `3 training steps`. */
export function stepsText(steps: number | null): string {
  return steps === null ? "eval run" : `${steps} training step${steps === 1 ? "" : "s"}`;
}

function startingLine(plan: DevPlan): string {
  if (plan.externalSwarms) return `starting the Worker in local workerd; swarm servers ${plan.externalSwarms.map((s) => s.url).join(", ")}…`;
  const emulators = plan.swarmNames.length > 1 ? `${plan.swarmNames.length} swarm emulators (${plan.swarmNames.join(", ")})` : "the swarm emulator";
  return `starting ${emulators} (profile dev) and the Worker in local workerd (the Worker starts the engine)…`;
}

interface FollowContext {
  io: DevIo;
  printer: ProgressPrinter;
  interrupts: Interrupts;
  deadline: AbortSignal;
  startedAtMs: number;
  json: boolean;
  workerLines: RepeatLimiter;
  command: "dev" | "run";
}

/** Waits for the run (progress, new warnings of the run's log), drains it when interrupted or late, summarises. */
async function follow(api: RunsApi, runId: string, plan: DevPlan, session: RunTarget, c: FollowContext): Promise<DevResult> {
  const seenLog = new Set<string>();
  let stopping = false;
  const hints = new DevHints({
    swarmUrls: new Map(session.swarms.map((s) => [s.name, s.url])),
    startEngine: plan.startEngine,
    external: plan.externalSwarms !== null,
  });
  const onStatus = (status: RunView) => {
    for (const l of status.log) {
      const key = `${l.atMs}|${l.message}`;
      if (seenLog.has(key)) continue;
      seenLog.add(key);
      if (l.level === "warn" || l.level === "error") c.printer.line(`  [run ${l.level}] ${l.message} ${JSON.stringify(l.fields)}`);
    }
    const ctx = { episodesPerStep: plan.episodesPerStep, steps: plan.steps, ...(plan.totalEpisodes !== undefined ? { totalEpisodes: plan.totalEpisodes } : {}), elapsedMs: c.io.now() - c.startedAtMs, stopping };
    for (const hint of hints.observe(status, c.io.now())) c.printer.line(`  ${hint}`);
    c.printer.progress(progressOf(status, ctx), c.io.now());
  };
  let outcome: WaitOutcome;
  let last: RunView | null;
  try {
    ({ outcome, status: last } = await waitForRun(api, runId, { timeoutMs: plan.timeoutMs, onStatus, signal: AbortSignal.any([c.interrupts.first.signal, c.deadline]) }));
    if (outcome === "aborted" && !c.interrupts.signal) outcome = "timeout";
    if (outcome !== "finished") {
      stopping = true;
      c.printer.line(
        outcome === "timeout"
          ? `the run did not finish within --timeout ${plan.timeoutMs / 1000} s (phase ${last?.phase ?? "?"}); stopping it (draining)…`
          : "interrupted: stopping the run, waiting for in-flight episodes to finish or abort (Ctrl-C again to quit now)…",
      );
      await api.stop(runId);
      const drained = await waitForRun(api, runId, { timeoutMs: DRAIN_TIMEOUT_MS, onStatus, signal: c.interrupts.force.signal });
      last = drained.status ?? last;
      if (drained.outcome !== "finished") {
        c.printer.line(`warning: the run did not finish draining (${drained.outcome}); ${last?.episodes.inFlight ?? "?"} episodes in flight may stay claimed until the server's discard timeout`);
      }
    }
  } catch (err) {
    c.printer.done();
    c.io.err(`ajet-edge ${c.command}: lost the run ${runId}: ${(err as Error).message}\n`);
    return { exitCode: 1, json: null };
  }
  c.printer.done();
  reportSuppressed(c.printer, c.workerLines);
  const report = await readReport(api, runId);
  if (!report.ok) c.printer.line(`warning: could not read the run's report (${report.error}); no summary table; see it later with 'ajet-edge status ${runId}'`);
  const claimedLeft = countClaimed(session);
  const interrupted = c.interrupts.signal !== null;
  const final = report.value?.summary ?? last;
  // a run that never started (its datasets failed their background index pass) has no report: its view says why
  const failure = !interrupted && outcome === "finished" && final ? ((!report.value && last?.failure) || runFailure(final, plan)) : null;
  const exitCode = interrupted ? c.interrupts.exitCode : outcome === "finished" && !failure ? 0 : 1;
  const json = summaryJson({ runId, outcome: interrupted ? "interrupted" : failure ? "failed" : outcome, exitCode, failure, report: report.value, last, session, claimedLeft });
  const metrics = await api.metrics(runId).catch(() => null);
  const swarmRewards = metrics && plan.swarmNames.length > 1 ? swarmRewardsOf(metrics) : undefined;
  if (report.value) c.printer.line(`\nsummary of run ${runId}:\n${renderSummary(report.value.summary, { episodesPerStep: plan.episodesPerStep, ...(swarmRewards ? { swarmRewards } : {}) })}`);
  // the learning signals per step and what the run would cost deployed (GET /runs/:id/metrics)
  const signals = metrics ? renderSignals(metrics) : "";
  if (signals) c.printer.line(`learning signals:\n${signals}`);
  if (metrics?.cost) c.printer.line(renderCost(metrics.cost));
  const overall = report.value?.eval?.overall;
  if (overall) c.printer.line(`eval: ${overall.scoredTasks}/${overall.tasks} tasks scored, pass@${report.value!.eval!.k} ${formatReward(overall.passAtK)}, pass@1 ${formatReward(overall.passAt1)}`);
  if (claimedLeft) c.printer.line(`warning: ${claimedLeft} episodes are still claimed on the emulator`);
  c.printer.line(exitCode === 0 ? `done in ${formatSeconds(c.io.now() - c.startedAtMs)}` : `ended (${json.outcome}) after ${formatSeconds(c.io.now() - c.startedAtMs)}`);
  if (failure) c.io.err(`ajet-edge ${c.command}: the run failed: ${failure}\n`);
  if (c.json) c.io.out(`${JSON.stringify(json, null, 2)}\n`);
  return { exitCode, json };
}

/** `GET /runs/:id/report`, tried up to 3 times 0.5 s apart (a Worker busy finishing the run may fail one read). */
async function readReport(api: RunsApi, runId: string): Promise<{ ok: true; value: RunReport } | { ok: false; value: null; error: string }> {
  let error = "";
  for (let i = 0; i < 3; i++) {
    try {
      return { ok: true, value: await api.report(runId) };
    } catch (err) {
      error = (err as Error).message;
      await delay(500);
    }
  }
  return { ok: false, value: null, error };
}

/** Episodes still claimed on the session's emulators (null when no emulator runs: a real server is not asked). */
function countClaimed(session: Pick<RunTarget, "swarms">): number | null {
  const emulators = session.swarms.filter((s) => s.emulator);
  if (!emulators.length) return null;
  return emulators.reduce((n, s) => n + [...s.emulator!.emulator.engine.records.values()].filter((r) => r.episode_status === "claimed").length, 0);
}
