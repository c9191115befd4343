/**
 * @module sandbox/attempt — the sandbox of one episode attempt, from intent to confirmed destroy
 * (docs/design/sandboxes.md): `ctx.sandbox()` asks the run's ledger first (the row is recorded before anything is
 * created; the ledger paces creations), then creates it under the attempt's own id (retried: a create is
 * idempotent by id), then sends its first request — the files, or a listing — retried too, since a fresh
 * sandbox's first connection is the one that drops (strands-env #263). The attempt's end destroys it (retried
 * until the backend confirms) and tells the ledger; what the attempt could not confirm, the ledger's sweep
 * destroys. The first infrastructure or configuration failure decides the attempt's outcome, whatever the
 * function returns ({@link AttemptSandboxes.fatal}): an abort, never a reward.
 */
import { AbortCause } from "../port/abort.ts";
import { EPISODE_LIFETIME_FACTOR } from "../protocol/index.ts";
import { isInstanceType, INSTANCE_TYPE_NAMES, sandboxIdFor, type EpisodeSandboxConfig, type SandboxEnd, type SandboxLedgerPort } from "../port/sandbox.ts";
import { backoffDelayMs, type BackoffPolicy } from "../util/backoff.ts";
import type { SandboxBackend } from "./backend.ts";
import { secretScreen } from "./secret-screen.ts";
import { sandboxSession, type SandboxCallRecord } from "./session.ts";
import { SANDBOX_DISABLED_MESSAGE, SandboxError, type Sandbox, type SandboxOptions } from "./types.ts";

/** Where an attempt's sandboxes come from: the backend, and the run's ledger (absent in plain tests). */
export interface SandboxProvider {
  backend: SandboxBackend | null;
  ledger?: SandboxLedgerPort;
  /** why `backend` is null, as one line naming the fix (shown when a function asks for a sandbox) */
  missing?: string;
}

/** What one attempt's sandboxes need. */
export interface AttemptSandboxDeps {
  provider: SandboxProvider | undefined;
  /** the run's `sandbox` block (from the queue message); absent = the run has no sandboxes */
  config: EpisodeSandboxConfig | undefined;
  runId: string;
  episodeKey: string;
  attempt: number;
  dispatchId: number;
  discardEpisodeTimeoutSeconds: number;
  /** every secret the attempt holds, by name (run's and operator's) */
  secrets: Readonly<Record<string, string>>;
  /** the episode keys: never into a sandbox */
  episodeKeys: readonly string[];
  /** the attempt's stop */
  signal: AbortSignal;
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  random(): number;
  record?(r: SandboxCallRecord): void;
  log: { warn(msg: string, fields?: Record<string, unknown>): void; info(msg: string, fields?: Record<string, unknown>): void };
}

/** What the attempt's end tells about its sandbox (for the log and the run's figures). */
export interface AttemptSandboxSummary {
  sandboxId: string | null;
  end: SandboxEnd | null;
  seconds: number;
  commands: number;
  failure: string | null;
}

/** The sandbox of one attempt. */
export interface AttemptSandboxes {
  /**
   * The attempt's sandbox, made on the first call; later calls give the same one.
   * @throws SandboxError `disabled` | `config` | `secret` | `infrastructure` | `closed`
   */
  get(options?: SandboxOptions): Promise<Sandbox>;
  /** the failure that decides the attempt (abort with this cause: a sandbox cause, or the stop's), or null */
  fatal(): { cause: string; error: SandboxError } | null;
  /** Destroys the sandbox (confirmed, or left to the run's sweep) and tells the ledger. Never throws; idempotent. */
  close(): Promise<AttemptSandboxSummary>;
}

/** Back-off of the create, the first request and the destroy: 0.5 s doubling to 8 s, full jitter (E2B's harness: `uniform(0, min(cap, 2^n))`). */
export const SANDBOX_RETRY: BackoffPolicy = { firstMs: 500, maxMs: 8_000, jitter: [0, 1] };
/** Tries of a create and of the first request to a new sandbox (strands-env #263 needed 5). */
export const CREATE_TRIES = 5;
/** Tries of a destroy within the attempt; beyond, the run's sweep goes on. */
export const DESTROY_TRIES = 4;
/** Tries of a ledger call (both are idempotent by sandbox id). */
const LEDGER_TRIES = 3;

const FATAL_CAUSE: Partial<Record<SandboxError["kind"], AbortCause>> = {
  infrastructure: AbortCause.sandboxFailure,
  disabled: AbortCause.sandboxDisabled,
  config: AbortCause.sandboxMisconfigured,
  secret: AbortCause.sandboxSecret,
};

/** A backend error that a new try may fix: an infrastructure failure other than "destroyed before" (410). */
function worthAnotherTry(err: unknown): boolean {
  return err instanceof SandboxError && err.kind === "infrastructure" && err.code !== "sandbox_destroyed";
}

/** The sandbox scope of one attempt. */
export function attemptSandboxes(d: AttemptSandboxDeps): AttemptSandboxes {
  let fatal: { cause: string; error: SandboxError } | null = null;
  let opening: Promise<Sandbox> | null = null;
  let openedWith: SandboxOptions | undefined;
  let recorded: { id: string; atMs: number; created: boolean } | null = null;
  let session: ReturnType<typeof sandboxSession> | null = null;
  let closed = false;
  let closing: Promise<AttemptSandboxSummary> | null = null;
  /**
   * The failures that decide the attempt: infrastructure and configuration ones, and a call cut by the attempt's
   * stop (the run stopped, the idle deadline…: the function's answer would rest on a command that never finished),
   * which aborts it with the stop's own cause.
   */
  const setFatal = (err: SandboxError) => {
    const stopCause = err.kind === "closed" && d.signal.aborted ? ((d.signal.reason as { reason?: string } | undefined)?.reason ?? AbortCause.aborted) : undefined;
    const cause = stopCause ?? FATAL_CAUSE[err.kind];
    if (cause && !fatal && !closed) fatal = { cause, error: err };
    return err;
  };
  const allowed = d.config?.secrets ?? [];
  const screen = secretScreen(d.secrets, allowed, d.episodeKeys.map((value, i) => ({ name: `episode key ${i + 1}`, value })));

  /** Retries `fn` while it fails with an infrastructure error a new try may fix. */
  const withTries = async <T>(what: string, tries: number, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> => {
    for (let n = 1; ; n++) {
      try {
        return await fn();
      } catch (err) {
        if (n >= tries || !worthAnotherTry(err) || signal?.aborted) throw err;
        const wait = backoffDelayMs(SANDBOX_RETRY, n, d.random());
        d.log.warn(`sandbox ${what} failed; trying again`, { attempt: n, waitMs: Math.round(wait), error: (err as Error).message });
        await d.sleep(wait, signal);
      }
    }
  };

  const open = async (options: SandboxOptions): Promise<Sandbox> => {
    const config = d.config;
    if (!config?.enabled) throw new SandboxError("disabled", SANDBOX_DISABLED_MESSAGE);
    const instanceType = options.instanceType ?? config.instanceType;
    if (!isInstanceType(instanceType)) {
      throw new SandboxError("config", `ctx.sandbox(): instanceType ${JSON.stringify(instanceType)} is not an instance type; use one of ${INSTANCE_TYPE_NAMES.join(", ")}`);
    }
    const image = options.image ?? "default";
    if (typeof image !== "string" || image === "") throw new SandboxError("config", 'ctx.sandbox(): image must be a non-empty string ("default" for Python 3 and Node)');
    screen.checkAll("ctx.sandbox() env", options.env);
    const files = Object.entries(options.files ?? {});
    for (const [path, content] of files) {
      if (typeof content !== "string") throw new SandboxError("config", `ctx.sandbox() files.${path} must be a string`);
      if (path === "" || path.startsWith("/")) throw new SandboxError("config", `ctx.sandbox() files: path ${JSON.stringify(path)} must be relative to the sandbox's workdir`);
      screen.check(`ctx.sandbox() files.${path}`, content);
    }
    const backend = d.provider?.backend;
    if (!backend) {
      throw new SandboxError("config", d.provider?.missing ?? "ctx.sandbox(): the run has sandboxes, but this Worker has no sandbox backend; set AJET_SANDBOX_URL and AJET_SANDBOX_TOKEN (the local sandbox server) or bind the Sandbox Durable Object (Cloudflare)");
    }
    const id = sandboxIdFor(d.runId, d.episodeKey, d.attempt, 0);
    // 1. the ledger records the sandbox before anything is created, and paces the creations
    const ledger = d.provider?.ledger;
    if (ledger) {
      for (;;) {
        const answer = await withLedger("intent", () => ledger.sandboxIntent({ episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, sandboxId: id, backend: backend.name, instanceType }));
        if (answer.status === "stale") throw new SandboxError("closed", `ctx.sandbox(): the run no longer holds this attempt (${answer.reason}); nothing was created`);
        if (answer.status === "go") {
          recorded = { id, atMs: d.now(), created: false };
          if (answer.delayMs > 0) await d.sleep(answer.delayMs, d.signal);
          break;
        }
        await d.sleep(answer.retryInMs, d.signal);
      }
    }
    recorded ??= { id, atMs: d.now(), created: false };
    // 2. the create, under the attempt's own id: sent again on a failure (same id = same sandbox)
    const atMs = d.now();
    const ttlSeconds = Math.ceil(EPISODE_LIFETIME_FACTOR * d.discardEpisodeTimeoutSeconds + 120);
    try {
      await withTries("create", CREATE_TRIES, () => backend.create(id, { instanceType, image, env: { ...(options.env ?? {}) }, ttlSeconds }, d.signal), d.signal);
    } catch (err) {
      const e = err instanceof SandboxError ? err : new SandboxError("infrastructure", `sandbox create failed: ${String(err)}`, { cause: err });
      d.record?.({ atMs, sandboxId: id, op: "create", input: `${instanceType} ${image}`, durationMs: d.now() - atMs, error: `${e.kind}: ${e.message}` });
      throw e;
    }
    recorded.created = true;
    d.record?.({ atMs, sandboxId: id, op: "create", input: `${instanceType} ${image}`, durationMs: d.now() - atMs });
    // 3. the first request to the new sandbox (idempotent: the files, or a listing), sent again on a failure
    await withTries("first request", CREATE_TRIES, async () => {
      if (files.length === 0) await backend.listFiles(id, ".", d.signal);
      for (const [path, content] of files) await backend.writeFile(id, path, content, d.signal);
    }, d.signal);
    session = sandboxSession({
      id,
      backend,
      commandTimeoutSeconds: config.commandTimeoutSeconds,
      maxOutputBytes: config.maxOutputBytes,
      screen,
      signal: d.signal,
      now: d.now,
      ...(d.record ? { record: d.record } : {}),
      onFailure: (e) => setFatal(e),
      isClosed: () => closed,
    });
    return session;
  };

  /** A ledger call, tried up to 3 times (idempotent by sandbox id); a failure is an infrastructure failure. */
  const withLedger = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    for (let n = 1; ; n++) {
      try {
        return await fn();
      } catch (err) {
        if (n >= LEDGER_TRIES || d.signal.aborted) throw new SandboxError("infrastructure", `sandbox ${what}: the run's ledger could not be reached: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
        await d.sleep(backoffDelayMs(SANDBOX_RETRY, n, d.random()), d.signal);
      }
    }
  };

  return {
    get(options = {}) {
      if (closed) return Promise.reject(new SandboxError("closed", "ctx.sandbox(): the attempt is over"));
      if (opening) {
        const same = options === openedWith || Object.keys(options).length === 0 || JSON.stringify(options) === JSON.stringify(openedWith);
        if (!same) return Promise.reject(new SandboxError("config", "ctx.sandbox(): an attempt has one sandbox, already made with other options; call ctx.sandbox() without options to get it"));
        return opening;
      }
      openedWith = options;
      opening = open(options).catch((err: unknown) => {
        const e = err instanceof SandboxError ? err : d.signal.aborted ? new SandboxError("closed", "ctx.sandbox(): the attempt was stopped", { cause: err }) : new SandboxError("infrastructure", `ctx.sandbox(): ${String(err)}`, { cause: err });
        throw setFatal(e);
      });
      return opening;
    },
    fatal: () => fatal,
    close() {
      return (closing ??= (async (): Promise<AttemptSandboxSummary> => {
        closed = true;
        const failure = fatal?.cause === AbortCause.sandboxFailure ? fatal.error.message : null;
        if (!recorded) return { sandboxId: null, end: null, seconds: 0, commands: 0, failure };
        const { id, atMs } = recorded;
        const backend = d.provider!.backend!;
        // a create that failed may still have made it (its answer lost): destroy either way
        let end: SandboxEnd = recorded.created ? "destroyed" : "create_failed";
        const destroyAt = d.now();
        try {
          await withTries("destroy", DESTROY_TRIES, () => backend.destroy(id));
          d.record?.({ atMs: destroyAt, sandboxId: id, op: "destroy", input: id, durationMs: d.now() - destroyAt });
        } catch (err) {
          end = "destroy_unconfirmed";
          d.log.warn("sandbox destroy not confirmed; the run's sweep destroys it", { sandboxId: id, error: err instanceof Error ? err.message : String(err) });
          d.record?.({ atMs: destroyAt, sandboxId: id, op: "destroy", input: id, durationMs: d.now() - destroyAt, error: String(err) });
        }
        const summary: AttemptSandboxSummary = { sandboxId: id, end, seconds: (d.now() - atMs) / 1000, commands: session?.calls ?? 0, failure };
        const ledger = d.provider?.ledger;
        if (ledger) {
          for (let n = 1; n <= LEDGER_TRIES; n++) {
            try {
              await ledger.sandboxReleased({ episodeKey: d.episodeKey, attempt: d.attempt, sandboxId: id, end, seconds: summary.seconds, commands: summary.commands, ...(failure ? { failure } : {}) });
              break;
            } catch (err) {
              if (n === LEDGER_TRIES) d.log.warn("sandbox release not reported; the run's sweep finds it", { sandboxId: id, error: String(err) });
              else await d.sleep(backoffDelayMs(SANDBOX_RETRY, n, d.random())).catch(() => undefined);
            }
          }
        }
        return summary;
      })());
    },
  };
}
