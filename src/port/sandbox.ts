/**
 * @module port/sandbox — the words about sandboxes that the run's Durable Object, the episode invocation and the
 * sandbox backends share (docs/design/sandboxes.md): the run spec's `sandbox` block ({@link SandboxRunConfig}), the
 * instance types with the platform's published sizes, the defaults and where they come from, the sandbox id of an
 * attempt, and the ledger's two calls ({@link SandboxLedgerPort}): intent before create, release after destroy.
 */
import * as z from "zod/mini";
import "../protocol/zod-locale.ts"; // zod's English messages for these schemas

/**
 * Cloudflare Containers' instance types (developers.cloudflare.com/containers/platform/limits/, read for
 * ../shared/spec/sandbox-notes.md §1.4): vCPU share, memory (MiB) and disk (MB). The local sandbox server applies
 * the memory (RLIMIT_DATA) and disk (RLIMIT_FSIZE, per file) of the type; it cannot give a CPU share without
 * cgroups, so there CPU is capped in seconds only.
 */
export const INSTANCE_TYPES = {
  lite: { vcpu: 1 / 16, memoryMiB: 256, diskMB: 2_000 },
  basic: { vcpu: 1 / 4, memoryMiB: 1_024, diskMB: 4_000 },
  "standard-1": { vcpu: 1 / 2, memoryMiB: 4_096, diskMB: 8_000 },
  "standard-2": { vcpu: 1, memoryMiB: 6_144, diskMB: 12_000 },
  "standard-3": { vcpu: 2, memoryMiB: 8_192, diskMB: 16_000 },
  "standard-4": { vcpu: 4, memoryMiB: 12_288, diskMB: 20_000 },
} as const;
/** One of {@link INSTANCE_TYPES}' names. */
export type InstanceType = keyof typeof INSTANCE_TYPES;
/** The instance type names, in size order. */
export const INSTANCE_TYPE_NAMES = Object.keys(INSTANCE_TYPES) as InstanceType[];

/** True when `name` is a known instance type. */
export function isInstanceType(name: unknown): name is InstanceType {
  return typeof name === "string" && Object.hasOwn(INSTANCE_TYPES, name);
}

/**
 * The defaults of a run's `sandbox` block, and why:
 * - `instanceType` `lite`: the smallest type; a GSM8K program needs a few MiB.
 * - `createsPerSecond` 10 per run (with jitter): Cloudflare's warm pool refills in batches of 5 (at most 20,
 *   `WARM_POOL_SCALE_BATCH_SIZE`, sandbox-sdk #799); 50-wide create bursts failed before 0.12.5 (#794); a
 *   self-hosted E2B gateway dropped connections at 31–57 creates/s and had no aborts at ~20/s (strands-env #204);
 *   E2B Pro allows 5 creates/s. 10/s stays under every observed failure rate.
 * - `maxLive` (unset): the run's `maxParallel` — one sandbox per attempt in flight. Destroys not yet confirmed
 *   count as live, so a backend that stops confirming pauses creation instead of piling up. Cloudflare's account
 *   limit (1,500 concurrent vCPU, 6 TiB memory) allows 24,000 `lite` or 6,000 `basic` instances at once; the
 *   containers entry's `max_instances` in wrangler.toml is the binding's own cap — keep `maxLive` at or under it.
 * - `commandTimeoutSeconds` 60 and `maxOutputBytes` 1 MiB per command (stdout and stderr together): a model's
 *   program that runs longer or prints more has failed; the cap also bounds the invocation's memory (128 MB).
 */
export const SANDBOX_DEFAULTS = {
  instanceType: "lite" as InstanceType,
  createsPerSecond: 10,
  commandTimeoutSeconds: 60,
  maxOutputBytes: 1024 * 1024,
} as const;

/** The most output one command may be allowed (bytes): above it the invocation's 128 MB would be at risk. */
export const MAX_OUTPUT_BYTES_LIMIT = 16 * 1024 * 1024;

const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The run spec's `sandbox` block: present (even `{}`) = the run's functions may ask for a sandbox
 * (`ctx.sandbox()`); absent = they may not. `secrets` names the run's (or operator's) secrets that may enter a
 * sandbox (as env values, file contents or command text); no other secret ever does, and the judge's never.
 */
export const SandboxRunConfig = z.strictObject({
  /** false: the block is kept but no sandbox is given */
  enabled: z._default(z.boolean({ error: "sandbox.enabled must be true or false" }), true),
  /** default instance type of the run's sandboxes (ctx.sandbox({instanceType}) may pick another) */
  instanceType: z._default(
    z.enum(INSTANCE_TYPE_NAMES as [InstanceType, ...InstanceType[]], { error: `sandbox.instanceType must be one of ${INSTANCE_TYPE_NAMES.join(", ")}` }),
    SANDBOX_DEFAULTS.instanceType,
  ),
  /** sandboxes of this run alive at once, at most (default the run's maxParallel) */
  maxLive: z.optional(
    z
      .number({ error: "sandbox.maxLive must be a number" })
      .check(z.int({ error: "sandbox.maxLive must be a whole number, e.g. 64" }), z.gte(1, { error: "sandbox.maxLive must be ≥ 1, e.g. 64" })),
  ),
  /** sandbox creations per second for this run, jittered (default 10) */
  createsPerSecond: z._default(
    z
      .number({ error: "sandbox.createsPerSecond must be a number" })
      .check(z.positive({ error: "sandbox.createsPerSecond must be > 0, e.g. 10" }), z.lte(1000, { error: "sandbox.createsPerSecond must be ≤ 1000, e.g. 10" })),
    SANDBOX_DEFAULTS.createsPerSecond,
  ),
  /** default and longest wall time of one command or code run (seconds) */
  commandTimeoutSeconds: z._default(
    z
      .number({ error: "sandbox.commandTimeoutSeconds must be a number of seconds" })
      .check(
        z.positive({ error: "sandbox.commandTimeoutSeconds must be > 0 seconds, e.g. 60" }),
        z.lte(3600, { error: "sandbox.commandTimeoutSeconds must be ≤ 3600 seconds, e.g. 60" }),
      ),
    SANDBOX_DEFAULTS.commandTimeoutSeconds,
  ),
  /** stdout + stderr of one command, at most (bytes) */
  maxOutputBytes: z._default(
    z
      .number({ error: "sandbox.maxOutputBytes must be a number of bytes" })
      .check(
        z.int({ error: "sandbox.maxOutputBytes must be a whole number of bytes, e.g. 1048576" }),
        z.gte(1024, { error: "sandbox.maxOutputBytes must be ≥ 1024 bytes, e.g. 1048576" }),
        z.lte(MAX_OUTPUT_BYTES_LIMIT, { error: `sandbox.maxOutputBytes must be ≤ ${MAX_OUTPUT_BYTES_LIMIT} bytes (16 MiB), e.g. 1048576` }),
      ),
    SANDBOX_DEFAULTS.maxOutputBytes,
  ),
  /** names of secrets allowed into a sandbox; the judge's never are */
  secrets: z._default(z.array(z.string().check(z.regex(SECRET_NAME, { error: "sandbox.secrets lists secret names such as GITHUB_TOKEN" }))), []),
});
/** A resolved `sandbox` block (every default filled, except `maxLive`). */
export type SandboxRunConfig = z.output<typeof SandboxRunConfig>;
/** What a client may send as `sandbox`. */
export type SandboxRunConfigInput = z.input<typeof SandboxRunConfig>;

/**
 * The run's sandbox settings as the episode invocation gets them (in the queue message): the resolved block with
 * `maxLive` resolved too. Absent = the run has no sandboxes.
 */
export const EpisodeSandboxConfig = z.extend(SandboxRunConfig, { maxLive: z.int().check(z.gte(1)) });
export type EpisodeSandboxConfig = z.output<typeof EpisodeSandboxConfig>;

/** Which backend runs a sandbox: the local sandbox server (`ajet-edge dev`, tests) or Cloudflare's Sandbox SDK. */
export type SandboxBackendName = "local" | "cloudflare" | (string & {});

/** A 64-bit FNV-1a hash of `text`, as 16 lowercase hex digits (sync: it runs in workerd and Node alike). */
function fnv1a64(text: string): string {
  let h = 0xcbf29ce484222325n;
  const bytes = new TextEncoder().encode(text);
  for (const b of bytes) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, "0");
}

/**
 * The id of the `index`-th sandbox of one attempt: `sb-` + 16 hex of the run + 16 hex of (episode key, attempt,
 * index). Lowercase, 37 characters, the same on every call for the same attempt (so a create sent again is the
 * same sandbox) and never the same for two attempts (a retried attempt gets a fresh sandbox, never the old one).
 */
export function sandboxIdFor(runId: string, episodeKey: string, attempt: number, index = 0): string {
  return `sb-${fnv1a64(runId)}-${fnv1a64(`${episodeKey}\u0000${attempt}\u0000${index}`)}`;
}

/** `sandboxIntent`: the consumer is about to create this sandbox for its attempt. */
export interface SandboxIntent {
  episodeKey: string;
  attempt: number;
  dispatchId: number;
  sandboxId: string;
  backend: SandboxBackendName;
  instanceType: InstanceType;
}

/**
 * The ledger's answer to an intent:
 * - `go`: the row is recorded (before any create); wait `delayMs` (the pacing's jitter), then create.
 * - `wait`: the run is at its live cap or create rate; ask again in `retryInMs`. Nothing was recorded.
 * - `stale`: the attempt is over (or unknown): create nothing.
 */
export type SandboxIntentAnswer =
  | { status: "go"; delayMs: number }
  | { status: "wait"; retryInMs: number; reason: string }
  | { status: "stale"; reason: string };

/** How a sandbox ended, as its attempt saw it. */
export type SandboxEnd =
  /** destroyed and confirmed by the backend */
  | "destroyed"
  /** the create failed (refused, or no answer); destroyed afterwards in case it was made anyway */
  | "create_failed"
  /** the destroy was not confirmed: the run's sweep takes over */
  | "destroy_unconfirmed";

/** `sandboxReleased`: the attempt is done with its sandbox. */
export interface SandboxRelease {
  episodeKey: string;
  attempt: number;
  sandboxId: string;
  end: SandboxEnd;
  /** seconds from the create request to the confirmed destroy (or to now when unconfirmed) */
  seconds: number;
  /** commands and code runs the attempt sent */
  commands: number;
  /** an infrastructure failure seen during the attempt (create refused, sandbox died, backend timeout) */
  failure?: string;
}

/**
 * The run's ledger of sandboxes as an episode invocation reaches it (the run's Durable Object). Both calls are
 * idempotent by `sandboxId`.
 */
export interface SandboxLedgerPort {
  /** records the sandbox against its attempt before it is created (backend, id, created-at) */
  sandboxIntent(intent: SandboxIntent): Promise<SandboxIntentAnswer>;
  /** the attempt is done with the sandbox; `end` says whether the destroy was confirmed */
  sandboxReleased(release: SandboxRelease): Promise<{ status: "applied" | "duplicate" | "unknown" }>;
}

/**
 * The run's sandbox settings as its episodes get them (the queue message's `sandbox`), from its resolved spec:
 * undefined when the run has no `sandbox` block or it is disabled; `maxLive` defaults to the run's `maxParallel`.
 */
export function episodeSandboxConfig(spec: { sandbox?: SandboxRunConfig | undefined; maxParallel: number }): EpisodeSandboxConfig | undefined {
  const s = spec.sandbox;
  if (!s?.enabled) return undefined;
  return { ...s, maxLive: s.maxLive ?? spec.maxParallel };
}

/** The queue message's `sandbox` field for a run (spread into the message): `{}` for a run without sandboxes. */
export function sandboxField(spec: { sandbox?: SandboxRunConfig | undefined; maxParallel: number }): { sandbox?: EpisodeSandboxConfig } {
  const config = episodeSandboxConfig(spec);
  return config ? { sandbox: config } : {};
}
