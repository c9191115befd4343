/**
 * @module scheduler/run-spec — the `POST /runs` body: the RunSpec zod schema (validated once at the edge, trusted by
 * the core), its documented defaults, and the cross-field checks (job agreement, BC-31 per-source caps, leases).
 */
import { z } from "zod";
import { distance } from "fastest-levenshtein";
import { DEFAULT_DISCARD_EPISODE_TIMEOUT_SECONDS, GatewayHeaders, SWARM_BATCH_DEFAULTS, serverEpisodeCapacity } from "../protocol/index.ts";
import { SandboxRunConfig } from "../port/sandbox.ts";
import { sourceCapIssues, throttleCap } from "./mixing.ts";
import { MAX_WEIGHT_RATIO, rangedNumber, SPEC_RANGES, type RangedField } from "./spec-ranges.ts";
import { leaseIssues, RunTuning, resolveTuning } from "./tuning.ts";

/** Names of swarms and datasets end up inside episode keys: letters, digits and `_ . : -`, no `/` or `#`. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;
const nameField = (what: string) =>
  z
    .string({ error: `${what} must be a string` })
    .max(64, { error: `${what} is at most 64 characters (e.g. "gsm8k")` })
    .regex(NAME, {
      error: `${what} must start with a letter or digit and use only letters, digits, "_", ".", ":" or "-" (e.g. "gsm8k")`,
    });
/** A whole number of the spec within its range (scheduler/spec-ranges). */
const wholeNumber = (field: RangedField, example: string) => rangedNumber(field, field, example);

/**
 * Who brings a swarm server's engine up, and whether it is stopped afterwards. The Worker's one object per server
 * (SwarmServer) acts on it: it syncs the run's job and starts the engine when it is OFFLINE (`start: "if-offline"`,
 * once for every run racing on the server, BC-28), or only waits (`"never"`: someone else owns the engine).
 */
export const EnginePolicy = z.strictObject({
  start: z
    .enum(["if-offline", "never"], { error: 'engine.start must be "if-offline" (sync the job and start an OFFLINE engine) or "never" (wait for someone else to start it)' })
    .default("if-offline"),
  stopWhenDone: z
    .boolean({ error: "engine.stopWhenDone must be true or false" })
    .default(false)
    .describe("the last run on the server that asked for it stops the engine once its episodes are resolved"),
  bootTimeoutSeconds: rangedNumber("engine.bootTimeoutSeconds", "engine.bootTimeoutSeconds", "1800")
    .default(1800)
    .describe("how long a started engine may stay BOOTING before the run fails (default 1800 s: a real boot takes minutes)"),
  pollQuickMs: rangedNumber("engine.pollQuickMs", "engine.pollQuickMs", "250").optional()
    .describe("status poll interval around an expected edge (default 250 ms)"),
  pollSlowMs: rangedNumber("engine.pollSlowMs", "engine.pollSlowMs", "5000").optional()
    .describe("status poll interval when no edge is expected (default 5000 ms)"),
  maxPollsPerMinute: rangedNumber("engine.maxPollsPerMinute", "engine.maxPollsPerMinute", "120").optional()
    .describe("status polls of this server in any minute, at most (default 120)"),
});
export type EnginePolicy = z.output<typeof EnginePolicy>;

/** One swarm server of the run (spec §1): its name (what rollout functions ask for), base URL and engine policy. */
export const SwarmServerSpec = z.strictObject({
  name: nameField("swarm name").default("default").describe('name a rollout function uses; default "default"'),
  url: z
    .url({ protocol: /^https?$/, error: "url must be the http(s) URL of a swarm server, e.g. http://127.0.0.1:10086" })
    .describe("swarm server base URL"),
  headers: z.optional(GatewayHeaders).describe('headers sent on every call to this server (gateway); values are templates such as "{secret:GATEWAY_TOKEN}"'),
  engine: EnginePolicy.prefault({}).describe('who starts the engine: {start: "if-offline" | "never", stopWhenDone, bootTimeoutSeconds}'),
});
export type SwarmServerSpec = z.infer<typeof SwarmServerSpec>;

/**
 * One task source of the run as the scheduler reads it: `name`, `weight` and the optional `throttleRatio`; other
 * fields pass through. The `POST /runs` request extends it with the dataset reader's fields (edge/api/run-request), so
 * a run's dataset entry is one schema.
 */
export const DatasetRef = z.looseObject({
  name: nameField("dataset name").describe("unique within the run; namespaces task ids (gsm8k:train:0)"),
  weight: z
    .number({ error: "weight must be a number" })
    .positive({ error: "weight must be > 0: it is this source's share of every batch window; e.g. 1" })
    .pipe(rangedNumber("weight", "weight", "1"))
    .default(1)
    .describe("relative share of every batch window (unitless; default 1)"),
  throttleRatio: z
    .number({ error: "throttleRatio must be a number" })
    .gt(0, { error: "throttleRatio must be > 0 (a fraction of batchSize), e.g. 0.5" })
    .max(2, { error: "throttleRatio must be ≤ 2 (the server's allowed range), e.g. 0.5" })
    .optional()
    .describe("optional cap: at most ceil(batchSize × throttleRatio) tasks of this source per window"),
});
export type DatasetRef = z.infer<typeof DatasetRef>;

const datasetsField = <D extends DatasetEntrySchema>(entry: D) =>
  z.array(entry).min(1, { error: 'datasets needs at least one source, e.g. [{"name": "gsm8k", "weight": 1, …}]' });

/** A schema for one dataset entry: the scheduler's {@link DatasetRef}, or one that extends it. */
export type DatasetEntrySchema = z.ZodType<z.output<typeof DatasetRef>, z.input<typeof DatasetRef>>;

const RunSpecObject = z.strictObject({
  swarms: z.array(SwarmServerSpec).min(1, { error: 'swarms needs at least one server, e.g. [{"url": "http://127.0.0.1:10086"}]' }),
  job: z.record(z.string(), z.unknown()).default({}).describe("AgentJetJob options (pass-through, validated by src/job)"),
  datasets: datasetsField(DatasetRef),
  function: nameField("function").describe("rollout function name (kebab-case file name in functions/)"),
  epochs: wholeNumber("epochs", "1").default(1).describe("passes over each source (default 1)"),
  numRepeat: wholeNumber("numRepeat", "4").optional().describe("episodes per task (GRPO group); default job.numRepeat or 4"),
  batchSize: wholeNumber("batchSize", "32").optional().describe("tasks per training step; default job.batchSize or 32"),
  maxEnvWorker: wholeNumber("maxEnvWorker", "128").optional().describe("engine worker threads; default job.maxEnvWorker or 128"),
  maxParallel: wholeNumber("maxParallel", "64").optional().describe("episodes in flight at most; default the server cap"),
  discardEpisodeTimeoutSeconds: z
    .number({ error: "discardEpisodeTimeoutSeconds must be a number" })
    .positive({ error: "discardEpisodeTimeoutSeconds must be > 0 seconds, e.g. 240" })
    .pipe(rangedNumber("discardEpisodeTimeoutSeconds", "discardEpisodeTimeoutSeconds", "240"))
    .default(DEFAULT_DISCARD_EPISODE_TIMEOUT_SECONDS)
    .describe("seconds an episode may stay idle (no LLM call) before the server reverts it"),
  episodeType: z.enum(["train", "eval"], { error: 'episodeType must be "train" or "eval"' }).default("train"),
  maxSteps: wholeNumber("maxSteps", "100").optional().describe("training windows to serve at most (train only)"),
  maxAttempts: wholeNumber("maxAttempts", "3").default(3).describe("tries per repeat before its task group is dropped and replaced"),
  throttleRatio: z
    .number({ error: "throttleRatio must be a number" })
    .gt(0, { error: "throttleRatio must be > 0, e.g. 1.5" })
    .max(2, { error: "throttleRatio must be ≤ 2 (the server's allowed range), e.g. 1.5" })
    .default(1.5)
    .describe("the claims' SwarmThrottlePolicy.ratio: at most ceil(batchSize × ratio) unique tasks per batch; default 1.5"),
  successThreshold: rangedNumber("successThreshold", "successThreshold", "1")
    .default(1)
    .describe("eval: a reward ≥ this counts as a success for pass@k (default 1)"),
  seed: z
    .number({ error: "seed must be a number" })
    .int({ error: "seed must be a whole number, e.g. 42" })
    .min(0, { error: "seed must be ≥ 0, e.g. 42" })
    .max(2 ** 32 - 1, { error: "seed must be < 2^32, e.g. 42" })
    .default(0)
    .describe("seeds the per-epoch shuffles and the retry jitter"),
  taskIdScope: z
    .enum(["run", "dataset"], { error: 'taskIdScope must be "run" (default: this run\'s groups are its own) or "dataset" (runs on one dataset share task groups)' })
    .default("run")
    .describe(
      'task ids sent to the server: "run" (default) appends the run\'s short tag (gsm8k:train:17@a35a9d90), so two runs on one dataset never merge their repeats into one group; "dataset" sends the dataset\'s ids, so several runs feed one group per task',
    ),
  topUpLastBatch: z
    .boolean({ error: "topUpLastBatch must be true or false" })
    .default(true)
    .describe(
      "train: when the run's last episodes sit in a server batch that has not closed, open further task groups until it closes (default true); false: finish and report how many rewards remain untrained",
    ),
  overProvision: z
    .number({ error: "overProvision must be a number, e.g. 0.25 (or 0: off)" })
    .min(0, { error: "overProvision must be ≥ 0 (a share of batchSize; 0 turns it off), e.g. 0.25" })
    .max(1, { error: "overProvision must be ≤ 1 (at most one extra batch's worth of task groups), e.g. 0.25" })
    .default(0)
    .describe(
      "train: extra task groups per window as a share of batchSize (0 = off, the default; e.g. 0.25 = 2 extra groups for a batch of 8), so the server's batch closes on its first complete groups; slow extras are aborted and their tasks re-run later",
    ),
  secrets: z.record(z.string(), z.string({ error: "secrets values must be strings" })).default({}).describe("never logged"),
  weightSyncWebhook: z
    .url({ protocol: /^https?$/, error: "weightSyncWebhook must be an http(s) URL, e.g. https://hooks.example.com/ajet (its host must be allowed, AJET_ALLOWED_HOSTS)" })
    .optional()
    .describe("train: POSTed {runId, step, metrics} once per server step on entering WEIGHT_SYNCING; a failing or slow hook is logged and never blocks training"),
  sandbox: z.optional(SandboxRunConfig).describe(
    'the run\'s functions may ask for a sandbox (ctx.sandbox()): {} or {"enabled": true, "instanceType": "lite", "maxLive", "createsPerSecond", "commandTimeoutSeconds", "maxOutputBytes", "secrets": [names let in]}; absent: no sandboxes',
  ),
  tuning: RunTuning.prefault({}).describe("timing knobs; the defaults suit the real server"),
});

function jobValue(job: Record<string, unknown>, key: string): unknown {
  return job[key];
}

type RunSpecFields = z.output<typeof RunSpecObject>;

/**
 * Why a run cannot serve a sample-collection method (spec §7.3; scheduler/sync-vote serves all five), empty when it
 * can: an agree mode needs one swarm server (the run votes on its first) and a train run (an eval run never trains,
 * yet its aborts would list it as an active client that never agrees); the non-dummy method needs groups of ≥ 2
 * episodes (a group of one has one reward, so no batch would ever close).
 */
function collectionMethodIssues(method: unknown, episodeType: string, swarms: number, numRepeat: number): string[] {
  if (method === undefined) return [];
  const name = String(method);
  if (name === "rollout_until_any_client_agree_sync_weight" || name === "rollout_until_all_clients_agree_sync_weight") {
    if (episodeType === "eval") return [`swarmModeSampleCollectionMethod "${name}" needs a train run: an eval run never trains, so it never agrees to a weight sync; use "rollout_until_finish_enough_tasks" for eval runs`];
    if (swarms > 1) return [`swarmModeSampleCollectionMethod "${name}" needs a run on one swarm server (this run has ${swarms}): the run votes for the weight sync of its first server only; use a one-swarm function, or "rollout_until_finish_enough_tasks"`];
  }
  if (name === "rollout_until_finish_enough_non_dummy_tasks" && numRepeat < 2) {
    return [`swarmModeSampleCollectionMethod "${name}" needs numRepeat ≥ 2 (got ${numRepeat}): a group of one episode has one reward, so it never counts and no batch would close`];
  }
  return [];
}

/**
 * Why a run cannot over-provision (scheduler/over-provision), empty when it can or does not ask to (0): only a train
 * run whose server closes batches on complete tasks (`rollout_until_finish_enough_tasks`, the default: the other
 * methods close on votes or on non-dummy groups, which extras do not bring closer), and with room under its throttle
 * ratio for at least one extra task (the claims' throttle policy allows `ceil(batchSize × throttleRatio)` unique tasks
 * per batch, spec §7.1: an extra beyond it would only be throttled).
 */
export function overProvisionIssues(ratio: number, episodeType: string, method: unknown, batchSize: number, throttleRatio: number): string[] {
  if (!(ratio > 0)) return [];
  if (episodeType !== "train") return [`overProvision ${ratio} needs a train run: an eval run has no batch to close; remove overProvision (or set it to 0)`];
  if (method !== undefined && method !== "rollout_until_finish_enough_tasks") {
    return [`overProvision ${ratio} needs swarmModeSampleCollectionMethod "rollout_until_finish_enough_tasks" (got "${String(method)}"): only that method closes a batch on its first complete tasks; set overProvision to 0`];
  }
  if (throttleCap(batchSize, throttleRatio) <= batchSize) {
    return [`overProvision ${ratio} has no room: throttleRatio ${throttleRatio} allows ${throttleCap(batchSize, throttleRatio)} unique tasks per batch of ${batchSize}, so an extra task group would only be throttled; raise throttleRatio (e.g. 1.5) or set overProvision to 0`];
  }
  return [];
}

/** The cross-field checks of a run spec (job agreement, BC-31 per-source caps, leases). */
function checkRunSpec(spec: RunSpecFields, ctx: z.RefinementCtx): void {
  const add = (path: (string | number)[], message: string) => ctx.addIssue({ code: "custom", path, message, input: spec });
  const duplicated = (names: string[]) => names.find((n, i) => names.indexOf(n) !== i);
  const swarmDup = duplicated(spec.swarms.map((s) => s.name));
  if (swarmDup) add(["swarms"], `swarm name "${swarmDup}" is used twice; give every swarm server its own name`);
  const dataDup = duplicated(spec.datasets.map((d) => d.name));
  if (dataDup) add(["datasets"], `dataset name "${dataDup}" is used twice; names namespace task ids and must be unique; rename one`);
  const weights = spec.datasets.map((d) => d.weight);
  const heaviest = Math.max(...weights);
  const lightest = Math.min(...weights);
  // only between weights each within its own range (one out of range is refused on its own)
  if (weights.length > 1 && lightest >= SPEC_RANGES.weight.min && heaviest <= SPEC_RANGES.weight.max && heaviest > lightest * MAX_WEIGHT_RATIO) {
    const at = weights.indexOf(lightest);
    add(["datasets", at, "weight"], `weights ${lightest} and ${heaviest} are more than ${MAX_WEIGHT_RATIO.toLocaleString("en-US")} × apart: a share that small never gets a task in a window; keep every weight within ${MAX_WEIGHT_RATIO.toLocaleString("en-US")} × the smallest, or drop the dataset`);
  }
  for (const key of ["batchSize", "numRepeat", "maxEnvWorker"] as const) {
    const fromJob = jobValue(spec.job, key);
    if (fromJob === undefined) continue;
    if (typeof fromJob !== "number" || !Number.isInteger(fromJob) || fromJob < 1) {
      add(["job", key], `job.${key} must be a whole number ≥ 1 (or omit it and set ${key} at the top level)`);
    } else if (spec[key] !== undefined && spec[key] !== fromJob) {
      add([key], `${key} ${spec[key]} disagrees with job.${key} ${fromJob}: the server would batch differently from the windows; set one of them`);
    }
  }
  const method = jobValue(spec.job, "swarmModeSampleCollectionMethod");
  const numRepeat = spec.numRepeat ?? numberOr(jobValue(spec.job, "numRepeat"), SWARM_BATCH_DEFAULTS.numRepeat);
  for (const message of collectionMethodIssues(method, spec.episodeType, spec.swarms.length, numRepeat)) add(["job", "swarmModeSampleCollectionMethod"], message);
  if (spec.episodeType === "eval" && spec.maxSteps !== undefined) {
    add(["maxSteps"], "maxSteps counts training windows; an eval run has none. Remove maxSteps (limit eval with fewer tasks)");
  }
  const batchSize = spec.batchSize ?? numberOr(jobValue(spec.job, "batchSize"), SWARM_BATCH_DEFAULTS.batchSize);
  if (spec.episodeType === "train") {
    for (const issue of sourceCapIssues(batchSize, spec.throttleRatio, spec.datasets)) add(issue.path, issue.message);
  }
  for (const message of overProvisionIssues(spec.overProvision, spec.episodeType, method, batchSize, spec.throttleRatio)) add(["overProvision"], message);
  if (spec.sandbox?.secrets.includes("JUDGE_API_KEY")) {
    add(["sandbox", "secrets"], "JUDGE_API_KEY never enters a sandbox (the judge is called by the function, outside it); remove it from sandbox.secrets");
  }
  // every lease relation exactly-once depends on, on the resolved values (defaults included)
  for (const issue of leaseIssues(resolveTuning(spec.tuning, spec.discardEpisodeTimeoutSeconds), spec.discardEpisodeTimeoutSeconds)) {
    add(issue.path, issue.message);
  }
}

/** The fields a resolved run spec fills in (see {@link RunSpec}). */
type ResolvedFields = "batchSize" | "numRepeat" | "maxEnvWorker" | "maxParallel" | "maxSteps" | "tuning";

/** Resolves every default (see {@link RunSpec}); keeps the dataset entries' own type. */
function resolveRunSpec<S extends RunSpecFields>(spec: S): Omit<S, ResolvedFields> & {
  batchSize: number;
  numRepeat: number;
  maxEnvWorker: number;
  maxParallel: number;
  maxSteps: number | null;
  tuning: ReturnType<typeof resolveTuning>;
} {
  const batchSize = spec.batchSize ?? numberOr(jobValue(spec.job, "batchSize"), SWARM_BATCH_DEFAULTS.batchSize);
  const numRepeat = spec.numRepeat ?? numberOr(jobValue(spec.job, "numRepeat"), SWARM_BATCH_DEFAULTS.numRepeat);
  const maxEnvWorker = spec.maxEnvWorker ?? numberOr(jobValue(spec.job, "maxEnvWorker"), SWARM_BATCH_DEFAULTS.maxEnvWorker);
  return {
    ...spec,
    batchSize,
    numRepeat,
    maxEnvWorker,
    maxParallel: spec.maxParallel ?? serverEpisodeCapacity({ batchSize, maxEnvWorker, numRepeat }),
    maxSteps: spec.maxSteps ?? null,
    tuning: resolveTuning(spec.tuning, spec.discardEpisodeTimeoutSeconds),
  };
}

/**
 * The run spec schema over a dataset entry schema: the core's own {@link RunSpec} uses {@link DatasetRef}; the
 * Worker's `POST /runs` request (edge/api/run-request) uses the dataset reader's entry extended with the scheduler's
 * fields, so the request is one schema.
 */
export function runSpecSchema<D extends DatasetEntrySchema>(entry: D) {
  return RunSpecObject.extend({ datasets: datasetsField(entry) }).superRefine(checkRunSpec).transform(resolveRunSpec);
}

/**
 * The run spec (camelCase, ours). Parse with `RunSpec.safeParse(body)`; issues carry the field path and a message
 * that says the fix. The output resolves every default: `batchSize`, `numRepeat`, `maxEnvWorker` (from the top level,
 * else from `job`, else 32 / 4 / 128), `maxParallel` (default `min(batchSize, ceil(maxEnvWorker / numRepeat)) ×
 * numRepeat`, the server's episode cap, spec §5.2), `maxSteps` (null = unbounded) and `tuning` (leases from
 * `discardEpisodeTimeoutSeconds`). `secrets` are carried for the consumer only; the scheduler state never holds them.
 */
export const RunSpec = runSpecSchema(DatasetRef);
/** The validated run spec with every default resolved (see {@link RunSpec}). */
export type RunSpec = z.output<typeof RunSpec>;
/** What a client may send to `POST /runs`. */
export type RunSpecInput = z.input<typeof RunSpec>;

function numberOr(value: unknown, fallback: number): number {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 ? value : fallback;
}

/** One problem in a run spec: the dotted field path (`datasets.1.weight`) and a message that says the fix. */
export interface RunSpecIssue {
  path: string;
  message: string;
}

/**
 * Validates a `POST /runs` body.
 * @returns `{ success: true, data }` or `{ success: false, issues }` with one `{ path, message }` per problem
 */
export function parseRunSpec(input: unknown): { success: true; data: RunSpec } | { success: false; issues: RunSpecIssue[] } {
  return parseWith(RunSpec, input);
}

/**
 * Validates a body with a run spec schema built by {@link runSpecSchema} (issues explained as {@link parseRunSpec}'s).
 * @returns `{ success: true, data }` or `{ success: false, issues }`
 */
export function parseWith<T>(schema: z.ZodType<T>, input: unknown): { success: true; data: T } | { success: false; issues: RunSpecIssue[] } {
  const parsed = schema.safeParse(input);
  if (parsed.success) return { success: true, data: parsed.data };
  return { success: false, issues: parsed.error.issues.flatMap((i) => explainIssue(i, input)) };
}

/** Examples for required fields, so "required" says what to write. */
const REQUIRED_EXAMPLES: Record<string, string> = {
  swarms: '[{"url": "http://127.0.0.1:10086"}]',
  datasets: '[{"name": "gsm8k", "kind": "gsm8k", "url": "https://…/test.jsonl"}]',
  function: '"math-agent"',
};

/** The field names a spec (and its `tuning`) may use, for "did you mean" hints. */
const KNOWN_FIELDS: Record<string, readonly string[]> = {
  "": Object.keys(RunSpecObject.shape),
  tuning: Object.keys(RunTuning.shape),
  "swarms.*.engine": Object.keys(EnginePolicy.shape),
  sandbox: Object.keys(SandboxRunConfig.shape),
};

/** The closest known field (case-insensitive equal, or an edit distance ≤ 2), if any. */
function closestField(key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const exact = known.find((k) => k.toLowerCase() === lower);
  if (exact) return exact;
  let best: { k: string; d: number } | undefined;
  for (const k of known) {
    const d = distance(lower, k.toLowerCase());
    if (d <= 2 && (!best || d < best.d)) best = { k, d };
  }
  return best?.k;
}

/** One zod issue as `{path, message}` issues that say the fix: missing fields and unknown keys get their own words. */
function explainIssue(issue: z.core.$ZodIssue, input: unknown): RunSpecIssue[] {
  const path = issue.path.map(String).join(".");
  const value = issue.path.reduce<unknown>((v, k) => (v !== null && typeof v === "object" ? (v as Record<PropertyKey, unknown>)[k] : undefined), input);
  if (issue.code === "invalid_type" && value === undefined) {
    const example = REQUIRED_EXAMPLES[path];
    return [{ path: path || "(body)", message: `${path || "the body"} is required${example ? `, e.g. ${example}` : ""}` }];
  }
  if (issue.code === "unrecognized_keys") {
    const known = KNOWN_FIELDS[path.replace(/\.\d+\./g, ".*.")];
    return issue.keys.map((key) => {
      const hint = known ? closestField(key, known) : undefined;
      return { path: path ? `${path}.${key}` : key, message: `unknown field "${key}"${hint ? `; did you mean "${hint}"?` : ""}` };
    });
  }
  return [{ path: path || "(body)", message: issue.message }];
}
