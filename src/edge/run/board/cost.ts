/**
 * @module edge/run/board/cost — what a run costs on Cloudflare (issue 22 §2): the run's counted platform use
 * ({@link RunUsage}, edge/run/usage) priced with a dated table of the Workers Paid list prices ({@link PRICES}),
 * overridable by the `AJET_PRICES` var, as dollars per line, per run, per training step and per 1,000 episodes.
 * What local workerd does not report (CPU time) and what the run cannot see (its object's active time, the bytes of
 * transcripts written after the report) are estimates and say so. Pure.
 *
 * Priced as deployed: episodes through the queue (one consumer invocation per message, `max_batch_size` 1), even
 * when a local run dispatches `direct`. Marginal prices: the plan's monthly allowances and its $5 minimum are not
 * deducted (they are the account's, not one run's).
 */

/** The counters of one run (edge/run/usage counts them). */
export interface RunUsage {
  /** episode invocations: each queue delivery (or direct call) of an episode message sends one `started` heartbeat */
  episodeInvocations: number;
  /** API requests that reached this run's object (status, metrics, dashboard, stop …): one Worker request each */
  apiRequests: number;
  /** requests to this run's object: RPC calls and alarms (WebSocket messages apart) */
  doRequests: number;
  /** incoming WebSocket messages (billed 20 to 1) */
  websocketMessages: number;
  /** requests this run sent to other objects (its swarm servers' subscribe, the quota release) */
  otherDoRequests: number;
  /** SQLite rows written by the run's object (`cursor.rowsWritten`, KV puts and deletes, `setAlarm`) */
  rowsWritten: number;
  /** the object's SQLite database size at the last count, bytes */
  storedBytes: number;
  /** episode messages sent, and the queue operations they take (write + read + delete per 64 KB) */
  queueMessages: number;
  queueOps: number;
  /** transcripts written to R2 (Class A) and their estimated bytes */
  r2Puts: number;
  r2Bytes: number;
  /** sandbox seconds the episodes reported */
  sandboxSeconds: number;
  /** the episodes' invocation time, claim to report, summed (ms): not billed on the Standard model, shown */
  workerWallMs: number;
}

/** An empty {@link RunUsage}. */
export function emptyUsage(): RunUsage {
  return {
    episodeInvocations: 0, apiRequests: 0, doRequests: 0, websocketMessages: 0, otherDoRequests: 0, rowsWritten: 0, storedBytes: 0,
    queueMessages: 0, queueOps: 0, r2Puts: 0, r2Bytes: 0, sandboxSeconds: 0, workerWallMs: 0,
  };
}

/** A price table in US dollars. */
export interface PriceTable {
  /** when the list prices were read (ISO date) and the pages they were read from */
  asOf: string;
  sources: string[];
  workerRequestsPerMillion: number;
  workerCpuMsPerMillion: number;
  doRequestsPerMillion: number;
  doGbSecondsPerMillion: number;
  doRowsWrittenPerMillion: number;
  doStoredGbMonth: number;
  queueOpsPerMillion: number;
  r2ClassAPerMillion: number;
  r2StoredGbMonth: number;
  /** one sandbox second: Containers' `basic` instance (1/4 vCPU fully busy, 1 GiB, 4 GB disk) */
  sandboxSecond: number;
  /** estimates of what local workerd does not report: CPU ms per episode invocation and per API request (`npm run bench`'s `cost`) */
  cpuMsPerEpisode: number;
  cpuMsPerApiRequest: number;
}

/**
 * Workers Paid list prices (Standard usage model), read 2026-12-02 from Cloudflare's pricing pages. The CPU
 * estimate per episode is the `cost` benchmark's (`npm run bench -- --only cost`, 2026-12-02: workerd's user +
 * system CPU over a 96-episode local run, 26.5 ms per episode on a loaded 2-core machine: an upper bound, the run's
 * object and the API share the process); the 2 ms per API request is not measured (a small JSON answer).
 */
export const PRICES: PriceTable = {
  asOf: "2026-12-02",
  sources: [
    "https://developers.cloudflare.com/workers/platform/pricing/ (requests $0.30/M, CPU $0.02/M ms)",
    "https://developers.cloudflare.com/durable-objects/platform/pricing/ (requests $0.15/M, duration $12.50/M GB-s, rows written $1.00/M, stored $0.20/GB-month)",
    "https://developers.cloudflare.com/queues/platform/pricing/ ($0.40/M operations, 3 per message per 64 KB)",
    "https://developers.cloudflare.com/r2/pricing/ (Class A $4.50/M, storage $0.015/GB-month)",
    "https://developers.cloudflare.com/containers/pricing/ (vCPU $0.000020/s, memory $0.0000025/GiB-s, disk $0.00000007/GB-s)",
  ],
  workerRequestsPerMillion: 0.3,
  workerCpuMsPerMillion: 0.02,
  doRequestsPerMillion: 0.15,
  doGbSecondsPerMillion: 12.5,
  doRowsWrittenPerMillion: 1.0,
  doStoredGbMonth: 0.2,
  queueOpsPerMillion: 0.4,
  r2ClassAPerMillion: 4.5,
  r2StoredGbMonth: 0.015,
  sandboxSecond: 0.25 * 0.00002 + 1 * 0.0000025 + 4 * 0.00000007,
  cpuMsPerEpisode: 27,
  cpuMsPerApiRequest: 2,
};

/** Memory a Durable Object is billed for, GB (128 MB; Cloudflare's examples count 128 MB / 1 GB = 0.128). */
export const DO_MEMORY_GB = 0.128;

/**
 * The price table with the `AJET_PRICES` var's overrides (a JSON object of {@link PriceTable} number fields).
 * @returns the table, and a problem line when the var is not such an object (the defaults apply then)
 */
export function pricesFrom(raw: string | undefined): { prices: PriceTable; problem: string | null } {
  if (raw === undefined || raw.trim() === "") return { prices: PRICES, problem: null };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { prices: PRICES, problem: "AJET_PRICES is not JSON; give an object such as {\"workerRequestsPerMillion\": 0.30}; the list prices apply" };
  }
  if (!json || typeof json !== "object" || Array.isArray(json)) return { prices: PRICES, problem: "AJET_PRICES must be a JSON object of prices; the list prices apply" };
  const prices: PriceTable = { ...PRICES };
  const bad: string[] = [];
  for (const [k, v] of Object.entries(json)) {
    if (k in PRICES && typeof PRICES[k as keyof PriceTable] === "number" && typeof v === "number" && Number.isFinite(v) && v >= 0) (prices as unknown as Record<string, number>)[k] = v;
    else bad.push(k);
  }
  if (Object.keys(json).some((k) => !bad.includes(k))) prices.asOf = `${PRICES.asOf}, overridden by AJET_PRICES`;
  return { prices, problem: bad.length ? `AJET_PRICES: ${bad.join(", ")} ignored (known prices: ${Object.keys(PRICES).filter((k) => typeof PRICES[k as keyof PriceTable] === "number").join(", ")}; non-negative numbers)` : null };
}

/** One priced line. `estimate`: the quantity is estimated, not counted. */
export interface CostLine {
  item: string;
  quantity: number;
  unit: string;
  usd: number;
  estimate: boolean;
  /** how the quantity was found */
  basis: string;
}

/** A run's cost. */
export interface RunCost {
  prices: PriceTable;
  usage: RunUsage;
  /** the run's lines; their sum is `totalUsd` */
  lines: CostLine[];
  /** per month the run's object keeps its storage (not in the total) */
  monthly: CostLine[];
  totalUsd: number;
  /** the part of the total that comes from estimated lines */
  estimatedUsd: number;
  /** per training step with an ended episode, and per 1,000 ended (or scored) episodes; null before any */
  perStepUsd: number | null;
  per1000EpisodesUsd: number | null;
  steps: number;
  episodes: number;
}

const line = (item: string, quantity: number, unit: string, usd: number, estimate: boolean, basis: string): CostLine => ({ item, quantity, unit, usd, estimate, basis });

/**
 * Prices a run's usage.
 * @param run its training steps and episodes so far, how long its object has been active (ms: created → finished,
 *   or now) and how many days its transcripts are kept
 */
export function runCost(usage: RunUsage, prices: PriceTable, run: { steps: number; episodes: number; activeMs: number; transcriptRetentionDays: number }): RunCost {
  const M = 1_000_000;
  const requests = usage.episodeInvocations + usage.apiRequests;
  const cpuMs = usage.episodeInvocations * prices.cpuMsPerEpisode + usage.apiRequests * prices.cpuMsPerApiRequest;
  const doRequests = usage.doRequests + usage.otherDoRequests + usage.websocketMessages / 20;
  const gbSeconds = (run.activeMs / 1000) * DO_MEMORY_GB;
  const r2GbMonths = (usage.r2Bytes / 1e9) * (run.transcriptRetentionDays / 30);
  const lines = [
    line("Worker requests", requests, "requests", (requests * prices.workerRequestsPerMillion) / M, false, "counted: episode invocations + API requests to this run"),
    line("Worker CPU time", cpuMs, "CPU ms", (cpuMs * prices.workerCpuMsPerMillion) / M, true, `estimated: ${prices.cpuMsPerEpisode} ms per episode invocation, ${prices.cpuMsPerApiRequest} ms per API request (bench)`),
    line("Durable Object requests", doRequests, "requests", (doRequests * prices.doRequestsPerMillion) / M, false, "counted: RPCs and alarms of this run's object, its calls to other objects, WebSocket messages / 20"),
    line("Durable Object duration", gbSeconds, "GB-s", (gbSeconds * prices.doGbSecondsPerMillion) / M, true, "estimated: the run's object active from creation to finish at 128 MB (an upper bound: idle gaps may hibernate)"),
    line("Durable Object rows written", usage.rowsWritten, "rows", (usage.rowsWritten * prices.doRowsWrittenPerMillion) / M, false, "counted: SQLite rows written, KV puts and alarms (rows read, $0.001/M, are not counted)"),
    line("Queue operations", usage.queueOps, "operations", (usage.queueOps * prices.queueOpsPerMillion) / M, false, `counted: ${usage.queueMessages} episode messages × write, read, delete per 64 KB`),
    line("R2 writes (Class A)", usage.r2Puts, "operations", (usage.r2Puts * prices.r2ClassAPerMillion) / M, false, "counted: one transcript per reported attempt"),
    line("R2 storage", r2GbMonths, "GB-month", r2GbMonths * prices.r2StoredGbMonth, true, `estimated: transcript bytes from the LLM traffic, kept ${run.transcriptRetentionDays} days`),
  ];
  if (usage.sandboxSeconds > 0) lines.push(line("Sandboxes", usage.sandboxSeconds, "sandbox-seconds", usage.sandboxSeconds * prices.sandboxSecond, false, "counted: seconds the episodes held a sandbox (basic instance price)"));
  const storedGb = usage.storedBytes / 1e9;
  const monthly = [line("Durable Object storage", storedGb, "GB-month", storedGb * prices.doStoredGbMonth, false, "counted: the run object's SQLite size, per month it is kept")];
  const totalUsd = lines.reduce((s, l) => s + l.usd, 0);
  return {
    prices, usage, lines, monthly, totalUsd,
    estimatedUsd: lines.filter((l) => l.estimate).reduce((s, l) => s + l.usd, 0),
    perStepUsd: run.steps > 0 ? totalUsd / run.steps : null,
    per1000EpisodesUsd: run.episodes > 0 ? (totalUsd / run.episodes) * 1000 : null,
    steps: run.steps, episodes: run.episodes,
  };
}

/** Queue operations of one message of `bytes` (its JSON; ~100 bytes of metadata added): write, read, delete per 64 KB. */
export function queueOpsOf(bytes: number): number {
  return 3 * Math.max(1, Math.ceil((bytes + 100) / 64_000));
}
