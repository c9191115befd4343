/**
 * @module cli/dev/run-table — what `ajet-edge runs` and `ajet-edge status` print, as pure `view → string`
 * functions: the runs list (one row per run, newest first) and one run's status (phase, engines, what it waits
 * for, the open step, the episodes in flight by state and the totals so far, the sources, finished steps, failures). No I/O, no clock reads: the
 * caller passes "now" for ages.
 */
import { formatCauses, formatReward, formatSeconds, shortStatus, table } from "./render.ts";
import type { InFlightEpisodeView, RunListingView, RunView } from "./runs-api.ts";

/** An age as `12s`, `5m`, `3h`, `2d` (ms → the largest whole unit). */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** The runs list: run, function, phase, engine, global step, last step's mean reward, age, and what it waits for. */
export function renderRunList(runs: readonly RunListingView[], nowMs: number): string {
  if (!runs.length) return "no runs yet; create one with `ajet-edge run --worker URL …`";
  const rows = [["run", "function", "phase", "engine", "global step", "last reward", "created", "note"]];
  for (const r of runs) {
    const note = r.failure ? `failed: ${r.failure}` : r.waitingFor ? `waiting: ${r.waitingFor}` : r.stopReason ? `stop: ${r.stopReason}` : "";
    rows.push([r.runId, r.function, r.phase, r.engineStatus ? shortStatus(r.engineStatus) : "-", r.globalStep === null ? "-" : String(r.globalStep), formatReward(r.lastStepMeanReward), `${formatAge(nowMs - r.createdAtMs)} ago`, note]);
  }
  return table(rows, [false, false, false, false, true, true, true, false]);
}

type StatusView = RunView & { waitingFor?: string | null; failure?: string | null };

/** One run's status as lines: headline, engines, waiting-for, open step, episodes by state, sources, steps, failures. */
export function renderRunStatus(view: StatusView, nowMs: number): string {
  const lines: string[] = [];
  const head = [`run ${view.runId}`, `function ${view.function}`, `phase ${view.phase}`];
  if (view.stopReason) head.push(`stop reason ${view.stopReason}`);
  head.push(`created ${formatAge(nowMs - view.createdAtMs)} ago`);
  lines.push(head.join("  "));
  lines.push(`engines: ${view.engines.map((e) => `${e.swarm} ${shortStatus(e.engineStatus)} (global step ${e.globalStep ?? "-"})`).join(", ") || "-"}`);
  if (view.failure) lines.push(`failed: ${view.failure}`);
  if (view.waitingFor) lines.push(`waiting for: ${view.waitingFor}`);
  const w = view.currentWindow;
  if (w) lines.push(`open step ${w.windowIndex + 1}: ${w.episodesEnded} episodes ended, mean reward ${formatReward(w.meanReward)}${w.waitingForEngine ? " (training)" : ""}`);
  // the view's per-state counts are the live episode rows (a resolved group's rows are pruned, so `ended` there is
  // not how many ended); what ended, failed or was dropped so far are the run's totals
  const e = view.episodes as RunView["episodes"] & Partial<Record<string, number>>;
  const live = ["queued", "dispatched", "running", "reporting"] as const;
  const t = view.totals as RunView["totals"] & Partial<Record<string, number>>;
  const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  lines.push(
    "",
    "episodes now:",
    table([["in flight", ...live], [String(e.inFlight), ...live.map((s) => String(e[s] ?? 0))]], Array(live.length + 1).fill(true)),
    `so far: ${plural(t.episodesEnded, "episode", "episodes")} ended, ${plural(t.attemptsFailed ?? 0, "attempt", "attempts")} failed, ${plural(t.groupsDropped ?? 0, "group", "groups")} dropped`,
  );
  if (view.sources?.length) {
    const rows = [["source", "weight", "tasks", "served", "epoch", "done"]];
    for (const s of view.sources) rows.push([s.name, String(s.weight), String(s.taskCount), `${s.tasksServed}/${s.tasksTotal}`, String(s.epoch), s.exhausted ? "yes" : "no"]);
    lines.push("", table(rows, [false, true, true, true, true, false]));
  }
  if (view.steps.length) {
    const rows = [["step", "global step", "episodes", "mean reward", "wall time"]];
    for (const s of view.steps) rows.push([String(s.windowIndex + 1), String(s.globalStep ?? "-"), String(s.episodesEnded), formatReward(s.meanReward), formatSeconds(s.wallTimeMs)]);
    lines.push("", table(rows, [true, true, true, true, true]));
  }
  if (view.sandboxes) lines.push("", ...renderSandboxes(view.sandboxes));
  const failures = formatCauses(view.failuresByCause);
  lines.push("", `failed attempts: ${failures || "none"}`);
  const warnings = view.log.filter((l) => l.level === "warn" || l.level === "error").slice(-5);
  for (const l of warnings) lines.push(`[run ${l.level}] ${l.message}`);
  return lines.join("\n");
}

/** A run's sandboxes: the totals, then one row per step (window) with its sandbox seconds. */
export function renderSandboxes(s: NonNullable<RunView["sandboxes"]>): string[] {
  const t = s.total;
  const head = `sandboxes: ${t.alive} alive, ${t.created} created, ${t.destroyed} destroyed, ${t.failed} failed, ${t.seconds.toFixed(1)} sandbox-seconds`;
  const rows = [["step", "created", "alive", "destroyed", "failed", "sandbox s"]];
  const keys = Object.keys(s.byWindow).sort((a, b) => (a === "none" ? 1 : b === "none" ? -1 : Number(a) - Number(b)));
  for (const k of keys) {
    const w = s.byWindow[k]!;
    rows.push([k === "none" ? "-" : String(Number(k) + 1), String(w.created), String(w.alive), String(w.destroyed), String(w.failed), w.seconds.toFixed(1)]);
  }
  return [head, table(rows, [true, true, true, true, true, true])];
}

/** How many in-flight episodes {@link renderInFlight} lists (the oldest); the rest are counted. */
export const IN_FLIGHT_ROWS_SHOWN = 20;

/**
 * The in-flight episodes as a table, oldest dispatch first (like the dashboard's): episode, task, repeat, attempt,
 * state, swarms, age since dispatch, time since the server last saw LLM activity, LLM calls. Empty string for none.
 */
export function renderInFlight(rows: readonly InFlightEpisodeView[], shown = IN_FLIGHT_ROWS_SHOWN): string {
  if (!rows.length) return "";
  const out = [["episode", "task", "repeat", "attempt", "state", "swarms", "age", "since LLM", "LLM calls"]];
  for (const r of rows.slice(0, shown)) {
    out.push([
      r.episodeKey, r.taskId, String(r.repeat), String(r.attempt), r.status, r.swarms.join(",") || "-",
      r.ageSeconds === null ? "-" : formatAge(r.ageSeconds * 1000), r.sinceLastLlmActivity ?? "-", r.llmCalls === null ? "-" : String(r.llmCalls),
    ]);
  }
  const more = rows.length > shown ? `\n… and ${rows.length - shown} more in flight` : "";
  return `${table(out, [false, false, true, true, false, false, true, true, true])}${more}`;
}
