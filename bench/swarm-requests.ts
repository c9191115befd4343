/**
 * @module bench/swarm-requests — requests to the swarm server per trained step, by route (issue 23): counted from the
 * emulator's request log, and the baseline they are compared with: a Python-client-like run on the same emulator
 * cycle, the seed's `SwarmClient` + `auto_train_with_dataset` loop replayed request for request.
 *
 * The baseline's behaviour, as the seed's Python client does it (assumptions where the seed is silent are marked):
 *  - `auto_train_with_dataset(local_grpo_n = num_repeat, remote_batch_size = batch)`: batches of `batch × num_repeat`
 *    episodes, one thread each (`max_workers` = the batch's episodes); after each batch `time.sleep(5)`.
 *  - a thread: `begin_episode` → the agent (its LLM calls on the claimed base URL) → `end_episode` →
 *    `print_rollout_stat` (one `/get_rollout_stat`).
 *  - the newest client's status: a background poller (spec §4.5) polls `/get_engine_status` every 1.0 s, or every
 *    0.33 s for 10 s after any `get_engine_status()` call; `get_engine_status()` reads its last value (one poller per
 *    client object, shared by its threads).
 *  - `begin_episode`: status not ROLLING → wait (read every 5 s) until ROLLING; `/claim_episode`; "No available
 *    episodes" → sleep 2 s, status, claim again; a post-rolling / syncing answer → 15 s.
 */
import { ENGINE } from "../src/protocol/index.ts";
import { SwarmClient } from "../src/client/index.ts";
import type { RequestLogEntry } from "../src/emulator/index.ts";

/** Requests per trained step, by route (`/claim_episode`, `/v1/chat/completions`, …) and in all. */
export interface RequestsPerStep {
  total: number;
  byRoute: Record<string, number>;
  /** `/claim_episode` answers that handed out no episode ("No available episodes", not ready), per step */
  emptyClaims: number;
}

/** LLM routes are per episode (the proxy path carries the episode's key); they are counted under one name. */
function routeOf(path: string): string {
  if (path.startsWith("/v1/")) return path.replace(/^\/v1\/.*?(chat\/completions|responses|messages)$/, "/v1/$1");
  return path;
}

/**
 * Counts `log` (the emulator's request log) per trained step.
 * @param steps the trained steps the log covers
 * @param claimed how many `/claim_episode` answers handed out an episode (the emulator's `onClaimed` count)
 */
export function requestsPerStep(log: readonly RequestLogEntry[], steps: number, claimed: number): RequestsPerStep {
  const counts: Record<string, number> = {};
  for (const r of log) counts[routeOf(r.path)] = (counts[routeOf(r.path)] ?? 0) + 1;
  const per = (n: number) => Math.round((10 * n) / Math.max(1, steps)) / 10;
  const byRoute = Object.fromEntries(Object.entries(counts).sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, per(v)]));
  return { total: per(log.length), byRoute, emptyClaims: per((counts["/claim_episode"] ?? 0) - claimed) };
}

/** One printable line: the total, then the routes by count. */
export function formatRequests(label: string, r: RequestsPerStep): string {
  const routes = Object.entries(r.byRoute).map(([k, v]) => `${k} ${v}`).join(", ");
  return `  ${label}: ${r.total} requests per trained step (${routes}; claims without an episode ${r.emptyClaims})`;
}

/** What the baseline's settings are (times in ms). */
export interface PythonBaselineSettings {
  url: string;
  batchSize: number;
  numRepeat: number;
  steps: number;
  llmCallsPerEpisode: number;
  /** the YAML the client syncs before it starts the engine */
  trainConfigYaml: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Runs the Python-client-like loop (module doc) until `steps` batches were submitted and the engine trained them.
 * @throws when the engine cannot be started or a request fails in a way the Python client would raise on
 */
export async function runPythonBaseline(s: PythonBaselineSettings, isTrained: (steps: number) => boolean): Promise<void> {
  const client = new SwarmClient({ baseURL: s.url, logger: { info: () => {}, warn: () => {}, error: () => {} } });
  await client.syncTrainConfig(s.trainConfigYaml);
  await client.startEngine();
  // the background poller: 1 s, or 0.33 s for 10 s after a read
  let last = (await client.getEngineStatus()).status;
  let quickUntil = 0;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      await sleep(Date.now() < quickUntil ? 330 : 1_000);
      if (!polling) break;
      last = await client.getEngineStatus().then((snap) => snap.status, () => last);
    }
  })();
  const status = async (): Promise<string> => {
    quickUntil = Date.now() + 10_000;
    return last;
  };
  const waitRolling = async () => {
    while ((await status()) !== ENGINE.ROLLING) await sleep(5_000);
  };
  const begin = async () => {
    if ((await status()) !== ENGINE.ROLLING) await waitRolling();
    let retryMs = 0;
    for (;;) {
      if (retryMs > 0) {
        await sleep(retryMs);
        if ((await status()) !== ENGINE.ROLLING) await waitRolling();
      }
      const r = await client.claimEpisode({ discardEpisodeTimeoutSeconds: 240 });
      if (r.kind === "claimed") return r;
      retryMs = r.kind === "empty" ? 2_000 : 15_000;
    }
  };
  const rollout = async (taskId: string) => {
    const ep = await begin();
    for (let i = 0; i < s.llmCallsPerEpisode; i++) {
      const res = await fetch(`${ep.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${ep.apiKey}` },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: `What is 2 + ${i}?` }] }),
      });
      await res.text();
    }
    await client.endEpisode({ task_id: taskId }, ep.episodeUuid, { reward: 1 });
    await client.getRolloutStat();
  };
  for (let step = 0; step < s.steps; step++) {
    const tasks = Array.from({ length: s.batchSize * s.numRepeat }, (_, i) => `task-${step}-${Math.floor(i / s.numRepeat)}`);
    await Promise.all(tasks.map(rollout));
    await sleep(5_000);
  }
  const until = Date.now() + 60_000;
  while (!isTrained(s.steps) && Date.now() < until) await sleep(200);
  polling = false;
  await poller;
  await client.stopEngine().catch(() => undefined);
}
