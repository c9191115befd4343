/**
 * @module emulator/options — the emulator's knobs: timing profiles (`real`, `dev`, `fast`), individual timing
 * overrides, the simulated policy's knobs and the upstream forwarder, validated with zod (issue 2 §5).
 *
 * Timing shape kept from the real server in every profile (spec §3.4, §4.2, §7.3, §8.6): `/start_engine`
 * answers only after BOOTING was observable for `startEngineMs` (the real server starts Ray first, 1.5–3 s);
 * ROLLING follows `bootMs` later; the trainer checks on a `tickMs` tick (upstream 4 s) whether the batch is
 * closed and drained; WEIGHT_SYNCING lasts `weightSyncMs`; the janitor runs every `janitorIntervalMs` (10 s).
 */
import { z } from "zod";
import { LLM_CALL_BUDGET_SECONDS } from "../protocol/index.ts";
import { FaultSpec } from "./faults.ts";
import { LatencySpecSchema } from "./latency.ts";

const ms = (what: string) => z.number().min(0).describe(`${what}, milliseconds`);


/** Every duration the emulator waits for. All values are milliseconds. */
export const EmulatorTimings = z.object({
  startEngineMs: ms("how long /start_engine holds its answer while BOOTING (real server: Ray start, 1.5–3 s)"),
  bootMs: ms("from the /start_engine answer to ENGINE.ROLLING (model load)"),
  registrationDelayMs: ms(
    "from each edge to ROLLING to the engine registering its episodes (upstream ~1 s; claims answer 'No available episodes' until then)",
  ),
  tickMs: ms("trainer tick: batch-closed and drain checks (upstream CHECK_STATUS_INTERVAL 4 s)"),
  weightSyncMs: ms("duration of ENGINE.WEIGHT_SYNCING (the policy update)"),
  stopEngineMs: ms("how long /stop_engine takes to kill a running engine"),
  janitorIntervalMs: ms("idle janitor period (server: 10 s)"),
  endAckMs: ms("engine ack delay for a train /end_episode (normally a few ms)"),
  activeClientTimeoutMs: ms("active-client expiry (CLIENT_ACTIVE_TIMEOUT 600 s)"),
  verboseLogTtlMs: ms("verbose log entry lifetime (30 s)"),
  llmLatency: LatencySpecSchema.describe("simulated generation latency per LLM call (chat, Responses, Messages)"),
  llmCallBudgetMs: ms(
    "how long the proxy waits for one generation before giving up with a 500 (newest server: 600 slices of 6 s = 3 600 000); the Responses and Messages routes, and chat with chatStreamKeepalive",
  ),
});
export type EmulatorTimings = z.infer<typeof EmulatorTimings>;

/**
 * Profile names: `real` (default, the real server's timings), `dev` (shape kept, ~10× faster), `fast` (tests),
 * `slow` (dev's engine timings with coding-agent-like generations: each LLM call takes ~20 s to minutes, so an
 * episode of a few calls lasts minutes and streamed calls live on keepalives).
 */
export const EmulatorProfile = z.enum(["real", "dev", "fast", "slow"]);
export type EmulatorProfile = z.infer<typeof EmulatorProfile>;

const common = { activeClientTimeoutMs: 600_000, verboseLogTtlMs: 30_000, llmCallBudgetMs: LLM_CALL_BUDGET_SECONDS * 1000 };

/** `dev`: the real shape, about ten times faster (and the base of `slow`). */
const DEV_TIMINGS: EmulatorTimings = {
  startEngineMs: 1_000,
  bootMs: 1_500,
  registrationDelayMs: 100,
  tickMs: 500,
  weightSyncMs: 1_000,
  stopEngineMs: 100,
  janitorIntervalMs: 1_000,
  endAckMs: 0,
  llmLatency: { kind: "lognormal", medianMs: 60, sigma: 0.5, maxMs: 1_000 },
  ...common,
};

/**
 * The four profiles. `real`: boot 2 s + 60 s, registration 1 s after each ROLLING edge, tick 4 s, weight sync 60 s, janitor 10 s, LLM ~1.5 s lognormal.
 * `dev`: boot 1 s + 1.5 s (the /start_engine answer is held ≥ 1 s as on the real server: a client that caches the
 * status for 0.5 s must not read a faster answer as OFFLINE), registration 0.1 s after each ROLLING edge, tick 0.5 s, weight sync 1 s (ROLLING_POST + WEIGHT_SYNCING ≈ 1–1.5 s, shorter than
 * the Python client's 5 s status poll but still observable by a 1 s poller), janitor 1 s, LLM ~60 ms.
 * `fast`: tens of milliseconds everywhere, LLM instant — for tests.
 * `slow`: `dev` with LLM calls of median 20 s (lognormal σ 0.8, capped at 5 min): minutes-long episodes.
 */
export const PROFILES: Record<EmulatorProfile, EmulatorTimings> = {
  real: {
    startEngineMs: 2_000,
    bootMs: 60_000,
    registrationDelayMs: 1_000,
    tickMs: 4_000,
    weightSyncMs: 60_000,
    stopEngineMs: 3_000,
    janitorIntervalMs: 10_000,
    endAckMs: 5,
    llmLatency: { kind: "lognormal", medianMs: 1_500, sigma: 0.5, maxMs: 60_000 },
    ...common,
  },
  dev: DEV_TIMINGS,
  fast: {
    startEngineMs: 10,
    bootMs: 20,
    registrationDelayMs: 0,
    tickMs: 10,
    weightSyncMs: 20,
    stopEngineMs: 0,
    janitorIntervalMs: 50,
    endAckMs: 0,
    llmLatency: { kind: "fixed", ms: 0 },
    ...common,
  },
  slow: { ...DEV_TIMINGS, llmLatency: { kind: "lognormal", medianMs: 20_000, sigma: 0.8, maxMs: 300_000 } },
};

/**
 * How the emulated server behaves besides its timings, as the upstream server does (each can be switched off to
 * test a client without it).
 */
export const ServerManners = z.object({
  resetAfter500: z.boolean().describe(
    "uvicorn closes a keep-alive connection after a 500: the next request on that connection is reset (TCP RST) unanswered; only on a real socket (startEmulator)",
  ),
  repeatStatusPosts: z.boolean().describe(
    "the trainer posts ROLLING_POST twice (stop callback, then its next tick) and WEIGHT_SYNCING twice (without, then with global_step)",
  ),
  chatStreamKeepalive: z.boolean().describe(
    "newest server (llm-routes §2, §5): a stream:true chat call opens its SSE at once with `: keepalive` frames every 5 s while the engine generates; off = the recorded server (4978091): the stream is sent whole after the generation",
  ),
  responsesToolCallEvents: z.boolean().describe(
    "Responses streams also announce function_call items (output_item.added, function_call_arguments.delta/done, output_item.done) as OpenAI's API does; off = upstream (llm-routes §3.3): function calls only in response.completed",
  ),
});
export type ServerManners = z.infer<typeof ServerManners>;

/**
 * Default manners, as on the upstream server: a reset after a 500 and repeated status posts on; the chat stream as
 * the recorded server sends it (no keepalives); function calls of a Responses stream only in `response.completed`.
 */
export const DEFAULT_MANNERS: ServerManners = { resetAfter500: true, repeatStatusPosts: true, chatStreamKeepalive: false, responsesToolCallEvents: false };

/** Knobs of the simulated policy (a simulator, not a model; see policy/policy.ts). */
export const PolicyOptions = z.object({
  initialAccuracy: z.number().min(0).max(1).describe("p at global step 1: probability of a correct answer"),
  maxAccuracy: z.number().min(0).max(1).describe("cap of p"),
  learningRate: z.number().min(0).describe("p ← min(pMax, p + lr · meanReward · (1 − p)) at each weight sync"),
  malformedRate: z.number().min(0).max(1).describe("share of wrong answers that have no box / no answer tag"),
  toolCallRate: z.number().min(0).max(1).describe("share of episodes that call an offered tool first"),
});
export type PolicyOptions = z.infer<typeof PolicyOptions>;

/** Default policy knobs: p₀ 0.25 (a 3-step run visibly climbs), pMax 0.95, lr 1.0, 25 % malformed, 50 % tool use. */
export const DEFAULT_POLICY: PolicyOptions = {
  initialAccuracy: 0.25,
  maxAccuracy: 0.95,
  learningRate: 1.0,
  malformedRate: 0.25,
  toolCallRate: 0.5,
};

/** Forward chat calls to a real OpenAI-compatible server instead of the simulated policy. */
export const UpstreamOptions = z.object({
  baseUrl: z.url().describe("e.g. https://api.openai.com/v1 (POST {baseUrl}/chat/completions)"),
  apiKey: z.string().describe("sent as Authorization: Bearer <apiKey>"),
  model: z.string().optional().describe("model to ask for; default: the request's own model"),
  timeoutMs: z.number().positive().default(300_000).describe("per upstream call, milliseconds"),
});
export type UpstreamOptions = z.input<typeof UpstreamOptions>;

/** The plain-data part of the emulator options, validated once at creation. */
export const EmulatorConfigSchema = z.object({
  profile: EmulatorProfile.default("real"),
  timings: EmulatorTimings.partial().default({}),
  seed: z.number().int().default(0),
  simulateEngine: z.boolean().default(true),
  policy: PolicyOptions.partial().default({}),
  manners: ServerManners.partial().default({}),
  upstream: UpstreamOptions.optional(),
  publicBaseUrl: z.string().default("http://127.0.0.1:10086/v1").describe("openai_base_url the engine registers"),
  workDir: z.string().optional().describe("base of server_experiment_dir and temp_ajet_code_path; default cwd"),
  faults: z.array(FaultSpec).default([]).describe("faults injected by kind (faults.ts); `--fault KIND[:RATE[:MAX]]`"),
  requireHeaders: z
    .record(z.string().min(1), z.string())
    .default({})
    .describe("headers every request must carry with exactly these values (an access gateway in front of the server); else 401"),
});

/** Resolved configuration: the profile's timings with overrides applied. */
export interface ResolvedEmulatorConfig {
  profile: EmulatorProfile;
  timings: EmulatorTimings;
  seed: number;
  simulateEngine: boolean;
  policy: PolicyOptions;
  manners: ServerManners;
  upstream: z.output<typeof UpstreamOptions> | undefined;
  publicBaseUrl: string;
  workDir: string;
  faults: z.output<typeof FaultSpec>[];
  /** header name (lowercase) → required value; empty: no gateway */
  requireHeaders: Record<string, string>;
}

/**
 * Validates and resolves the plain-data options.
 * @throws Error naming the bad field and the fix, e.g. `emulator option timings.tickMs: Too small: expected number to be >=0`.
 */
export function resolveEmulatorConfig(input: unknown): ResolvedEmulatorConfig {
  const parsed = EmulatorConfigSchema.safeParse(input ?? {});
  if (!parsed.success) {
    const where = parsed.error.issues.map((i) => `emulator option ${i.path.join(".") || "(root)"}: ${i.message}`);
    throw new Error(where.join("; "));
  }
  const o = parsed.data;
  return {
    profile: o.profile,
    timings: { ...PROFILES[o.profile], ...o.timings },
    seed: o.seed,
    simulateEngine: o.simulateEngine,
    policy: { ...DEFAULT_POLICY, ...o.policy },
    manners: { ...DEFAULT_MANNERS, ...o.manners },
    upstream: o.upstream,
    publicBaseUrl: o.publicBaseUrl,
    workDir: o.workDir ?? process.cwd(),
    faults: o.faults,
    requireHeaders: Object.fromEntries(Object.entries(o.requireHeaders).map(([k, v]) => [k.toLowerCase(), v])),
  };
}
