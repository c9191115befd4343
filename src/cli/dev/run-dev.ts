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
import type { DevOnlyOptions, DevOptions, WorkerOptions } from "./options.ts";
import { ProgressPrinter, RepeatLimiter, type DevIo } from "./output.ts";
import { buildDevPlan, runSpecFor, type DevDataset, type DevPlan } from "./plan.ts";
import { formatWorkerLog, renderIssues } from "./render.ts";
import { runsApi, RunsApiError } from "./runs-api.ts";
import { startDevSession, type DevSession, type SessionSwarm } from "./session.ts";
import { checkSwarms, SwarmCheckError } from "./preflight.ts";
import { devSpecDefaults, readSpecFile, specPlan } from "./spec-file.ts";
import { errorSummaryJson, type DevSummaryJson } from "./summary-json.ts";
import { boundedFetch, isRequestTimeout } from "./bounded-fetch.ts";
import { tokenHint } from "./worker-call.ts";
import { follow, reportSuppressed, type DevResult } from "./follow-run.ts";
import { Interrupts } from "./interrupts.ts";

export { DRAIN_TIMEOUT_MS, type DevResult } from "./follow-run.ts";
export { Interrupts } from "./interrupts.ts";

/** Test hooks of {@link runDev}: datasets and policy knobs the flags cannot express. */
export interface RunDevExtras {
  datasets?: DevDataset[];
  policy?: DevPlan["policy"];
  /** called once the session runs (tests inspect the emulator) */
  onSession?: (session: DevSession) => void;
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

/** `eval run`, `1 training step`, `3 training steps`. */
export function stepsText(steps: number | null): string {
  return steps === null ? "eval run" : `${steps} training step${steps === 1 ? "" : "s"}`;
}

function startingLine(plan: DevPlan): string {
  if (plan.externalSwarms) return `starting the Worker in local workerd; swarm servers ${plan.externalSwarms.map((s) => s.url).join(", ")}…`;
  const emulators = plan.swarmNames.length > 1 ? `${plan.swarmNames.length} swarm emulators (${plan.swarmNames.join(", ")})` : "the swarm emulator";
  return `starting ${emulators} (profile dev) and the Worker in local workerd (the Worker starts the engine)…`;
}
