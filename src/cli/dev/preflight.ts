/**
 * @module cli/dev/preflight — what `dev` and `run` check of the swarm servers before a run is created, so a run
 * that cannot work is refused at once with one line instead of waiting with a warning every few seconds: each
 * server answers `GET /get_engine_status` from here, and an engine that already runs (or boots) batches as the run
 * does (its pool information's `completed_task_target` / `task_expected_num_repeat` against the run's `batchSize` /
 * `numRepeat`; the Worker fails such a run with the same message). A server that answers with an HTTP error (a
 * gateway asking for its headers) is reachable: only its batch settings are left to the Worker.
 */
import { SwarmAPIError, SwarmAbortError, SwarmClient, SwarmConnectionError, SwarmError } from "../../client/index.ts";
import { batchMismatchMessage, isRunning } from "../../edge/swarm-server/engine-state.ts";
import { ENGINE } from "../../protocol/index.ts";

/** A swarm server the run will use. */
export interface PreflightSwarm {
  name: string;
  url: string;
}

/** A swarm server cannot serve the run: `message` names it, what is wrong and the fix. */
export class SwarmCheckError extends Error {
  constructor(
    message: string,
    /** `unreachable` or `batch` (the server batches differently) */
    readonly kind: "unreachable" | "batch",
  ) {
    super(message);
    this.name = "SwarmCheckError";
  }
}

/** How long each check request may take, ms. */
export const PREFLIGHT_TIMEOUT_MS = 10_000;

const quiet = { info: () => {}, warn: () => {}, error: () => {} };

/**
 * Checks every server: reachable from here, and batching as `job` does when its engine already runs or boots.
 * @throws SwarmCheckError for the first server that cannot serve the run; SwarmAbortError when `signal` fires
 */
export async function checkSwarms(swarms: readonly PreflightSwarm[], job: { batchSize: number; numRepeat: number }, o: { signal?: AbortSignal; client?: (url: string) => SwarmClient } = {}): Promise<void> {
  const opts = { timeoutMs: PREFLIGHT_TIMEOUT_MS, ...(o.signal ? { signal: o.signal } : {}) };
  for (const s of swarms) {
    const client = o.client?.(s.url) ?? new SwarmClient({ baseURL: s.url, logger: quiet });
    let status: string;
    try {
      status = (await client.getEngineStatus(opts)).status;
    } catch (err) {
      if (err instanceof SwarmAbortError || !(err instanceof SwarmError)) throw err;
      // an HTTP answer (a gateway that wants its headers, an older server) proves the server is there
      if (err instanceof SwarmAPIError) continue;
      const why = err instanceof SwarmConnectionError ? err.message : `${err.name}: ${err.message}`;
      throw new SwarmCheckError(`cannot reach the swarm server at ${s.url}: ${why}; check that it runs and that this machine and the Worker can reach it`, "unreachable");
    }
    if (!isRunning(status) && status !== ENGINE.BOOTING) continue; // OFFLINE: the Worker syncs the run's own config
    const pool = await client.getRolloutStat(opts).catch(() => null); // unreadable: the Worker checks it again
    if (!pool || pool.completed_task_target <= 0 || pool.task_expected_num_repeat <= 0) continue;
    if (pool.completed_task_target === job.batchSize && pool.task_expected_num_repeat === job.numRepeat) continue;
    throw new SwarmCheckError(batchMismatchMessage(s.url, { batchSize: pool.completed_task_target, numRepeat: pool.task_expected_num_repeat, source: "pool" }, job), "batch");
  }
}
