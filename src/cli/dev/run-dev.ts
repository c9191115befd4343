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
import { formatReward, formatSeconds, formatWorkerLog, progressOf, renderIssues, renderSummary, SILENCE_SHOWN_MS, swarmRewardsOf, type Progress } from "./render.ts";
import { renderCost, renderSignals } from "./signals-render.ts";
import { runsApi, RunsApiError, waitForRun, type RunReport, type RunsApi, type RunView, type WaitOutcome } from "./runs-api.ts";
import { DevHints } from "./hints.ts";
import { startDevSession, type DevSession, type SessionSwarm } from "./session.ts";
import { checkSwarms, SwarmCheckError } from "./preflight.ts";
import { devSpecDefaults, readSpecFile, specPlan } from "./spec-file.ts";
import { errorSummaryJson, summaryJson, type DevSummaryJson } from "./summary-json.ts";
import { runFailure } from "./verdict.ts";
import { boundedFetch, isRequestTimeout } from "./bounded-fetch.ts";
import { tokenHint } from "./worker-call.ts";

/** How long a stopped run may take to drain before the CLI gives up waiting, milliseconds. */
export const DRAIN_TIMEOUT_MS = 30_000;

/** What a dev run ended with (also what `--json` prints: one document in every outcome). */
export interface DevResult {
  exitCode: number;
  /** the `--json` document; `runId` null and `outcome` `error` when the run was never created */
  json: DevSummaryJson;
}

/** Test hooks of {@link runDev}: datasets and policy knobs the flags cannot express. */
export interface RunDevExtras {
  datasets?: DevDataset[];
  policy?: DevPlan["policy"];
  /** called once the session runs (tests inspect the emulator) */
  onSession?: (session: DevSession) => void;
}

/**
 * Ctrl-C / SIGTERM, answered at once in every phase: the first one stops the start or the wait for the run (`first`:
 * in-flight requests are aborted too) and prints what happens next; during the keep-alive after the run it closes
 * the Worker and the emulators. A second one (or any while closing) quits at once (`io.quit`): the process's exit
 * handlers kill workerd's process group, and episodes still in flight are left to the server's discard timeout.
 */
export class Interrupts {
  readonly first = new AbortController();
  readonly force = new AbortController();
  signal: InterruptSignal | null = null;
  /** what the program is doing, for the line a Ctrl-C is answered with */
  phase: "starting" | "running" | "draining" | "summarizing" | "keeping" | "closing" = "starting";

  constructor(
    private readonly say: (line: string) => void,
    private readonly quit: (code: number) => void,
  ) {}

  on(signal: InterruptSignal): void {
    // while draining or closing, stopping cleanly is already under way: a Ctrl-C there is the second one
    if (this.signal === null && this.phase !== "closing" && this.phase !== "draining") {
      this.signal = signal;
      this.say(this.phase === "keeping" || this.phase === "summarizing"
        ? "stopping the Worker and the emulators… (Ctrl-C again to quit now)"
        : this.phase === "starting"
          ? "interrupted: stopping what was started… (Ctrl-C again to quit now)"
          : "interrupted: stopping the run, waiting for in-flight episodes to finish or abort (Ctrl-C again to quit now)…");
      this.first.abort(new Error(`interrupted (${signal})`));
      return;
    }
    this.signal ??= signal;
    this.say("quitting now");
    this.force.abort(new Error(`interrupted again (${signal})`));
    this.quit(this.exitCode);
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
  const file = await readSpecFile(options.specPath, options.swarms.length ? options.swarms : undefined, local ? devSpecDefaults() : undefined);
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
  return runClient("run", options, io, {}, async (plan, o) => {
    const swarms = plan.externalSwarms ?? [];
    // what dev checks before anything starts: each server answers, and batches as the run does if it runs already
    if (options.swarmCheck !== false) await checkSwarms(swarms, plan.job, { signal: o.signal });
    return {
      workerUrl: options.workerUrl,
      ...(options.token ? { token: options.token } : {}),
      workerLabel: options.workerUrl,
      signIn: "sign in with the Worker's API token",
      swarms: swarms.map((s) => ({ name: s.name, url: s.url, emulator: null })),
      close: async () => {},
    };
  });
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
  // every outcome ends here or in follow(): with --json, exactly one document goes to stdout
  const fail = (code: number, text: string, runId: string | null = null): DevResult => {
    printer.done();
    io.err(`ajet-edge ${command}: ${text}\n`);
    const json = errorSummaryJson({ error: text, exitCode: code, runId, outcome: code === 130 || code === 143 ? "interrupted" : "error", ...(target ? { swarms: swarmsJson(target.swarms) } : {}) });
    if (options.json) io.out(`${JSON.stringify(json, null, 2)}\n`);
    return { exitCode: code, json };
  };
  let target: RunTarget | null = null;

  let plan: DevPlan;
  try {
    plan = await planOf(options, extras, command === "dev");
  } catch (err) {
    return fail(2, (err as Error).message); // a DatasetLoadError, a SpecFileError or an unknown function: each names the fix
  }
  const local = parseRunRequest(runSpecFor(plan, plan.swarmNames.map((name) => ({ name, url: "http://127.0.0.1:10086" }))));
  if (!local.success) return fail(2, `the run spec is invalid:\n${renderIssues(local.issues)}`);

  const interrupts = new Interrupts((line) => printer.line(line), (code) => io.quit(code));
  const unsubscribe = io.onInterrupt((s) => interrupts.on(s));
  const deadline = AbortSignal.timeout(plan.timeoutMs);
  const workerLines = new RepeatLimiter();
  try {
    say(`ajet-edge ${command}: function ${plan.functionName}; ${plan.datasets.map((d) => d.label).join("; ")}${plan.spec ? ` (from ${plan.spec.path}${plan.spec.filled ? `; ${plan.spec.filled.join(" and ")} as dev supplies them` : ""})` : ""}`);
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
      if (err instanceof SwarmCheckError && err.kind === "batch") return fail(2, err.message);
      return fail(1, (err as Error).message);
    }
    for (const s of target.swarms) say(`  swarm ${s.name}: ${s.url}${s.emulator ? " (local emulator)" : ""}`);
    say(`  Worker: ${target.workerLabel}`);
    // every request: the timeout and the phase's signal (Ctrl-C or the deadline while following; a second Ctrl-C
    // while draining)
    interrupts.phase = "running";
    const requests = { signal: AbortSignal.any([interrupts.first.signal, deadline]) };
    const api = runsApi(target.workerUrl, boundedFetch(options.requestTimeoutSeconds * 1000, () => requests.signal), target.token !== undefined ? { token: target.token } : {});
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
        if (interrupts.signal) return fail(interrupts.exitCode, "interrupted before the run was created; nothing to stop");
        if (deadline.aborted) return fail(1, `no run was created within --timeout ${plan.timeoutMs / 1000} s`);
        if (isRequestTimeout(err)) return fail(1, `the Worker at ${target.workerUrl} did not answer POST /runs within ${options.requestTimeoutSeconds} s (--request-timeout); check that it runs and is reachable from here (the run may have been created: see 'ajet-edge runs')`);
        if (err instanceof RunsApiError && err.status === 400) return fail(2, `POST /runs refused the run spec: ${err.message}\n${renderIssues(err.issues)}`);
        if (err instanceof RunsApiError && (err.status === 401 || err.status === 403)) return fail(2, `${err.message}\n  ${tokenHint(command)}`);
        return fail(1, `POST /runs failed: ${(err as Error).message}`);
      }
      say(`run ${runId} created (${Math.round((io.now() - startedAtMs) / 100) / 10} s after start); Ctrl-C stops it cleanly`);
    }
    say(`  dashboard: ${target.workerUrl}/runs/${runId} (${target.signIn})`);
    await target.onRun?.(runId);
    const result = await follow(api, runId, plan, target, { io, printer, interrupts, deadline, startedAtMs, workerLines, command, requests });
    if ("lost" in result) return fail(interrupts.signal ? interrupts.exitCode : 1, result.lost, runId);
    await target.onRunEnded?.(runId);
    if (options.json) io.out(`${JSON.stringify(result.json, null, 2)}\n`);
    if (command === "dev" && !interrupts.signal && keepOpen(options, io)) {
      // a person watches: the printed dashboard URL keeps working until they are done with it
      interrupts.phase = "keeping";
      printer.line(`the Worker and the dashboard stay up: ${target.workerUrl}/runs/${runId} (${target.signIn}); Ctrl-C to stop them (--exit: end with the run)`);
      await aborted(interrupts.first.signal);
    }
    return result;
  } finally {
    interrupts.phase = "closing"; // a Ctrl-C from here on quits at once
    reportSuppressed(printer, workerLines);
    printer.done();
    await target?.close();
    unsubscribe();
  }
}

/** Whether dev stays up after the run: a person at a terminal (not `--json`, `--exit`, a pipe or CI). */
function keepOpen(options: DevOptions, io: DevIo): boolean {
  return !options.json && !(options as DevOptions & DevOnlyOptions).exit && io.interactive();
}

/** Resolves when the signal fires. */
function aborted(signal: AbortSignal): Promise<void> {
  return signal.aborted ? Promise.resolve() : new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
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

function swarmsJson(swarms: readonly SessionSwarm[]): DevSummaryJson["swarms"] {
  return swarms.map((s) => ({ name: s.name, url: s.url, emulator: s.emulator !== null }));
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
  workerLines: RepeatLimiter;
  command: "dev" | "run";
  /** the signal every request to the Worker carries; follow switches it to the second Ctrl-C's for the drain */
  requests: { signal: AbortSignal };
}

/**
 * Waits for the run (progress, new warnings of the run's log), drains it when interrupted or late, summarises.
 * @returns the result (its JSON not printed yet), or `lost`: why the run could no longer be followed
 */
async function follow(api: RunsApi, runId: string, plan: DevPlan, session: RunTarget, c: FollowContext): Promise<DevResult | { lost: string }> {
  const seenLog = new Set<string>();
  const runLines = new RepeatLimiter();
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
      // the same warning repeated (an unreachable server is logged at every poll) is shown 3 times, then counted
      if ((l.level === "warn" || l.level === "error") && runLines.admit(`[run ${l.level}] ${l.message}`)) c.printer.line(`  [run ${l.level}] ${l.message} ${JSON.stringify(l.fields)}`);
    }
    const ctx = { episodesPerStep: plan.episodesPerStep, steps: plan.steps, ...(plan.totalEpisodes !== undefined ? { totalEpisodes: plan.totalEpisodes } : {}), elapsedMs: c.io.now() - c.startedAtMs, stopping };
    for (const hint of hints.observe(status, c.io.now())) c.printer.line(`  ${hint}`);
    lastProgress = progressOf(status, ctx);
    c.printer.progress(lastProgress, c.io.now());
  };
  let lastProgress: Progress | null = null;
  const watched = watchSilence(api, c, () => lastProgress);
  let outcome: WaitOutcome;
  let last: RunView | null;
  try {
    ({ outcome, status: last } = await waitForRun(watched.api, runId, { timeoutMs: plan.timeoutMs, onStatus, signal: AbortSignal.any([c.interrupts.first.signal, c.deadline]) }));
    if (outcome === "aborted" && !c.interrupts.signal) outcome = "timeout";
    if (outcome !== "finished") {
      stopping = true;
      c.interrupts.phase = "draining";
      c.requests.signal = c.interrupts.force.signal;
      // an interrupt said so when it came (Interrupts.on)
      if (outcome === "timeout") c.printer.line(`the run did not finish within --timeout ${plan.timeoutMs / 1000} s (phase ${last?.phase ?? "?"}); stopping it (draining; Ctrl-C to quit now)…`);
      await api.stop(runId);
      const drained = await waitForRun(watched.api, runId, { timeoutMs: DRAIN_TIMEOUT_MS, onStatus, signal: c.interrupts.force.signal });
      last = drained.status ?? last;
      if (drained.outcome !== "finished") {
        c.printer.line(`warning: the run did not finish draining (${drained.outcome}); ${last?.episodes.inFlight ?? "?"} episodes in flight may stay claimed until the server's discard timeout`);
      }
    }
  } catch (err) {
    return { lost: `lost the run ${runId}: ${isRequestTimeout(err) ? `the Worker did not answer for ${Math.round(watched.silentMs() / 1000)} s` : (err as Error).message}` };
  } finally {
    watched.close();
  }
  // the run is over: a Ctrl-C from here on skips what follows the summary, and only a second one aborts its reads
  const interrupted = c.interrupts.signal !== null;
  c.interrupts.phase = "summarizing";
  c.requests.signal = c.interrupts.force.signal;
  c.printer.done();
  reportSuppressed(c.printer, c.workerLines);
  reportSuppressed(c.printer, runLines);
  const report = await readReport(api, runId);
  if (!report.ok) c.printer.line(`warning: could not read the run's report (${report.error}); no summary table; see it later with 'ajet-edge status ${runId}'`);
  const claimedLeft = countClaimed(session);
  const final = report.value?.summary ?? last;
  // a run that never started (its datasets failed their background index pass) has no report: its view says why
  const failure = !interrupted && outcome === "finished" && final ? ((!report.value && last?.failure) || runFailure(final, plan)) : null;
  const exitCode = interrupted ? c.interrupts.exitCode : outcome === "finished" && !failure ? 0 : 1;
  const error = interrupted
    ? `interrupted (${c.interrupts.signal}); the run was stopped`
    : outcome === "timeout"
      ? `the run did not finish within --timeout ${plan.timeoutMs / 1000} s`
      : failure
        ? `the run failed: ${failure}`
        : exitCode !== 0 ? `the run ended ${outcome}` : null;
  const json = summaryJson({ runId, outcome: interrupted ? "interrupted" : failure ? "failed" : outcome, exitCode, error, failure, report: report.value, last, session, claimedLeft });
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
  return { exitCode, json };
}

/**
 * The runs API with its status reads watched: while one is unanswered for {@link SILENCE_SHOWN_MS} or more (pending,
 * or failed and retried), the progress line says so every second with the last values it had; a line says when the
 * Worker answers again.
 */
function watchSilence(api: RunsApi, c: FollowContext, last: () => Progress | null): { api: RunsApi; silentMs(): number; close(): void } {
  let answeredAtMs = c.io.now();
  let said = false;
  const show = () => {
    const silentMs = c.io.now() - answeredAtMs;
    const p = last();
    if (silentMs < SILENCE_SHOWN_MS || !p) return;
    said = true;
    c.printer.progress({ ...p, elapsedMs: c.io.now() - c.startedAtMs, workerSilentMs: silentMs }, c.io.now());
  };
  const ticker = setInterval(show, 1_000);
  ticker.unref();
  return {
    api: {
      ...api,
      get: async (runId) => {
        const view = await api.get(runId);
        answeredAtMs = c.io.now();
        if (said) c.printer.line("  the Worker answers again");
        said = false;
        return view;
      },
    },
    silentMs: () => c.io.now() - answeredAtMs,
    close: () => clearInterval(ticker),
  };
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
