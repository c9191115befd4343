/**
 * @module cli/dev/run-dev — `runDev`: one whole `ajet-edge dev` run (issue 3 §6). Plan → start the session
 * (emulator or given servers, local Worker; the Worker starts the engine) → `POST /runs` → live progress → summary. Ctrl-C or the
 * timeout drains the run (`POST /runs/:id/stop`, bounded wait) before workerd and the emulator stop, so no episode
 * is left claimed. Exit codes: 0 finished as asked, 1 failed (including a finished run that ended no episode or
 * stopped short of its steps, see `verdict.ts`) / timed out, 2 bad input, 130 Ctrl-C, 143 SIGTERM.
 */
import { parseRunRequest } from "../../edge/run-request.ts";
import type { DevOptions } from "./options.ts";
import { ProgressPrinter, RepeatLimiter, type DevIo, type InterruptSignal } from "./output.ts";
import { buildDevPlan, runSpecFor, type DevDataset, type DevPlan } from "./plan.ts";
import { formatReward, formatSeconds, formatWorkerLog, progressOf, renderIssues, renderSummary, swarmRewardsOf } from "./render.ts";
import { runsApi, RunsApiError, waitForRun, type RunReport, type RunsApi, type RunView, type WaitOutcome } from "./runs-api.ts";
import { DevHints } from "./hints.ts";
import { startDevSession, type DevSession } from "./session.ts";
import { summaryJson, type DevSummaryJson } from "./summary-json.ts";
import { runFailure } from "./verdict.ts";

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

/**
 * Runs `ajet-edge dev` with parsed options.
 * @returns the exit code and the JSON summary (also printed with `--json`)
 */
export async function runDev(options: DevOptions, io: DevIo, extras: RunDevExtras = {}): Promise<DevResult> {
  const startedAtMs = io.now();
  const write = options.json ? io.err : io.out;
  const printer = new ProgressPrinter(write, io.isTTY(options.json), io.columns);
  const say = (text: string) => printer.line(text);
  const fail = (code: number, text: string): DevResult => {
    printer.done();
    io.err(`ajet-edge dev: ${text}\n`);
    return { exitCode: code, json: null };
  };

  let plan: DevPlan;
  try {
    plan = await buildDevPlan(options, extras);
  } catch (err) {
    return fail(2, (err as Error).message); // a DatasetLoadError or an unknown function: both name the fix
  }
  const local = parseRunRequest(runSpecFor(plan, plan.swarmNames.map((name) => ({ name, url: "http://127.0.0.1:10086" }))));
  if (!local.success) return fail(2, `the run spec is invalid:\n${renderIssues(local.issues)}`);

  const interrupts = new Interrupts();
  const unsubscribe = io.onInterrupt((s) => interrupts.on(s));
  const deadline = AbortSignal.timeout(plan.timeoutMs);
  let session: DevSession | null = null;
  const workerLines = new RepeatLimiter();
  try {
    say(`ajet-edge dev: function ${plan.functionName}; ${plan.datasets.map((d) => d.label).join("; ")}`);
    for (const d of plan.datasets) if (d.warning) say(`  ${d.warning}`);
    for (const w of plan.warnings) say(`  ${w}`);
    say(`  batch ${plan.job.batchSize} tasks x num_repeat ${plan.job.numRepeat} = ${plan.episodesPerStep} episodes per step; ${stepsText(plan.steps)}`);
    say(startingLine(plan));
    try {
      const onLog = (raw: string) => {
        const line = formatWorkerLog(raw);
        if (line && workerLines.admit(line)) say(`  ${line}`);
      };
      session = await startDevSession(plan, { onLog, logLevel: options.logLevel, signal: AbortSignal.any([interrupts.first.signal, deadline]) });
    } catch (err) {
      if (interrupts.signal) return fail(interrupts.exitCode, "interrupted while starting; everything started was stopped");
      if (deadline.aborted) return fail(1, `could not start within --timeout ${plan.timeoutMs / 1000} s`);
      return fail(1, (err as Error).message);
    }
    extras.onSession?.(session);
    for (const s of session.swarms) say(`  swarm ${s.name}: ${s.url}${s.emulator ? " (local emulator)" : ""}`);
    say(`  Worker: ${session.worker.url} (local workerd)`);
    const api = runsApi(session.worker.url, fetch, { token: session.worker.token });
    let created: RunView;
    try {
      created = await api.create(session.spec);
    } catch (err) {
      if (err instanceof RunsApiError && err.status === 400) return fail(2, `POST /runs refused the run spec: ${err.message}\n${renderIssues(err.issues)}`);
      return fail(1, `POST /runs failed: ${(err as Error).message}`);
    }
    say(`run ${created.runId} created (${Math.round((io.now() - startedAtMs) / 100) / 10} s after start); Ctrl-C stops it cleanly`);
    say(`  dashboard: ${session.worker.url}/runs/${created.runId} (sign in with this session's token ${session.worker.token})`);
    return await follow(api, created.runId, plan, session, { io, printer, interrupts, deadline, startedAtMs, json: options.json, workerLines });
  } finally {
    reportSuppressed(printer, workerLines);
    printer.done();
    await session?.close();
    unsubscribe(); // after the close: a Ctrl-C while workerd stops must not kill the CLI half-way
  }
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
}

/** Waits for the run (progress, new warnings of the run's log), drains it when interrupted or late, summarises. */
async function follow(api: RunsApi, runId: string, plan: DevPlan, session: DevSession, c: FollowContext): Promise<DevResult> {
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
    c.io.err(`ajet-edge dev: lost the run ${runId}: ${(err as Error).message}\n`);
    return { exitCode: 1, json: null };
  }
  c.printer.done();
  reportSuppressed(c.printer, c.workerLines);
  const report: RunReport | null = await api.report(runId).catch(() => null);
  const claimedLeft = countClaimed(session);
  const interrupted = c.interrupts.signal !== null;
  const final = report?.summary ?? last;
  const failure = !interrupted && outcome === "finished" && final ? runFailure(final, plan) : null;
  const exitCode = interrupted ? c.interrupts.exitCode : outcome === "finished" && !failure ? 0 : 1;
  const json = summaryJson({ runId, outcome: interrupted ? "interrupted" : failure ? "failed" : outcome, exitCode, failure, report, last, session, claimedLeft });
  const metrics = plan.swarmNames.length > 1 ? await api.metrics(runId).catch(() => null) : null;
  const swarmRewards = metrics ? swarmRewardsOf(metrics) : undefined;
  if (report) c.printer.line(`\nsummary of run ${runId}:\n${renderSummary(report.summary, { episodesPerStep: plan.episodesPerStep, ...(swarmRewards ? { swarmRewards } : {}) })}`);
  const overall = report?.eval?.overall;
  if (overall) c.printer.line(`eval: ${overall.scoredTasks}/${overall.tasks} tasks scored, pass@${report!.eval!.k} ${formatReward(overall.passAtK)}, pass@1 ${formatReward(overall.passAt1)}`);
  if (claimedLeft) c.printer.line(`warning: ${claimedLeft} episodes are still claimed on the emulator`);
  c.printer.line(exitCode === 0 ? `done in ${formatSeconds(c.io.now() - c.startedAtMs)}` : `ended (${json.outcome}) after ${formatSeconds(c.io.now() - c.startedAtMs)}`);
  if (failure) c.io.err(`ajet-edge dev: the run failed: ${failure}\n`);
  if (c.json) c.io.out(`${JSON.stringify(json, null, 2)}\n`);
  return { exitCode, json };
}

/** Episodes still claimed on the session's emulators (null when no emulator runs: a real server is not asked). */
function countClaimed(session: DevSession): number | null {
  const emulators = session.swarms.filter((s) => s.emulator);
  if (!emulators.length) return null;
  return emulators.reduce((n, s) => n + [...s.emulator!.emulator.engine.records.values()].filter((r) => r.episode_status === "claimed").length, 0);
}
