/**
 * @module cli/commands/status — `ajet-edge status RUN --worker URL [--watch]`: one run's status (`GET /runs/:id`):
 * phase, engines, what it waits for, the open step, episodes by state (the in-flight counts), sources, finished
 * steps and failures. `--watch` refreshes it (a TTY redraws the screen; otherwise a new block when it changed)
 * until the run finishes or Ctrl-C, and lists the in-flight episodes (`GET /runs/:id/dashboard`): age, time since
 * the server last saw LLM activity, LLM calls. Under the status: the learning signals per step and the run's
 * estimated cost (`GET /runs/:id/metrics`). `--server-logs` adds each swarm server's verbose logs (spec §3.19).
 */
import { setTimeout as delay } from "node:timers/promises";
import type { Command } from "commander";
import { z } from "zod";
import { SwarmClient } from "../../client/index.ts";
import { helpOf, parseFlags } from "../args.ts";
import { CliError, jsonErrorDocument, type CliCommand } from "../command.ts";
import { processIo, type DevIo } from "../dev/output.ts";
import { renderInFlight, renderRunStatus } from "../dev/run-table.ts";
import { renderCost, renderSignals } from "../dev/signals-render.ts";
import type { InFlightEpisodeView, RunsApi, RunView } from "../dev/runs-api.ts";
import { callFailure, defineWorkerFlags, workerApi } from "../dev/worker-call.ts";

function defineStatusFlags(cmd: Command): void {
  cmd.description("Shows one run of a Worker.").argument("<run>", "the run id (from `ajet-edge runs`)");
  defineWorkerFlags(cmd);
  cmd
    .option("--watch", "refresh until the run finishes (Ctrl-C to stop watching; the run goes on)")
    .option("--interval <seconds>", "seconds between refreshes with --watch (default 2)")
    .option("--server-logs", "also show each swarm server's verbose logs (the engine's status lines of the last 30 s, GET /get_verbose_logs), read from this machine")
    .option("--json", "print the run's status view as one JSON document on stdout (with --watch: the last one; on failure {error, exitCode})");
}

const Interval = z.coerce.number({ error: "--interval must be a number of seconds, e.g. 2" })
  .min(0.2, { error: "--interval must be ≥ 0.2 seconds, e.g. 2" }).default(2);

const CLEAR_SCREEN = "\x1b[H\x1b[2J";

/** The in-flight episodes of a run that is not finished; none when the Worker could not say (the counts still hold). */
async function inFlightOf(api: RunsApi, view: RunView): Promise<InFlightEpisodeView[]> {
  if (view.phase === "finished" || view.episodes.inFlight === 0) return [];
  return api.inFlight(view.runId).catch(() => []);
}

/** The in-flight block under the status, or "". */
function inFlightBlock(rows: readonly InFlightEpisodeView[]): string {
  return rows.length ? `\n\nin flight:\n${renderInFlight(rows)}` : "";
}

/** The learning signals per step and the cost so far (`GET /runs/:id/metrics`), or "" when the Worker could not say. */
async function signalsBlock(api: RunsApi, runId: string): Promise<{ signals: string; cost: string }> {
  const metrics = await api.metrics(runId).catch(() => null);
  const table = metrics ? renderSignals(metrics) : "";
  return { signals: table ? `\n\nlearning signals:\n${table}` : "", cost: metrics?.cost ? `\n${table ? "" : "\n"}${renderCost(metrics.cost)}` : "" };
}

/**
 * The verbose logs of each swarm server of the run (spec §3.19), read from this machine (5 s per server); a server this
 * machine cannot reach gets one line saying so.
 */
async function serverLogsBlock(view: RunView, fetchFn: typeof fetch, nowMs: number): Promise<string> {
  const blocks = await Promise.all(view.swarms.map(async (s) => {
    try {
      const entries = await new SwarmClient({ baseURL: s.url, fetch: fetchFn, logger: { info: () => {}, warn: () => {}, error: () => {} } }).getVerboseLogs({ timeoutMs: 5_000 });
      const lines = entries.map((e) => `  ${Math.max(0, Math.round(nowMs / 1000 - e.timestamp))} s ago${e.tag ? ` [${e.tag}]` : ""} ${e.message}`);
      return `server logs of ${s.name} (${s.url}):\n${lines.length ? lines.join("\n") : "  (none in the last 30 s)"}`;
    } catch (err) {
      return `server logs of ${s.name} (${s.url}): not readable from this machine (${err instanceof Error ? err.message : String(err)})`;
    }
  }));
  return blocks.length ? `\n\n${blocks.join("\n")}` : "";
}

/**
 * Runs the command with injectable I/O and environment.
 * @returns 0 shown (with --watch: the run finished, or Ctrl-C); 1 no such run / the Worker failed; 2 a refused token
 * @throws CliError on a usage error
 */
export async function runStatusCommand(argv: string[], io: DevIo = processIo, env: NodeJS.ProcessEnv = process.env, fetchFn: typeof fetch = fetch): Promise<number> {
  const flags = parseFlags("status", defineStatusFlags, argv);
  if (!flags) {
    io.out(`${helpOf("status", defineStatusFlags)}\n`);
    return 0;
  }
  const runId = flags.positionals[0]!;
  const interval = Interval.safeParse(flags.values["interval"]);
  if (!interval.success) throw new CliError(interval.error.issues[0]!.message);
  const stop = new AbortController();
  // Ctrl-C ends a pending request too (the run goes on; only the watching stops)
  const { api, worker, requestTimeoutSeconds } = workerApi(flags.values, env, fetchFn, stop.signal);
  const json = flags.values["json"] === true;
  const watch = flags.values["watch"] === true;
  const tty = io.isTTY(false) && !json;
  const unsubscribe = io.onInterrupt(() => stop.abort());
  let shown = "";
  let last: RunView | null = null;
  try {
    for (;;) {
      last = await api.get(runId);
      if (!json) {
        const rows = watch ? await inFlightOf(api, last) : [];
        const { signals, cost } = await signalsBlock(api, runId);
        const logs = flags.values["serverLogs"] === true ? await serverLogsBlock(last, fetchFn, io.now()) : "";
        const text = `${renderRunStatus(last, io.now())}${signals}${cost}${inFlightBlock(rows)}${logs}`;
        // a plain stream gets a new block only when something but the ages (and the cost, which grows with time) changed
        const key = `${renderRunStatus(last, last.createdAtMs)}${signals}${inFlightBlock(rows.map((r) => ({ ...r, ageSeconds: null, sinceLastLlmActivity: null })))}`;
        if (tty && watch) io.out(`${CLEAR_SCREEN}${text}\n`);
        else if (key !== shown) io.out(`${shown ? "\n" : ""}${text}\n`);
        shown = key;
      }
      if (!watch || last.phase === "finished" || stop.signal.aborted) break;
      await delay(interval.data * 1000, undefined, { signal: stop.signal }).catch(() => {});
      if (stop.signal.aborted) break;
    }
  } catch (err) {
    // Ctrl-C during a refresh ends the watch with the last view shown
    if (!(stop.signal.aborted && last)) {
      const f = stop.signal.aborted ? { code: 130, line: "interrupted before the Worker answered" } : callFailure(err, { command: "status", workerUrl: worker.workerUrl, runId, requestTimeoutSeconds });
      io.err(`ajet-edge status: ${f.line}\n`);
      if (json) io.out(`${JSON.stringify(jsonErrorDocument(f.line, f.code), null, 2)}\n`);
      return f.code;
    }
  } finally {
    unsubscribe();
  }
  if (json) io.out(`${JSON.stringify(last, null, 2)}\n`);
  return 0;
}

const command: CliCommand = { name: "status", run: (argv) => runStatusCommand(argv) };
export default command;
