/**
 * @module cli/dev/follow-run — following a created run to its end for `ajet-edge dev` and `ajet-edge run`
 * (cli/dev/run-dev): live progress and the run's new warnings, the Worker's silences shown, the drain when
 * interrupted or late (`POST /runs/:id/stop`, bounded wait), then the summary, the learning signals and the exit code.
 */
import { setTimeout as delay } from "node:timers/promises";
import type { Interrupts } from "./interrupts.ts";
import { type ProgressPrinter, RepeatLimiter, type DevIo } from "./output.ts";
import type { DevPlan } from "./plan.ts";
import { formatReward, formatSeconds, progressOf, renderSummary, SILENCE_SHOWN_MS, swarmRewardsOf, type Progress } from "./render.ts";
import { renderCost, renderSignals } from "./signals-render.ts";
import { waitForRun, type RunReport, type RunsApi, type RunView, type WaitOutcome } from "./runs-api.ts";
import { DevHints } from "./hints.ts";
import type { DevSession } from "./session.ts";
import { summaryJson, type DevSummaryJson } from "./summary-json.ts";
import { runFailure } from "./verdict.ts";
import { isRequestTimeout } from "./bounded-fetch.ts";

/** How long a stopped run may take to drain before the CLI gives up waiting, milliseconds. */
export const DRAIN_TIMEOUT_MS = 30_000;

/** What a dev run ended with (also what `--json` prints: one document in every outcome). */
export interface DevResult {
  exitCode: number;
  /** the `--json` document; `runId` null and `outcome` `error` when the run was never created */
  json: DevSummaryJson;
}

/** Prints how many lines each repeat limiter held back (one line per kind). */
export function reportSuppressed(printer: ProgressPrinter, limiter: RepeatLimiter): void {
  for (const [kind, n] of limiter.flush()) printer.line(`  ${kind}: ${n} more lines like this not shown`);
}

/** What {@link follow} works with besides the run: the output, the interrupts, the deadline and the request signal. */
export interface FollowContext {
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
export async function follow(api: RunsApi, runId: string, plan: DevPlan, session: Pick<DevSession, "swarms">, c: FollowContext): Promise<DevResult | { lost: string }> {
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
function countClaimed(session: Pick<DevSession, "swarms">): number | null {
  const emulators = session.swarms.filter((s) => s.emulator);
  if (!emulators.length) return null;
  return emulators.reduce((n, s) => n + [...s.emulator!.emulator.engine.records.values()].filter((r) => r.episode_status === "claimed").length, 0);
}
