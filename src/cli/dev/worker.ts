/**
 * @module cli/dev/worker — `startLocalWorker`: the Workers (`wrangler.toml`: hono API, RolloutScheduler DO, episode
 * queue; `wrangler.episode.toml`: the episode Worker) in local workerd, hosted by a detached child process (worker-host.ts) in its own process group. Why a
 * child: a terminal Ctrl-C signals the whole foreground process group, and workerd dies on SIGINT — the run could
 * then not drain (episodes left claimed). Detached, workerd lives until `dispose()`, and the whole group can be
 * killed as a last resort, so no workerd is orphaned.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { findProject } from "./project.ts";
import { DISPATCH_ENV, type HostMessage, type ParentMessage, type WranglerLogLevel } from "./worker-ipc.ts";

/** Environment every wrangler start gets, so users need not set it: no metrics, no Request.cf fetch, no banner, no config reload. */
export const WRANGLER_QUIET_ENV: Readonly<Record<string, string>> = {
  WRANGLER_SEND_METRICS: "false",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_HIDE_BANNER: "true",
  WRANGLER_CI_DISABLE_CONFIG_WATCHING: "true",
};

/** The episode Worker's wrangler config, next to the main Worker's `wrangler.toml` (docs/design/episode-worker.md). */
export const EPISODE_CONFIG_FILE = "wrangler.episode.toml";


/** A Worker running in local workerd. */
export interface LocalWorker {
  /** base URL, e.g. `http://127.0.0.1:40123` (no trailing slash) */
  url: string;
  /** pid of the host process (also its process group id) */
  hostPid: number;
  /** the dir holding the DO's SQLite and the queue: a temp dir deleted at dispose, or the one given (kept) */
  persistDir: string;
  /** this session's API token (random, generated at start; `Authorization: Bearer <token>`) */
  token: string;
  /** Stops workerd and the host, deletes the persist dir. Idempotent; never throws. */
  dispose(): Promise<void>;
}

/** Options of {@link startLocalWorker}. */
/** The `--log-level` of `ajet-edge dev`: the Worker's (and the functions' `ctx.log`) lines at this level and above. */
export type WorkerLogLevel = "debug" | "info" | "warn" | "error";

/** wrangler's level for a {@link WorkerLogLevel}: `info` lines are the Worker's console.log, wrangler's `log`. */
export function wranglerLogLevel(level: WorkerLogLevel): WranglerLogLevel {
  return level === "info" ? "log" : level;
}

export interface StartLocalWorkerOptions {
  /** the Worker's console lines shown (default warn: warnings and errors only) */
  logLevel?: WorkerLogLevel;
  /** wrangler config; default the `wrangler.toml` of the project at the current directory or above (`findProject`) */
  configPath?: string;
  /** the episode Worker's wrangler config; default {@link EPISODE_CONFIG_FILE} next to `configPath` */
  episodeConfigPath?: string;
  /** one line of the host's stdout/stderr (wrangler warnings, the Worker's console.warn/error) */
  onLog?: (line: string) => void;
  /** aborting stops the start and kills the host */
  signal?: AbortSignal;
  /** how long the start may take, milliseconds (default 120 000: the first start bundles with esbuild) */
  startTimeoutMs?: number;
  /** how long `dispose` waits for a clean exit before killing the process group, milliseconds (default 15 000) */
  disposeTimeoutMs?: number;
  /**
   * hosts the Worker may connect to (`AJET_ALLOWED_HOSTS` entries); default {@link DEV_ALLOWED_HOSTS} (loopback:
   * the local emulators). Add the host:port of servers given on the command line.
   */
  allowedHosts?: readonly string[];
  /** keep the Worker's state (Durable Objects, queue) in this dir and leave it at dispose (e.g. a Worker restarted on the same state); default a temp dir, deleted */
  persistDir?: string;
  /** more Worker vars (strings), e.g. limits; the token and the allowed hosts are set by this function */
  vars?: Readonly<Record<string, string>>;
  /**
   * how the scheduler hands out episodes (the Worker's `AJET_DISPATCH`): `direct` (default here: one invocation
   * per episode, every episode in flight at once) or `queue` (miniflare's local queue: one batch at a time)
   */
  dispatch?: "direct" | "queue";
}

/** What a dev Worker may connect to by default: loopback, where `ajet-edge dev` starts its emulators. */
export const DEV_ALLOWED_HOSTS: readonly string[] = ["127.0.0.1", "localhost", "[::1]"];

/** A fresh random API token (64 hex digits) for one dev session. */
export function newSessionToken(): string {
  return randomBytes(32).toString("hex");
}

/** The file of a kept persist dir that holds its Worker's `AJET_SECRETS_KEY` (a resumed run must decrypt its secrets). */
export const DEV_SECRETS_KEY_FILE = "secrets-key";

/**
 * The local Worker's operator key for secrets at rest (edge/ground/secrets-at-rest): a fresh random one per session,
 * or, for a kept persist dir, the one stored in it (created on first use, mode 0600), so a resumed run's secrets
 * still decrypt. Not a production key: deployed Workers get theirs with `wrangler secret put AJET_SECRETS_KEY`.
 */
export function devSecretsKey(persistDir?: string): string {
  if (!persistDir) return randomBytes(32).toString("hex");
  const file = join(resolve(persistDir), DEV_SECRETS_KEY_FILE);
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(resolve(persistDir), { recursive: true });
  const key = randomBytes(32).toString("hex");
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

/** The Worker could not be started. */
export class LocalWorkerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LocalWorkerError";
  }
}

function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(false), timeoutMs);
    const done = (exited: boolean) => {
      clearTimeout(timer);
      child.off("exit", onExit);
      resolve(exited);
    };
    const onExit = () => done(true);
    child.once("exit", onExit);
  });
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Starts the Worker in local workerd with a fresh persist dir (or the given one).
 * @returns the running Worker once it answers on its URL
 * @throws LocalWorkerError when the host fails, exits, or does not become ready within `startTimeoutMs`;
 *   the signal's reason (an AbortError) when aborted. The host is killed in every failure case.
 */
export async function startLocalWorker(options: StartLocalWorkerOptions = {}): Promise<LocalWorker> {
  const configPath = options.configPath ?? findProject().wranglerConfig;
  // compiled (the installed package): the host is plain JS; in this repository it is TypeScript, loaded by tsx
  const compiled = import.meta.url.endsWith(".js");
  const hostPath = fileURLToPath(new URL(compiled ? "./worker-host.js" : "./worker-host.ts", import.meta.url));
  const loader = compiled ? [] : ["--import", pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href];
  const episodeConfigPath = options.episodeConfigPath ?? join(dirname(configPath), EPISODE_CONFIG_FILE);
  const child = spawn(process.execPath, [...loader, hostPath, configPath, episodeConfigPath], {
    cwd: dirname(configPath),
    detached: true,
    stdio: ["ignore", "pipe", "pipe", "ipc"],
    env: { ...process.env, ...WRANGLER_QUIET_ENV, WRANGLER_LOG: process.env["WRANGLER_LOG"] ?? "warn", [DISPATCH_ENV]: options.dispatch ?? "direct" },
  });
  const pid = child.pid;
  if (pid === undefined) throw new LocalWorkerError("could not spawn the Worker host process");
  // the token and vars go over IPC: never in argv (ps shows it) or the environment (inherited by workerd's children)
  const token = newSessionToken();
  const vars: Record<string, string> = { AJET_SECRETS_KEY: options.vars?.["AJET_SECRETS_KEY"] ?? devSecretsKey(options.persistDir), ...options.vars, AJET_API_TOKEN: token, AJET_ALLOWED_HOSTS: (options.allowedHosts ?? DEV_ALLOWED_HOSTS).join(",") };
  child.send({ type: "start", vars, logLevel: wranglerLogLevel(options.logLevel ?? "warn"), ...(options.persistDir ? { persistDir: resolve(options.persistDir) } : {}) } satisfies ParentMessage);
  const killOnExit = () => killGroup(pid, "SIGKILL");
  process.on("exit", killOnExit);
  for (const stream of [child.stdout, child.stderr]) {
    if (stream) createInterface({ input: stream }).on("line", (line) => options.onLog?.(line));
  }

  let disposed: Promise<void> | null = null;
  const dispose = () =>
    (disposed ??= (async () => {
      if (child.connected) child.send({ type: "dispose" });
      if (!(await waitForExit(child, options.disposeTimeoutMs ?? 15_000))) {
        killGroup(pid, "SIGTERM");
        if (!(await waitForExit(child, 3_000))) killGroup(pid, "SIGKILL");
      }
      killGroup(pid, "SIGKILL"); // workerd shares the group; make sure nothing of it is left
      process.off("exit", killOnExit);
    })());

  try {
    const ready = await new Promise<Extract<HostMessage, { type: "ready" }>>((resolve, reject) => {
      const timeoutMs = options.startTimeoutMs ?? 120_000;
      const timer = setTimeout(() => fail(new LocalWorkerError(`the local Worker did not start within ${timeoutMs / 1000} s`)), timeoutMs);
      const onAbort = () => fail(options.signal?.reason ?? new Error("aborted"));
      const onMessage = (m: HostMessage) =>
        m.type === "ready" ? settle(() => resolve(m)) : fail(new LocalWorkerError(`the local Worker failed to start: ${m.message}`));
      const onExit = (code: number | null, signal: string | null) =>
        fail(new LocalWorkerError(`the local Worker host exited before it was ready (${signal ?? `code ${code}`})`));
      const onError = (err: Error) => fail(new LocalWorkerError(`the local Worker host failed: ${err.message}`));
      const settle = (finish: () => void) => {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        child.off("message", onMessage).off("exit", onExit).off("error", onError);
        finish();
      };
      const fail = (err: unknown) => settle(() => reject(err));
      child.on("message", onMessage).on("exit", onExit).on("error", onError);
      options.signal?.addEventListener("abort", onAbort, { once: true });
      if (options.signal?.aborted) onAbort();
    });
    return { url: ready.url.replace(/\/+$/, ""), hostPid: pid, persistDir: ready.persistDir, token, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}
