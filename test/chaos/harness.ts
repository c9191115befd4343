/**
 * @module test/chaos/harness — the chaos suite's real stack: the emulator in its own process (`ajet-edge emulator`
 * with `--fault` flags and a `--journal` file, so a kill loses nothing of what the server did), the Worker in local
 * workerd (the project's Worker plus the chaos functions, test/chaos/worker.ts), runs created through the runs
 * API. After each run the emulator's journal (the server's truth) is compared with the run's ledger
 * (`GET /runs/:id/episodes`) and the server's buffer, giving one row: episodes, lost, doubled, left claimed,
 * stranded, re-run, the run's verdict and wall time. Beside them runs the local sandbox server in its own process
 * (the Worker's vars name it); a scenario with sandboxes also gets: sandboxes made, sandboxes still alive 60 s after
 * the run finished (every attempt over by then), and sandbox failures that reached the server as rewards.
 */
import { fileURLToPath } from "node:url";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { SwarmClient } from "../../src/client/index.ts";
import { parseDevArgs } from "../../src/cli/dev/options.ts";
import { buildDevPlan, runSpecFor, type DevPlan } from "../../src/cli/dev/plan.ts";
import { runsApi, waitForRun, type EndedEpisodeView, type RunsApi, type RunView } from "../../src/cli/dev/runs-api.ts";
import { startLocalWorker, type LocalWorker } from "../../src/cli/dev/worker.ts";
import { sandboxIdFor } from "../../src/port/sandbox.ts";
import { listLocalSandboxes } from "../../src/sandbox/local-backend.ts";
import { markedProcesses } from "../../src/sandbox/local-server/processes.ts";
import { spawnSandboxServer, type SandboxServerProcess } from "../../src/sandbox/local-server/spawn.ts";
import { SANDBOX_FAILURE_REWARD } from "./functions.ts";
import { startChaosDatasetHost, type ChaosDatasetHost, type DatasetHostMode } from "./dataset-host.ts";
import { CAPS, postRunsBoundSeconds } from "../../src/edge/ground/caps.ts";
import { parseJournal, type JournalEvent } from "../../src/emulator/index.ts";
import { AgentJetJob } from "../../src/job/index.ts";
import type { RunSpecInput } from "../../src/scheduler/index.ts";

/** The repository root (the chaos suite runs the CLI and its own wrangler.toml from here). */
const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));

const SILENT = { info: () => {}, warn: () => {}, error: () => {} };

// ---- the emulator process ------------------------------------------------------------------------------------------

/** An emulator in its own process. */
export interface EmulatorProcess {
  url: string;
  port: number;
  child: ChildProcess;
  /** SIGKILL (a crash); resolves once it exited */
  kill(): Promise<void>;
  /** SIGTERM and wait */
  stop(): Promise<void>;
}

/** Options of {@link spawnEmulator}. */
export interface SpawnEmulatorOptions {
  /** 0 = any free port (a restart passes the old one) */
  port?: number;
  faults?: string[];
  journalFile: string;
  answerKeyFile: string;
  seed?: number;
  profile?: "dev" | "fast" | "real";
  /** hold every LLM call this long, ms (`--llm-latency-ms`) */
  llmLatencyMs?: number;
}

/** Spawns `node bin/ajet-edge.mjs emulator …` and waits for its ready line. @throws when it exits first */
export async function spawnEmulator(o: SpawnEmulatorOptions): Promise<EmulatorProcess> {
  const args = ["bin/ajet-edge.mjs", "emulator", "--port", String(o.port ?? 0), "--profile", o.profile ?? "dev", "--seed", String(o.seed ?? 1), "--answer-key", o.answerKeyFile, "--journal", o.journalFile];
  for (const f of o.faults ?? []) args.push("--fault", f);
  if (o.llmLatencyMs !== undefined) args.push("--llm-latency-ms", String(o.llmLatencyMs));
  const child = spawn(process.execPath, args, { cwd: PROJECT_ROOT, stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const errors: string[] = [];
  createInterface({ input: child.stderr! }).on("line", (l) => errors.push(l));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const m = /ready at (http:\/\/\S+)/.exec(line);
      if (m) resolve(m[1]!);
    });
    void exited.then(() => reject(new Error(`the emulator exited before it was ready: ${errors.slice(-3).join(" | ")}`)));
  });
  const port = Number(new URL(url).port);
  const signal = async (sig: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(sig);
    await exited;
  };
  return { url, port, child, kill: () => signal("SIGKILL"), stop: () => signal("SIGTERM") };
}

/** Syncs the job and starts the engine (as a trainer would); resolves once ROLLING. */
export async function bootEngine(url: string, job: DevPlan["job"]): Promise<void> {
  const client = new SwarmClient({ baseURL: url, logger: SILENT });
  await client.autoSyncTrainConfigAndStartEngine(new AgentJetJob(job));
}

// ---- the row ---------------------------------------------------------------------------------------------------------

/** One row of the chaos table. */
export interface ChaosRow {
  scenario: string;
  /** rewards the server accepted from this run (journal ends of its client) */
  episodes: number;
  /** in the run's ledger, but the server never accepted them */
  lost: number;
  /** a server episode accepted twice, a repeat counted twice in the ledger, or an accepted reward the run does not count */
  doubled: number;
  /** this run's claims still held on the server after the run finished */
  leftClaimed: number;
  /** accepted rewards in a batch the server never trained (no WEIGHT_SYNCING of their run and global step) */
  stranded: number;
  /** repeats that needed more than one attempt */
  rerun: number;
  /** the run's own verdict: phase/stopReason, and ok when it matches the server's truth */
  verdict: string;
  /** rewards the run(s) planned: maxSteps × batchSize × numRepeat each (null when the spec has no maxSteps) */
  planned?: number | null;
  /** one batch's worth of rewards (batchSize × numRepeat): the bound on top-ups per run */
  batchRewards?: number;
  /** the run's longest step (window) wall time, seconds (the stall rows' measure); null when it reported none */
  longestStepSeconds?: number | null;
  /** batches the server trained during the scenario (distinct global steps with a WEIGHT_SYNCING in the journal) */
  serverSteps?: number;
  wallSeconds: number;
  /** what the scenario did and anything odd */
  notes: string[];
  /**
   * a scenario with sandboxes: made (the run's count), alive 60 s after the run finished, seen alive more than 60 s
   * after their own attempt was over (sampled every second; an attempt never reported counts as over when the run
   * finished) and the longest such overstay in seconds, failures posted as rewards
   */
  sandboxes?: { created: number; failed: number; aliveAfter60s: number; clearedAfterS: number | null; pastAttempt60s: number; maxPastAttemptS: number; infraAsReward: number };
  /** a scenario with `keepFacts`: the journal, and per run (first Worker's, in creation order) its view and client uuid */
  facts?: { events: JournalEvent[]; runs: { runId: string; view: RunView | null; clientUuid: string | null }[] };
}

/**
 * What the server did, from the journal, for one client. Each event is placed in its emulator process (`boot`
 * lines) and engine run: a batch trained when a `WEIGHT_SYNCING` with its global step followed in the same process
 * and engine run. Accepted ends in a batch of an engine run that ended untrained (engine stopped, process killed)
 * were wiped; those in the last engine run's untrained batch are stranded.
 */
export function serverTruth(events: readonly JournalEvent[], clientUuid: string) {
  let boot = 0;
  const ends: Array<Extract<JournalEvent, { ev: "end" }> & { at: string }> = [];
  const trained = new Set<string>();
  let last = "";
  for (const e of events) {
    if (e.ev === "boot") boot++;
    if (e.ev === "status" && e.to === "ENGINE.WEIGHT_SYNCING" && e.globalStep !== null) trained.add(`${boot}:${e.run}:${e.globalStep}`);
    if (e.ev === "status" && e.run > 0) last = `${boot}:${e.run}`;
    if (e.ev === "end" && e.clientUuid === clientUuid) ends.push({ ...e, at: `${boot}:${e.run}` });
  }
  const untrained = ends.filter((e) => !e.dropped && !trained.has(`${e.at}:${e.globalStep}`));
  return { ends, trained, wiped: untrained.filter((e) => e.at !== last), stranded: untrained.filter((e) => e.at === last) };
}

/**
 * Compares the journal with the ledger and the final buffer. The run's client uuid is read from the journal's claim
 * of the ledger's first episode (the API does not show it); a run with an empty ledger matches by `clientUuid`.
 */
export function compare(input: {
  scenario: string;
  events: readonly JournalEvent[];
  ledger: readonly EndedEpisodeView[];
  buffer: ReadonlyArray<{ episode_uuid: string; episode_status: string; client_uuid: string }>;
  view: RunView | null;
  clientUuid: string | null;
  wallMs: number;
  notes?: string[];
}): ChaosRow {
  const notes = [...(input.notes ?? [])];
  const client = input.clientUuid ?? "";
  const faults = new Map<string, number>();
  for (const e of input.events) if (e.ev === "fault") faults.set(e.kind, (faults.get(e.kind) ?? 0) + 1);
  if (faults.size) notes.push(`injected ${[...faults].map(([k, n]) => `${n} × ${k}`).join(", ")}`);
  const { ends, wiped, stranded: strandedEnds } = serverTruth(input.events, client);
  if (wiped.length) {
    const said = (input.view as { batches?: { episodesWiped?: number } } | null)?.batches?.episodesWiped;
    notes.push(`${wiped.length} accepted reward(s) wiped by the server (engine restart), the run counts ${said ?? "?"} wiped`);
  }
  const accepted = new Map<string, number>();
  for (const e of ends) accepted.set(e.episodeUuid, (accepted.get(e.episodeUuid) ?? 0) + 1);
  const ledgerUuids = new Set(input.ledger.map((l) => l.episodeUuid));
  const lost = input.ledger.filter((l) => !accepted.has(l.episodeUuid)).length;
  const twiceOnServer = [...accepted.values()].filter((n) => n > 1).length;
  const keyCounts = new Map<string, number>();
  // a wiped row (its batch was wiped before training; the repeat ran again) is not live: one live row per key and swarm
  for (const l of input.ledger) if (!l.wipedBy) keyCounts.set(`${l.episodeKey}/${l.swarm}`, (keyCounts.get(`${l.episodeKey}/${l.swarm}`) ?? 0) + 1);
  const twiceInLedger = [...keyCounts.values()].filter((n) => n > 1).length;
  const uncounted = [...accepted.keys()].filter((u) => !ledgerUuids.has(u)).length;
  if (uncounted) notes.push(`${uncounted} accepted reward(s) not in the run's ledger`);
  const leftClaimed = input.buffer.filter((r) => r.episode_status === "claimed" && r.client_uuid === client).length;
  const stranded = strandedEnds.length;
  const rerun = input.ledger.filter((l) => l.attempt > 1).length;
  const v = input.view;
  const phase = v ? `${v.phase}/${v.stopReason ?? "-"}` : "no status";
  const clean = lost === 0 && twiceOnServer + twiceInLedger + uncounted === 0 && leftClaimed === 0 && stranded === 0;
  const saysDone = v?.phase === "finished" && (v.stopReason === "maxSteps" || v.stopReason === "epochsDone");
  // a finished run's untrained rewards are the ones the server left untrained (a stop during a sync counts it trained)
  const untrained = v?.phase === "finished" ? v.batches?.episodesUntrained : undefined;
  const untrainedMatches = typeof untrained !== "number" || untrained === stranded;
  if (!untrainedMatches) notes.push(`the run says ${untrained} reward(s) untrained, the journal ${stranded}`);
  // the verdict matches the truth when a clean run says done, or a run that says it failed/stopped is not claiming success
  const verdict = `${phase} ${(saysDone === clean || !saysDone) && untrainedMatches ? "ok" : "MISMATCH"}`;
  const stepMs = (v?.steps ?? []).map((s) => s.wallTimeMs).filter((ms): ms is number => typeof ms === "number");
  return {
    scenario: input.scenario,
    longestStepSeconds: stepMs.length ? Math.round(Math.max(...stepMs) / 100) / 10 : null,
    episodes: ends.length,
    lost,
    doubled: twiceOnServer + twiceInLedger + uncounted,
    leftClaimed,
    stranded,
    rerun,
    verdict,
    wallSeconds: Math.round(input.wallMs / 100) / 10,
    notes,
  };
}

/** The table, one line per row, fixed columns. */
export function formatTable(rows: readonly ChaosRow[]): string {
  const withSandboxes = rows.some((r) => r.sandboxes);
  const head = ["scenario", "episodes", "planned", "server steps", "lost", "doubled", "left claimed", "stranded", "re-run", "run verdict", "longest step s", "wall s", ...(withSandboxes ? ["sandboxes", "failed", "alive @60s", "past attempt+60s", "max s past attempt", "infra→reward"] : [])];
  const sandboxCells = (r: ChaosRow) =>
    withSandboxes
      ? r.sandboxes
        ? [r.sandboxes.created, r.sandboxes.failed, r.sandboxes.aliveAfter60s, r.sandboxes.pastAttempt60s, r.sandboxes.maxPastAttemptS, r.sandboxes.infraAsReward]
        : ["-", "-", "-", "-", "-", "-"]
      : [];
  const cells = rows.map((r) => [r.scenario, r.episodes, r.planned ?? "-", r.serverSteps ?? "-", r.lost, r.doubled, r.leftClaimed, r.stranded, r.rerun, r.verdict, r.longestStepSeconds ?? "-", r.wallSeconds, ...sandboxCells(r)].map(String));
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(widths[i]!)).join("  ");
  const notes = rows.filter((r) => r.notes.length).map((r) => `  ${r.scenario}: ${r.notes.join("; ")}`);
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...cells.map(line), ...(notes.length ? ["notes:", ...notes] : [])].join("\n");
}

// ---- the stack -------------------------------------------------------------------------------------------------------

/**
 * The chaos Workers in local workerd. Their configs are the project's wrangler.toml and wrangler.episode.toml (every
 * binding and migration as the product has them) with `main` pointed at test/chaos/worker.ts and
 * test/chaos/episode-worker.ts, written next to them (git-ignored) for each start.
 */
export function startChaosWorker(persistDir?: string, vars?: Record<string, string>, configName = ".wrangler.chaos.toml"): Promise<LocalWorker> {
  // each Worker pair its own script names, so a second workerd's episode Worker never binds to the first's objects
  const name = `ajet-edge-chaos${/chaos(.*)\.toml$/.exec(configName)?.[1] ?? ""}`;
  const config = readFileSync(join(PROJECT_ROOT, "wrangler.toml"), "utf8").replace(/^main = .*$/m, 'main = "worker.ts"').replace(/^name = .*$/m, `name = "${name}"`);
  // each Worker its own config file: wrangler restarts a Worker whose config file is written again
  const configPath = join(PROJECT_ROOT, "test/chaos", configName);
  writeFileSync(configPath, config);
  const episodeConfig = readFileSync(join(PROJECT_ROOT, "wrangler.episode.toml"), "utf8")
    .replace(/^main = .*$/m, 'main = "episode-worker.ts"')
    .replace(/^name = .*$/m, `name = "${name}-episode"`)
    .replace(/^script_name = .*$/gm, `script_name = "${name}"`);
  const episodeConfigPath = join(PROJECT_ROOT, "test/chaos", configName.replace(/\.toml$/, ".episode.toml"));
  writeFileSync(episodeConfigPath, episodeConfig);
  // CHAOS_WORKER_LOG=1: the Workers' warnings and errors on stderr (a row to debug)
  const onLog = process.env["CHAOS_WORKER_LOG"] ? { onLog: (line: string) => void process.stderr.write(`worker: ${line}\n`) } : {};
  return startLocalWorker({ configPath, episodeConfigPath, ...(persistDir ? { persistDir } : {}), ...(vars ? { vars } : {}), ...onLog });
}

/** What a scenario may do while its run runs. */
export interface ScenarioContext {
  emulator: EmulatorProcess;
  worker: LocalWorker;
  api: RunsApi;
  runId: string;
  /** every run of the scenario on this Worker, the first (`runId`) first */
  runIds: readonly string[];
  plan: DevPlan;
  spec: Parameters<RunsApi["create"]>[0];
  /** replaces the emulator process (after a kill): same port and journal */
  respawnEmulator(): Promise<EmulatorProcess>;
  /** replaces the Worker (after a kill): same persisted state; the API moves to the new URL */
  respawnWorker(): Promise<LocalWorker>;
  note(text: string): void;
  /** the local sandbox server (its own process) */
  sandboxServer: SandboxServerProcess;
  /** replaces the sandbox server (after a kill): same port, token and root, so it reaps what the killed one left */
  respawnSandboxServer(): Promise<SandboxServerProcess>;
  /** the server's journal so far (the emulator writes each event as it happens) */
  journal(): JournalEvent[];
  /** the run's dataset host ({@link Scenario.datasetHost}), null when the run's dataset is inline */
  datasetHost: ChaosDatasetHost | null;
  /** resolves once the run's ledger has at least `n` episodes (or the run finished) */
  untilEnded(n: number, timeoutMs?: number): Promise<void>;
  /** polls the run's status (every 250 ms) until `check` holds; false when it did not within `timeoutMs` */
  until(check: (view: RunView) => boolean, timeoutMs?: number): Promise<boolean>;
}

/** One scenario: emulator faults, the function, run overrides, and what to do while the run runs. */
export interface Scenario {
  name: string;
  faults?: string[];
  /** ajet-edge dev arguments (function, steps, batch size …) */
  argv?: string[];
  /** run spec fields on top of the plan's */
  spec?: Partial<RunSpecInput> & Record<string, unknown>;
  /** the rollout function (a chaos function of test/chaos/functions.ts, say); default the plan's countdown */
  function?: string;
  /** extra runs on the same emulator and dataset, interleaved with the first */
  alsoRuns?: number;
  /** run spec fields of the extra runs over the first's (their `job` merged over its job): runs of another kind sharing the server */
  alsoRunsSpec?: Partial<RunSpecInput> & Record<string, unknown>;
  /**
   * runs on a second Worker (its own workerd and storage: its swarm server object does not see this Worker's runs, only
   * the pool information shows them) on the same emulator and dataset, interleaved with the first
   */
  otherWorkerRuns?: number;
  /** a fault that lasts this long (s): the longest step may exceed the stall bound by it ({@link stallBoundSeconds}) */
  faultWindowS?: number;
  /** the row's longest step is held to {@link stallBoundSeconds} */
  stallBound?: boolean;
  /** the scenario's episodes use sandboxes: the row counts them and checks none is left */
  sandboxes?: boolean;
  /** share of sandbox creates the sandbox server refuses during this scenario */
  sandboxCreateFailRate?: number;
  /**
   * the run's dataset is served by a misbehaving host on 127.0.0.1 (test/chaos/dataset-host): the row then also
   * holds `POST /runs` to {@link datasetHostBounds}, and the run's start (or failure) too
   */
  datasetHost?: DatasetHostMode;
  during?(ctx: ScenarioContext): Promise<void>;
  /**
   * after the run, with the server's whole journal and the run's client uuid: notes on what the journal shows (a note
   * starting `UNEXPECTED: ` makes the row dirty)
   */
  after?(events: readonly JournalEvent[], clientUuid: string | null, note: (text: string) => void, view: RunView | null): void;
  timeoutMs?: number;
  /** the (first) run is stopped on request: its verdict is finished/stopRequested, the interleaved runs' finished/maxSteps */
  stops?: boolean;
  /** AgentJetJob options over the plan's (the engine is booted with them and every run's spec carries them) */
  job?: Record<string, unknown>;
  /** the row keeps what it was computed from ({@link ChaosRow.facts}), for a test's own checks against the journal */
  keepFacts?: boolean;
  /** every LLM call of the emulator takes this long, ms (its `--llm-latency-ms`) */
  llmLatencyMs?: number;
  /** more vars of both Workers for this scenario (e.g. `AJET_CONSUMER_WALL_SECONDS`): the Worker is restarted with them, on the same state */
  workerVars?: Record<string, string>;
}

/**
 * Whether a row keeps the bound of runs sharing a server (issue 25): accepted rewards ≤ planned + one batch per run.
 * True for a row without a plan.
 */
export function withinPlan(row: ChaosRow, runs: number): boolean {
  return row.planned == null || row.episodes <= row.planned + (row.batchRewards ?? 0) * runs;
}

/**
 * The janitor period (s) the stall bound is stated against: the real server's (10 s; the dev emulator's is 1 s, and a
 * step of the chaos rows alone takes several seconds on a loaded 2-core machine, so 3 × 1 s cannot tell a stall).
 */
export const STALL_JANITOR_S = 10;

/** The longest step a fault row may take (s): its fault window plus 3 janitor periods (never the report lease, ≥ 661 s). */
export function stallBoundSeconds(s: Pick<Scenario, "faultWindowS">): number {
  return (s.faultWindowS ?? 0) + 3 * STALL_JANITOR_S;
}

/**
 * The bounds of a dataset-host row, seconds (caps at their defaults, +10 s for a loaded 2-core machine): `POST /runs`
 * answers within the caps' bound (edge/ground/caps `postRunsBoundSeconds`); a run in the background pass starts or
 * fails within `startS` of that answer (a stalled host: the first-byte and idle timeouts; a trickling one: its file at
 * 32 B/s, + 60 s); a changed dataset fails the run within `failS` of the swap (three confirmations after the
 * dispatch back-off, as test/e2e/changed-dataset).
 */
export function datasetHostBounds(fileBytes: number): { postS: number; startS: number; failS: number } {
  const postS = postRunsBoundSeconds({ firstByteSeconds: CAPS.firstByteSeconds.default, inlineIndexSeconds: CAPS.inlineIndexSeconds.default }, 1) + 10;
  const stalledS = CAPS.firstByteSeconds.default * 2 + CAPS.idleSeconds.default + 30;
  return { postS, startS: Math.max(stalledS, Math.ceil(fileBytes / 32) + 60), failS: 150 };
}

/** A note that makes a row dirty (run.ts, the fast test): a bound exceeded or an outcome the row does not allow. */
export const DIRTY_NOTE = /^(BOUND|UNEXPECTED): /;

const DEFAULT_ARGV = ["--function", "countdown", "--steps", "2", "--batch-size", "2", "--num-repeat", "2", "--seed", "3"];

/** Shared state of a chaos session: one Worker (replaced only by a scenario that kills it). */
export class ChaosStack {
  #worker: LocalWorker | null = null;
  /** the extra vars the running Worker was started with (JSON) */
  #workerVars = "{}";
  #otherWorker: LocalWorker | null = null;
  readonly #otherPersistDir = mkdtempSync(join(tmpdir(), "ajet-chaos-do2-"));
  #sandboxServer: SandboxServerProcess | null = null;
  readonly #dir = mkdtempSync(join(tmpdir(), "ajet-chaos-"));
  readonly #persistDir = mkdtempSync(join(tmpdir(), "ajet-chaos-do-"));
  readonly #sandboxRoot = mkdtempSync(join(tmpdir(), "ajet-chaos-sbx-"));
  readonly #sandboxToken = `chaos-sandbox-token-${Date.now()}`;
  /** creates the sandbox server refused on purpose since the last row */
  #injected = 0;
  readonly #onSandboxLog = (line: string) => {
    if (line.includes("(injected fault)")) this.#injected++;
  };

  /** The sandbox server (started before the first Worker: the Worker's vars name it). */
  async sandboxServer(o: { createFailRate?: number; replace?: boolean } = {}): Promise<SandboxServerProcess> {
    if (this.#sandboxServer && !o.replace) return this.#sandboxServer;
    const port = this.#sandboxServer?.port ?? 0;
    await this.#sandboxServer?.stop();
    this.#sandboxServer = await spawnSandboxServer({ port, root: this.#sandboxRoot, token: this.#sandboxToken, onLog: this.#onSandboxLog, ...(o.createFailRate ? { createFailRate: o.createFailRate } : {}) });
    return this.#sandboxServer;
  }

  /** SIGKILLs the sandbox server and starts another on the same port and root (it reaps what the killed one left). */
  async crashSandboxServer(): Promise<SandboxServerProcess> {
    const old = this.#sandboxServer;
    if (old) await old.kill();
    this.#sandboxServer = await spawnSandboxServer({ port: old?.port ?? 0, root: this.#sandboxRoot, token: this.#sandboxToken, onLog: this.#onSandboxLog });
    return this.#sandboxServer;
  }

  /** Processes of any sandbox of this stack's servers still running (by their marker). */
  sandboxProcesses(): number {
    return markedProcesses((m) => m.startsWith("i-") && this.#instances().some((i) => m.startsWith(`${i}/`))).size;
  }

  /** The sandbox ids of the processes counted by {@link sandboxProcesses}. */
  sandboxProcessIds(): string[] {
    const instances = this.#instances();
    const markers = markedProcesses((m) => m.startsWith("i-") && instances.some((i) => m.startsWith(`${i}/`))).values();
    return [...new Set([...markers].map((m) => m.slice(m.indexOf("/") + 1)))];
  }

  #instances(): string[] {
    try {
      return readdirSync(this.#sandboxRoot).filter((n) => n.startsWith("i-"));
    } catch {
      return [];
    }
  }

  /** The Worker with `vars` on top of the sandbox server's (restarted on the same state when the last had others). */
  async worker(vars: Record<string, string> = {}): Promise<LocalWorker> {
    const sbx = await this.sandboxServer();
    const key = JSON.stringify(vars);
    if (this.#worker && this.#workerVars !== key) {
      await this.#worker.dispose();
      this.#worker = null;
    }
    this.#workerVars = key;
    this.#worker ??= await startChaosWorker(this.#persistDir, { AJET_SANDBOX_URL: sbx.url, AJET_SANDBOX_TOKEN: sbx.token, ...vars });
    return this.#worker;
  }

  /** A second Worker (own workerd, own storage), started on first use. */
  async otherWorker(): Promise<LocalWorker> {
    const sbx = await this.sandboxServer();
    this.#otherWorker ??= await startChaosWorker(this.#otherPersistDir, { AJET_SANDBOX_URL: sbx.url, AJET_SANDBOX_TOKEN: sbx.token }, ".wrangler.chaos-2.toml");
    return this.#otherWorker;
  }

  /** Runs one scenario on a fresh emulator process; never throws (a failure becomes the row's verdict). */
  async run(s: Scenario): Promise<ChaosRow> {
    const started = Date.now();
    const notes: string[] = [];
    const options = parseDevArgs([...(s.argv ?? DEFAULT_ARGV)]);
    if (!options) throw new Error("--help is not a scenario");
    const plan = await buildDevPlan(options);
    const tag = `${s.name}-${started}`;
    const journalFile = join(this.#dir, `${tag}.journal.jsonl`);
    const answerKeyFile = join(this.#dir, `${tag}.answers.jsonl`);
    writeFileSync(journalFile, "");
    writeFileSync(answerKeyFile, plan.answerKey.map((r) => JSON.stringify(r)).join("\n") + "\n");
    const latency = s.llmLatencyMs !== undefined ? { llmLatencyMs: s.llmLatencyMs } : {};
    let emulator = await spawnEmulator({ faults: s.faults ?? [], journalFile, answerKeyFile, seed: plan.seed, ...latency });
    if (s.sandboxCreateFailRate) await this.sandboxServer({ createFailRate: s.sandboxCreateFailRate, replace: true });
    const sampler = s.sandboxes ? new SandboxSampler(() => this.#sandboxServer, () => this.sandboxProcessIds()) : null;
    let finishedAt = 0;
    const runIds: string[] = [];
    /** the runs on the second Worker, after those of `runIds` in the rows */
    const otherIds: string[] = [];
    let otherApi: RunsApi | null = null;
    let restarts = 0;
    let view: RunView | null = null;
    let api: RunsApi | null = null;
    const host = s.datasetHost ? await startChaosDatasetHost(s.datasetHost) : null;
    try {
      if (s.job) Object.assign(plan.job, s.job);
      await bootEngine(emulator.url, plan.job);
      let worker = await this.worker(s.workerVars);
      api = runsApi(worker.url, fetch, { token: worker.token });
      const spec = { ...runSpecFor(plan, [{ name: plan.swarmNames[0] ?? "default", url: emulator.url }]), ...(s.spec ?? {}), ...(s.function ? { function: s.function } : {}) } as Parameters<RunsApi["create"]>[0];
      if (s.job) spec.job = { ...(spec.job ?? {}), ...s.job };
      if (host) {
        spec.datasets = [{ name: plan.datasets[0]?.entry.name ?? "countdown", kind: "countdown", url: host.url }] as typeof spec.datasets;
        const created = await createBounded(api, spec, host, notes);
        if (created) runIds.push(created);
      } else {
        const also = s.alsoRunsSpec ? ({ ...spec, ...s.alsoRunsSpec, job: { ...(spec.job ?? {}), ...((s.alsoRunsSpec.job as Record<string, unknown> | undefined) ?? {}) } } as typeof spec) : spec;
        for (let i = 0; i <= (s.alsoRuns ?? 0); i++) runIds.push((await api.create(i === 0 ? spec : also)).runId);
      }
      if (s.otherWorkerRuns) {
        const other = await this.otherWorker();
        otherApi = runsApi(other.url, fetch, { token: other.token });
        for (let i = 0; i < s.otherWorkerRuns; i++) otherIds.push((await otherApi.create(spec)).runId);
      }
      const runId = runIds[0]!;
      const ctx: ScenarioContext = {
        emulator,
        worker,
        api,
        runId,
        runIds,
        plan,
        spec,
        respawnEmulator: async () => {
          // a new seed: a real server makes uuid4 ids, a restart never hands out the old ones again
          emulator = await spawnEmulator({ port: emulator.port, faults: s.faults ?? [], journalFile, answerKeyFile, seed: plan.seed + 1000 + ++restarts, ...latency });
          ctx.emulator = emulator;
          return emulator;
        },
        respawnWorker: async () => {
          await worker.dispose();
          this.#worker = null;
          worker = await this.worker(s.workerVars);
          api = runsApi(worker.url, fetch, { token: worker.token });
          ctx.api = api;
          ctx.worker = worker;
          return worker;
        },
        sandboxServer: await this.sandboxServer(),
        journal: () => parseJournal(readFileSync(journalFile, "utf8")),
        datasetHost: host,
        respawnSandboxServer: async () => {
          ctx.sandboxServer = await this.crashSandboxServer();
          return ctx.sandboxServer;
        },
        note: (t) => notes.push(t),
        until: async (check, timeoutMs = 60_000) => {
          const end = Date.now() + timeoutMs;
          while (Date.now() < end) {
            const v = await ctx.api.get(runId).catch(() => null);
            if (v && check(v)) return true;
            await new Promise((r) => setTimeout(r, 250));
          }
          return false;
        },
        untilEnded: async (n, timeoutMs = 60_000) => {
          const until = Date.now() + timeoutMs;
          while (Date.now() < until) {
            const v = await ctx.api.get(runId).catch(() => null);
            if (!v || v.phase === "finished" || v.totals.episodesEnded >= n) return;
            await new Promise((r) => setTimeout(r, 250));
          }
        },
      };
      await s.during?.(ctx);
      const timeoutMs = s.timeoutMs ?? 120_000;
      for (const id of runIds) {
        const { outcome, status } = await waitForRun(api, id, { timeoutMs });
        if (id === runId) view = status;
        if (outcome !== "finished") notes.push(`run ${id === runId ? "" : "(interleaved) "}did not finish in ${timeoutMs / 1000} s: ${outcome}`);
      }
      for (const id of otherIds) {
        const { outcome } = await waitForRun(otherApi!, id, { timeoutMs });
        if (outcome !== "finished") notes.push(`run (other Worker) did not finish in ${timeoutMs / 1000} s: ${outcome}`);
      }
      finishedAt = Date.now();
      if (host && view) checkDatasetHostOutcome(s.datasetHost!, host, view, finishedAt, notes);
      // a moment for the finish sweep and the janitor-free releases to land
      await new Promise((r) => setTimeout(r, 500));
    } catch (err) {
      notes.push(`harness: ${err instanceof Error ? err.message : String(err)}`);
    }
    const rows: ChaosRow[] = [];
    const sandboxes = sampler ? await this.#sandboxFacts(finishedAt || Date.now(), api, runIds[0], journalFile, notes, sampler).finally(() => sampler.stop()) : undefined;
    if (s.sandboxCreateFailRate) await this.sandboxServer({ replace: true }).catch((err: unknown) => notes.push(`sandbox server restart: ${String(err)}`));
    await host?.close();
    const events = parseJournal(readFileSync(journalFile, "utf8"));
    const buffer = await new SwarmClient({ baseURL: emulator.url, logger: SILENT }).getEpisodeBuffer().catch(() => []);
    const all = [...runIds.map((id) => ({ id, via: api })), ...otherIds.map((id) => ({ id, via: otherApi }))];
    const facts: NonNullable<ChaosRow["facts"]> = { events, runs: [] };
    for (const [i, { id, via }] of all.entries()) {
      const ledger = via ? await via.endedEpisodes(id).catch(() => []) : [];
      const v = i === 0 ? view : await via?.get(id).catch(() => null) ?? null;
      const claimOf = new Map(events.filter((e) => e.ev === "claim").map((e) => [(e as { episodeUuid: string }).episodeUuid, (e as { clientUuid: string }).clientUuid]));
      const clientUuid = ledger.map((l) => claimOf.get(l.episodeUuid)).find(Boolean) ?? null;
      if (!clientUuid) notes.push("no episode of the run reached the server's journal");
      facts.runs.push({ runId: id, view: v, clientUuid });
      if (i === 0) s.after?.(events, clientUuid, (t) => notes.push(t), v);
      rows.push(compare({ scenario: all.length > 1 ? `${s.name}#${i + 1}` : s.name, events, ledger, buffer, view: v, clientUuid, wallMs: Date.now() - started, notes: i === 0 ? notes : [] }));
    }
    // CHAOS_DUMP=<dir>: each row's journal, and every run's view (with its log), ledger and report, as one JSON file
    // (`<row>-<time>.json`), to trace where a row's rewards went (which run topped up which batch, and why)
    if (process.env["CHAOS_DUMP"]) {
      const dump = { journal: readFileSync(journalFile, "utf8"), runs: [] as unknown[] };
      for (const { id, via } of all) dump.runs.push({ id, view: await via?.get(id).catch(() => null), ledger: await via?.endedEpisodes(id).catch(() => []), report: await via?.report(id).catch(() => null) });
      mkdirSync(process.env["CHAOS_DUMP"], { recursive: true });
      writeFileSync(join(process.env["CHAOS_DUMP"], `${tag}-${Date.now()}.json`), JSON.stringify(dump));
    }
    const spec = { ...plan.run, ...(s.spec ?? {}) } as { maxSteps?: number | null };
    const batchRewards = plan.job.batchSize * plan.job.numRepeat;
    const planned = typeof spec.maxSteps === "number" ? spec.maxSteps * batchRewards * Math.max(1, all.length) : null;
    const serverSteps = serverTruth(events, "").trained.size; // distinct (process, engine run, global step) synced
    for (const r of rows) Object.assign(r, { planned: planned === null ? null : planned / Math.max(1, all.length), batchRewards, serverSteps });
    await emulator.stop();
    if (!rows.length) rows.push(compare({ scenario: s.name, events, ledger: [], buffer, view: null, clientUuid: null, wallMs: Date.now() - started, notes }));
    const row = rows.length === 1 ? rows[0]! : mergeRows(rows);
    // a dataset-host run is the emulator's only client: every claim still held is its own (its ledger may be empty)
    if (host) row.leftClaimed = buffer.filter((r) => r.episode_status === "claimed").length;
    if (s.keepFacts) row.facts = facts;
    return sandboxes ? { ...row, sandboxes } : row;
  }

  /**
   * A sandbox scenario's facts: waits (up to 60 s after the run finished, when every attempt is over) for the
   * sandbox server to hold no sandbox and no sandbox process to run; reads the run's sandbox counts; counts the
   * sandbox failures the server accepted as rewards (the chaos function posts them as a marker reward).
   */
  async #sandboxFacts(
    finishedAtMs: number,
    api: RunsApi | null,
    runId: string | undefined,
    journalFile: string,
    notes: string[],
    sampler: SandboxSampler,
  ): Promise<NonNullable<ChaosRow["sandboxes"]>> {
    const server = await this.sandboxServer();
    let alive = -1;
    let clearedAfterS: number | null = null;
    while (Date.now() < finishedAtMs + 60_000) {
      const live = await listLocalSandboxes({ url: server.url, token: server.token }).catch(() => null);
      alive = live === null ? -1 : live.length + this.sandboxProcesses();
      if (alive === 0) {
        clearedAfterS = Math.max(0, Math.round((Date.now() - finishedAtMs) / 100) / 10);
        break;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    if (alive !== 0) notes.push(`${alive} sandbox(es) or sandbox processes still alive 60 s after the run finished`);
    sampler.stop();
    const past = await this.#pastAttempt(runId, finishedAtMs, sampler, notes);
    const view = runId && api ? ((await api.get(runId).catch(() => null)) as { sandboxes?: { total?: { created?: number; failed?: number } } } | null) : null;
    const events = parseJournal(readFileSync(journalFile, "utf8"));
    const infraAsReward = events.filter((e) => e.ev === "end" && e.reward === SANDBOX_FAILURE_REWARD).length;
    if (this.#injected) notes.push(`the sandbox server refused ${this.#injected} create(s) (injected)`);
    this.#injected = 0;
    return { created: view?.sandboxes?.total?.created ?? -1, failed: view?.sandboxes?.total?.failed ?? -1, aliveAfter60s: alive, clearedAfterS, ...past, infraAsReward };
  }

  /**
   * How long each sampled sandbox outlived its own attempt: the attempt is over when the run recorded it (its
   * `atMs` in GET /runs/:id/attempts, the sandbox id derived from it as the consumer does); a sandbox of no recorded
   * attempt counts from the run's finish (noted).
   */
  async #pastAttempt(runId: string | undefined, finishedAtMs: number, sampler: SandboxSampler, notes: string[]): Promise<{ pastAttempt60s: number; maxPastAttemptS: number }> {
    const worker = this.#worker;
    const attempts =
      runId && worker
        ? await fetch(`${worker.url}/runs/${encodeURIComponent(runId)}/attempts?limit=10000`, { headers: { authorization: `Bearer ${worker.token}` } })
            .then(async (r) => ((await r.json()) as { attempts?: Array<{ episodeKey: string; attempt: number; atMs: number }> }).attempts ?? [])
            .catch(() => [])
        : [];
    const overAt = new Map(attempts.map((a) => [sandboxIdFor(runId ?? "", a.episodeKey, a.attempt), a.atMs]));
    let pastAttempt60s = 0;
    let maxPastAttemptS = 0;
    let unrecorded = 0;
    for (const [id, seen] of sampler.seen) {
      const over = overAt.get(id);
      if (over === undefined) unrecorded++;
      const pastS = Math.max(0, (seen.lastMs - (over ?? finishedAtMs)) / 1000);
      maxPastAttemptS = Math.max(maxPastAttemptS, Math.round(pastS * 10) / 10);
      if (pastS > 60) pastAttempt60s++;
    }
    notes.push(`${sampler.seen.size} sandbox(es) seen alive by the sampler${unrecorded ? `, ${unrecorded} of no recorded attempt (counted from the run's finish)` : ", each matched to its attempt"}`);
    return { pastAttempt60s, maxPastAttemptS };
  }

  async close(): Promise<void> {
    await this.#worker?.dispose();
    await this.#otherWorker?.dispose();
    await this.#sandboxServer?.stop();
    rmSync(this.#dir, { recursive: true, force: true });
    rmSync(this.#persistDir, { recursive: true, force: true });
    rmSync(this.#otherPersistDir, { recursive: true, force: true });
    rmSync(this.#sandboxRoot, { recursive: true, force: true });
  }
}

/**
 * Samples the stack's live sandboxes every second, from the server's listing and from the processes carrying a
 * sandbox marker (a killed server's sandboxes live on as processes until the next server reaps them): when each
 * sandbox id was first and last seen alive, epoch ms.
 */
class SandboxSampler {
  readonly seen = new Map<string, { firstMs: number; lastMs: number }>();
  readonly #timer: ReturnType<typeof setInterval>;
  #busy = false;

  constructor(server: () => SandboxServerProcess | null, processIds: () => string[]) {
    this.#timer = setInterval(() => {
      if (this.#busy) return;
      this.#busy = true;
      this.#sample(server(), processIds).finally(() => {
        this.#busy = false;
      });
    }, 1_000);
  }

  async #sample(server: SandboxServerProcess | null, processIds: () => string[]): Promise<void> {
    const listed = server ? await listLocalSandboxes({ url: server.url, token: server.token }).catch(() => []) : [];
    const now = Date.now();
    for (const id of [...listed.map((b) => b.id), ...processIds()]) {
      const e = this.seen.get(id);
      if (e) e.lastMs = now;
      else this.seen.set(id, { firstMs: now, lastMs: now });
    }
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/**
 * `POST /runs` of a dataset-host row, timed against {@link datasetHostBounds}: a refusal (4xx) is an allowed outcome
 * (noted, no run); a run in the background pass (`indexing`) is polled until it leaves it, timed too.
 * @returns the run id, or null when refused
 */
async function createBounded(api: RunsApi, spec: Parameters<RunsApi["create"]>[0], host: ChaosDatasetHost, notes: string[]): Promise<string | null> {
  const bounds = datasetHostBounds(host.bytes);
  const t0 = Date.now();
  const created = await api.create(spec).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
  const answerS = Math.round((Date.now() - t0) / 100) / 10;
  if (answerS > bounds.postS) notes.push(`BOUND: POST /runs answered after ${answerS} s, more than its bound ${bounds.postS} s`);
  if (created instanceof Error) {
    notes.push(`POST /runs refused in ${answerS} s (bound ${bounds.postS} s): ${created.message.slice(0, 200)}`);
    if (/\b5\d\d\b/.test(created.message)) notes.push("UNEXPECTED: a 5xx");
    return null;
  }
  notes.push(`POST /runs answered 201 (${created.phase}) in ${answerS} s (bound ${bounds.postS} s)`);
  if (created.phase === "indexing") {
    const t1 = Date.now();
    let v: RunView | null = created;
    while (v?.phase === "indexing" && Date.now() - t1 < (bounds.startS + 30) * 1000) {
      await new Promise((r) => setTimeout(r, 500));
      v = await api.get(created.runId).catch(() => v);
    }
    const leftS = Math.round((Date.now() - t1) / 100) / 10;
    notes.push(`the background pass ended in ${leftS} s (bound ${bounds.startS} s): ${v?.phase === "finished" ? `failed: ${v.failure?.slice(0, 160)}` : `the run started (${v?.phase})`}`);
    if (leftS > bounds.startS) notes.push(`BOUND: the background pass took ${leftS} s, more than its bound ${bounds.startS} s`);
  }
  return created.runId;
}

/** What a dataset-host row's run must have done: a changed dataset fails it naming the dataset, within its bound. */
function checkDatasetHostOutcome(mode: DatasetHostMode, host: ChaosDatasetHost, view: RunView, finishedAt: number, notes: string[]): void {
  if (mode !== "changed") return;
  const bounds = datasetHostBounds(host.bytes);
  if (host.replacedAt === null) return void notes.push("UNEXPECTED: the dataset was never replaced (the run ended first)");
  const failS = Math.round((finishedAt - host.replacedAt) / 100) / 10;
  notes.push(`replaced mid-run; the run ended ${failS} s later (bound ${bounds.failS} s): ${view.stopReason} — ${view.failure?.slice(0, 160) ?? "no failure"}`);
  if (view.stopReason !== "failed" || !/dataset "[^"]+" changed during the run/.test(view.failure ?? "")) notes.push("UNEXPECTED: the run did not fail naming the changed dataset");
  if (failS > bounds.failS) notes.push(`BOUND: the run failed ${failS} s after the swap, more than its bound ${bounds.failS} s`);
}

/** Several runs of one scenario as one row: sums, the worst verdict. */
function mergeRows(rows: readonly ChaosRow[]): ChaosRow {
  const sum = (k: "episodes" | "lost" | "doubled" | "leftClaimed" | "stranded" | "rerun") => rows.reduce((a, r) => a + r[k], 0);
  return {
    scenario: rows[0]!.scenario.replace(/#1$/, ` (${rows.length} runs)`),
    episodes: sum("episodes"),
    lost: sum("lost"),
    doubled: sum("doubled"),
    leftClaimed: sum("leftClaimed"),
    stranded: sum("stranded"),
    rerun: sum("rerun"),
    verdict: rows.map((r) => r.verdict).join(" | "),
    planned: rows.some((r) => r.planned == null) ? null : rows.reduce((a, r) => a + (r.planned ?? 0), 0),
    batchRewards: rows[0]!.batchRewards ?? 0,
    serverSteps: rows[0]!.serverSteps ?? 0,
    longestStepSeconds: Math.max(0, ...rows.map((r) => r.longestStepSeconds ?? 0)),
    wallSeconds: Math.max(...rows.map((r) => r.wallSeconds)),
    notes: rows.flatMap((r) => r.notes),
  };
}
