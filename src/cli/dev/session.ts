/**
 * @module cli/dev/session — everything a dev run needs running, started in parallel and stopped together: the
 * swarm servers (local emulators on random ports, profile `dev`, with the run's answer key, their engines OFFLINE —
 * or the servers given on the command line) and the Worker in local workerd. The session starts no engine: the
 * Worker does, as it does deployed (its SwarmServer object syncs the run's job and starts an OFFLINE engine; the run
 * spec's `engine.start: "never"` — `--no-start-engine` — leaves that to someone else). A run with a `sandbox` block
 * also gets the local sandbox server, in a process of its own, started before the Worker (whose vars name it:
 * `AJET_SANDBOX_URL`, `AJET_SANDBOX_TOKEN`) and stopped after it (every sandbox destroyed). Used by `ajet-edge dev`
 * and by the end-to-end tests.
 */
import { SwarmClient } from "../../client/index.ts";
import { startEmulator, type RunningEmulator } from "../../emulator/index.ts";
import type { RunRequestInput } from "../../edge/api/run-request.ts";
import { AgentJetJob } from "../../job/index.ts";
import { runSpecFor, type DevPlan } from "./plan.ts";
import { DEV_ALLOWED_HOSTS, startLocalWorker, type LocalWorker, type WorkerLogLevel } from "./worker.ts";
import { spawnSandboxServer, type SandboxServerProcess } from "../../sandbox/local-server/spawn.ts";
import { checkSwarms } from "./preflight.ts";

/** One swarm server of the session; `emulator` is set when the session started it. */
export interface SessionSwarm {
  name: string;
  url: string;
  emulator: RunningEmulator | null;
}

/** A running dev session. */
export interface DevSession {
  worker: LocalWorker;
  /** the local sandbox server, when the run has sandboxes */
  sandboxServer: SandboxServerProcess | null;
  swarms: SessionSwarm[];
  /** the `POST /runs` body for this session's servers */
  spec: RunRequestInput;
  /** Disposes the Worker (workerd), then closes the emulators. Idempotent; never throws. */
  close(): Promise<void>;
}

/** Options of {@link startDevSession}. */
export interface StartSessionOptions {
  /** lines from the Worker host and warnings of the swarm clients */
  onLog?: (line: string) => void;
  /** aborting stops the start; everything started so far is stopped */
  signal?: AbortSignal;
  /** the Worker's console lines passed to `onLog` (default warn) */
  logLevel?: WorkerLogLevel;
  /** keep the Worker's state in this dir (`dev --persist`); default a temp dir, deleted at close */
  persistDir?: string;
  /**
   * swarm name → port for its local emulator (a resumed run names these URLs); default any free port. Such an
   * emulator is a restarted server: its engine is brought back to ROLLING with the plan's job, as an operator would
   * after a restart (the Worker does not restart an engine it saw stop).
   */
  emulatorPorts?: Readonly<Record<string, number>>;
  /** more Worker vars (strings), e.g. a test's limits; the token and the allowed hosts are the session's own */
  workerVars?: Readonly<Record<string, string>>;
}

/**
 * Starts the session: first checks the servers given on the command line (`checkSwarms`: nothing is started for a
 * wrong URL or a server that batches differently), then the Worker host and the emulators (if any) in parallel.
 * @throws LocalWorkerError | SwarmCheckError | the emulator's start errors | the abort reason; whatever was
 *   started is stopped before the error propagates
 */
export async function startDevSession(plan: DevPlan, options: StartSessionOptions = {}): Promise<DevSession> {
  // the servers given on the command line: reachable, and batching as the run does if their engine runs (before
  // workerd is started for nothing)
  if (plan.externalSwarms) await checkSwarms(plan.externalSwarms, plan.job, { ...(options.signal ? { signal: options.signal } : {}) });
  const log = options.onLog ?? (() => {});
  // One slot per swarm name, filled as each server comes up (so a failure still closes what started).
  const swarms: SessionSwarm[] = [];
  const startSwarm = async (name: string, i: number) => {
    const given = plan.externalSwarms?.find((s) => s.name === name) ?? plan.externalSwarms?.[i];
    if (given) {
      swarms[i] = { name, url: given.url, emulator: null };
    } else {
      const port = options.emulatorPorts?.[name];
      const emulator = await startEmulator({ port: port ?? 0, profile: "dev", seed: plan.seed + i, answerKey: plan.answerKey, ...(plan.policy ? { policy: plan.policy } : {}) });
      swarms[i] = { name, url: emulator.url, emulator };
      if (port !== undefined) {
        const client = new SwarmClient({ baseURL: emulator.url, logger: { info: () => {}, warn: (m) => log(`swarm client: ${m}`), error: (m) => log(`swarm client: ${m}`) } });
        await client.autoSyncTrainConfigAndStartEngine(new AgentJetJob(plan.job), { ...(options.signal ? { signal: options.signal } : {}) });
      }
    }
    options.signal?.throwIfAborted();
  };
  const startSwarms = async () => {
    const started = await Promise.allSettled(plan.swarmNames.map(startSwarm));
    const failed = started.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
  };
  const closeSwarms = async () => {
    await Promise.all(swarms.filter(Boolean).map((s) => s.emulator?.close().catch(() => {})));
  };
  // the Worker may connect to loopback (the emulators) and to the servers given on the command line, nothing else
  const allowedHosts = [...DEV_ALLOWED_HOSTS, ...(plan.externalSwarms ?? []).map((s) => new URL(s.url).host)];
  // the sandbox server first: the Worker's vars name it (its token goes over IPC, never argv)
  const wantsSandboxes = plan.run.sandbox !== undefined && plan.run.sandbox.enabled !== false;
  const sandboxServer = wantsSandboxes ? await spawnSandboxServer({ onLog: (l) => log(`sandbox server: ${l}`) }) : null;
  const vars = { ...(options.workerVars ?? {}), ...(sandboxServer ? { AJET_SANDBOX_URL: sandboxServer.url, AJET_SANDBOX_TOKEN: sandboxServer.token } : {}) };
  const [worker, swarmSide] = await Promise.allSettled([startLocalWorker({ onLog: log, allowedHosts, logLevel: options.logLevel ?? "warn", ...(options.persistDir ? { persistDir: options.persistDir } : {}), ...(Object.keys(vars).length ? { vars } : {}), ...(options.signal ? { signal: options.signal } : {}) }), startSwarms()]);
  if (worker.status === "rejected" || swarmSide.status === "rejected") {
    if (worker.status === "fulfilled") await worker.value.dispose();
    await closeSwarms();
    await sandboxServer?.stop();
    // The swarm side's error names the server the user gave; prefer it (both fail on an abort anyway).
    throw swarmSide.status === "rejected" ? swarmSide.reason : (worker as PromiseRejectedResult).reason;
  }
  let closing: Promise<void> | null = null;
  return {
    worker: worker.value,
    sandboxServer,
    swarms,
    spec: runSpecFor(plan, swarms),
    close: () =>
      (closing ??= (async () => {
        await worker.value.dispose();
        await closeSwarms();
        // after the Worker: its last episodes destroyed their sandboxes; the server destroys whatever is left
        await sandboxServer?.stop();
      })()),
  };
}
