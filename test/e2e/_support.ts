/**
 * @module test/e2e/_support — helpers of the end-to-end tests: start a dev session from CLI-style arguments (the
 * same plan → session → runs API path `ajet-edge dev` takes), count `/end_episode` requests per episode at the
 * emulator, read the emulator's episode buffer, and list what still runs in a process group.
 */
import { execFileSync } from "node:child_process";
import { parseDevArgs } from "../../src/cli/dev/options.ts";
import { buildDevPlan, type DevDataset } from "../../src/cli/dev/plan.ts";
import { runsApi, waitForRun, type RunsApi, type RunView } from "../../src/cli/dev/runs-api.ts";
import { startDevSession, type DevSession } from "../../src/cli/dev/session.ts";
import { boundedFetch } from "../../src/cli/dev/bounded-fetch.ts";
import type { RunningEmulator, StepLogEntry } from "../../src/emulator/index.ts";

/** A started session with its single emulator and the runs API of its Worker. */
export interface E2eRig {
  session: DevSession;
  emulator: RunningEmulator;
  api: RunsApi;
  /** `/end_episode` requests the emulator received, per episode uuid */
  endRequests: Map<string, number>;
}

/**
 * How long one request of a test to the local Worker may take, ms: a busy workerd (a dataset's index pass, a loaded
 * machine) answers late, and a request it never answers must fail instead of waiting for Node's 300 s default;
 * `waitForRun` retries a failed poll (5 in a row may fail).
 */
export const TEST_REQUEST_TIMEOUT_MS = 30_000;

/** fetch with {@link TEST_REQUEST_TIMEOUT_MS} on every request (the CLI's own bounded fetch). */
export const fetchWithTimeout: typeof fetch = boundedFetch(TEST_REQUEST_TIMEOUT_MS);

/**
 * Starts a session the way `ajet-edge dev <argv>` would (datasets may be replaced), with end requests counted.
 * `workerVars` adds Worker vars (limits a test lowers).
 */
export async function startRig(argv: string[], datasets?: DevDataset[], workerVars?: Record<string, string>): Promise<E2eRig> {
  const options = parseDevArgs(argv);
  if (!options) throw new Error("--help is not a rig");
  const plan = await buildDevPlan(options, datasets ? { datasets } : {});
  const session = await startDevSession(plan, workerVars ? { workerVars } : {});
  const emulator = session.swarms[0]?.emulator;
  if (!emulator) throw new Error("the rig needs the local emulator");
  const endRequests = new Map<string, number>();
  emulator.emulator.hooks.endEpisode = (req) => {
    endRequests.set(req.episode_uuid, (endRequests.get(req.episode_uuid) ?? 0) + 1);
  };
  return { session, emulator, api: runsApi(session.worker.url, fetchWithTimeout, { token: session.worker.token }), endRequests };
}

/** Creates the session's run and waits (bounded) for it to finish. @throws when it does not finish in time */
export async function runToEnd(rig: E2eRig, timeoutMs = 60_000): Promise<RunView> {
  const created = await rig.api.create(rig.session.spec);
  const { outcome, status } = await waitForRun(rig.api, created.runId, { timeoutMs });
  if (outcome !== "finished" || !status) {
    throw new Error(`run ${created.runId} did not finish within ${timeoutMs} ms: ${JSON.stringify(status?.log.slice(-5))}`);
  }
  return status;
}

/** The emulator's `/get_episode_buffer` (registered and claimed records), over HTTP as a client sees it. */
export async function episodeBuffer(emulator: RunningEmulator): Promise<{ episode_uuid: string; episode_status: string }[]> {
  const res = await fetch(`${emulator.url}/get_episode_buffer`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  return ((await res.json()) as { buffer: { episode_uuid: string; episode_status: string }[] }).buffer;
}

/** Step-log entries of the first engine run, by global step. */
export function stepsByGlobalStep(emulator: RunningEmulator): Map<number, StepLogEntry> {
  return new Map(emulator.emulator.stepLog.filter((e) => e.run === 1).map((e) => [e.globalStep, e]));
}

/**
 * Live (not zombie) processes in a process group, from `ps`. Zombies are left out: a sandbox whose PID 1 does not
 * reap (as here) keeps exited children of the host (esbuild) as `<defunct>` entries that run nothing.
 */
export function liveProcessesInGroup(pgid: number): string[] {
  return execFileSync("ps", ["-eo", "pgid=,pid=,stat=,comm="], { encoding: "utf8" })
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter(([group, , stat]) => Number(group) === pgid && stat !== undefined && !stat.startsWith("Z"))
    .map((parts) => parts.slice(1).join(" "));
}

/** The batches an emulator trained (`"{engine run}:{global step}"`): seen ROLLING at the next step in the same engine run. */
export function trainedBatches(emulator: RunningEmulator): Set<string> {
  const trained = new Set<string>();
  let run = 0;
  let step: number | null = null;
  for (const change of emulator.emulator.engine.statusHistory) {
    if (change.to === "ENGINE.BOOTING") {
      run++;
      step = null;
    }
    if (change.to === "ENGINE.ROLLING" && change.globalStep !== null) {
      if (step !== null && change.globalStep === step + 1) trained.add(`${run}:${step}`);
      step = change.globalStep;
    }
  }
  return trained;
}
