/**
 * @module cli/dev/worker-host — the child process that hosts the Workers in local workerd: the main Worker (its
 * wrangler config, argv[2]) and the episode Worker (argv[3]), both in one miniflare as `wrangler dev -c main -c
 * episode` runs them (wrangler's `unstable_dev` with both configs), so the episode Worker reaches the run objects by
 * `script_name`, consumes the main Worker's queue and shares its R2 buckets, as when deployed.
 * `startLocalWorker` (worker.ts) spawns it DETACHED, in its own process group, so a
 * terminal Ctrl-C reaches only the CLI: workerd keeps running while the CLI drains the run, then the CLI asks
 * for `dispose`. IPC protocol: parent → child `{type:"start", vars}` first (the Workers' vars: the session's API
 * token and allowed hosts, never in argv or the environment); child → parent `{type:"ready", url, persistDir}` or
 * `{type:"error", message}`; parent → child `{type:"dispose"}`. The host also disposes when the IPC channel closes (the CLI died), so no
 * workerd outlives its CLI. The persist directory is the start message's `persistDir` (kept: `dev --persist`), else
 * a fresh temp dir, deleted at dispose. The parent sets the wrangler environment (`WRANGLER_QUIET_ENV` in
 * worker.ts) and `AJET_EDGE_DISPATCH` (the Workers' `AJET_DISPATCH`).
 *
 * The main Worker gets its vars and, for the `direct` dispatch, the `EPISODE_RUNNER` service binding to the episode
 * Worker's entrypoint as start options; its API tokens go in an env file in the private temp dir (after the
 * project's own `.dev.vars`), so wrangler treats them as secrets and never prints them. The episode Worker's config is written to a private temp dir (mode 0700,
 * deleted at dispose) with its `main` made absolute and the vars added (wrangler takes no start options for a second
 * config); the API tokens are not among them, the episode Worker has no API.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { DISPATCH_ENV, type HostMessage, type ParentMessage } from "./worker-ipc.ts";

/** Vars only the main Worker reads (its API's tokens): never written into the episode Worker's config. */
const MAIN_ONLY_VARS = new Set(["AJET_API_TOKEN", "AJET_READ_TOKEN"]);

/**
 * Writes the main Worker's tokens (hex from `newSessionToken`) to an env file wrangler loads as secrets.
 * @returns the env files to load: the project's `.dev.vars` (if any), then this one; and the vars left to pass as vars
 */
function tokenEnvFile(configPath: string, vars: Readonly<Record<string, string>>, dir: string): { envFiles: string[]; rest: Record<string, string> } {
  const rest: Record<string, string> = {};
  const lines: string[] = [];
  for (const [k, v] of Object.entries(vars)) {
    // a token outside [A-Za-z0-9_-] would be changed by the env file's quoting and $-expansion: pass it as a var
    if (MAIN_ONLY_VARS.has(k) && /^[A-Za-z0-9_-]*$/.test(v)) lines.push(`${k}="${v}"`);
    else rest[k] = v;
  }
  const path = join(dir, "tokens.env");
  writeFileSync(path, `${lines.join("\n")}\n`, { mode: 0o600 });
  const devVars = join(dirname(resolve(configPath)), ".dev.vars");
  return { envFiles: [...(existsSync(devVars) ? [devVars] : []), path], rest };
}

function send(message: HostMessage): void {
  if (process.connected) process.send?.(message);
}

/** The episode Worker's config for this session: the project's, `main` absolute, the session's vars added. @returns its path */
async function episodeConfig(configPath: string, vars: Readonly<Record<string, string>>, dir: string): Promise<{ path: string; name: string }> {
  const { experimental_readRawConfig } = await import("wrangler");
  const { rawConfig } = experimental_readRawConfig({ config: configPath });
  const raw = rawConfig as { name?: string; main?: string; vars?: Record<string, unknown> };
  if (!raw.main || !raw.name) throw new Error(`${configPath} must name the episode Worker (name) and its entry (main)`);
  const episodeVars = Object.fromEntries(Object.entries(vars).filter(([k]) => !MAIN_ONLY_VARS.has(k)));
  const config = { ...raw, main: resolve(dirname(configPath), raw.main), vars: { ...raw.vars, ...episodeVars } };
  const path = join(dir, "wrangler.episode.json");
  writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
  return { path, name: raw.name };
}

async function main(): Promise<void> {
  const configPath = process.argv[2];
  const episodeConfigPath = process.argv[3];
  if (!configPath || !episodeConfigPath || !process.send) {
    console.error("worker-host: run by `ajet-edge dev` only (needs the two wrangler config paths and an IPC channel)");
    process.exit(2);
  }
  let persistDir = "";
  let keep = false;
  let configDir = "";
  let worker: { stop(): Promise<void> } | null = null;
  let closing = false;
  const shutdown = async (code: number) => {
    if (closing) return;
    closing = true;
    try {
      await worker?.stop();
    } finally {
      if (persistDir && !keep) rmSync(persistDir, { recursive: true, force: true });
      if (configDir) rmSync(configDir, { recursive: true, force: true });
      process.exit(code);
    }
  };
  let onStart: (msg: Extract<ParentMessage, { type: "start" }>) => void = () => {};
  const startMessage = new Promise<Extract<ParentMessage, { type: "start" }>>((resolve) => (onStart = resolve));
  process.on("message", (m: unknown) => {
    const msg = m as ParentMessage | null;
    if (msg?.type === "dispose") void shutdown(0);
    else if (msg?.type === "start") onStart(msg);
  });
  process.on("disconnect", () => void shutdown(0));
  try {
    const { vars: given, logLevel = "warn", persistDir: keptDir } = await startMessage;
    keep = keptDir !== undefined;
    persistDir = keptDir ?? mkdtempSync(join(tmpdir(), "ajet-edge-dev-"));
    if (keep) mkdirSync(persistDir, { recursive: true });
    configDir = mkdtempSync(join(tmpdir(), "ajet-edge-dev-config-"));
    // local workerd: one invocation per episode (edge/run/dispatcher.ts) unless the parent asks for the queue
    const dispatch = process.env[DISPATCH_ENV] === "queue" ? "queue" : "direct";
    const vars = { ...given, AJET_DISPATCH: dispatch };
    const episode = await episodeConfig(resolve(episodeConfigPath), vars, configDir);
    const { envFiles, rest } = tokenEnvFile(configPath, vars, configDir);
    const { experimental_readRawConfig, unstable_dev } = await import("wrangler");
    const options = {
      // both Workers in one miniflare (wrangler dev -c main -c episode): the first config is the one served
      config: [configPath, episode.path] as unknown as string,
      // the session's token and allowed hosts win over a developer's .dev.vars
      vars: rest,
      envFiles,
      services: [{ binding: "EPISODE_RUNNER", service: episode.name, entrypoint: "EpisodeRunner" }],
      ip: "127.0.0.1",
      port: 0,
      persist: true,
      persistTo: persistDir,
      logLevel,
      experimental: { disableExperimentalWarning: true, disableDevRegistry: true },
    };
    const { rawConfig } = experimental_readRawConfig({ config: configPath });
    const entry = (rawConfig as { main?: string }).main;
    if (!entry) throw new Error(`${configPath} names no entry (main)`);
    const started = await unstable_dev(resolve(dirname(configPath), entry), options as Parameters<typeof unstable_dev>[1]);
    worker = started;
    const url = `http://${started.address}:${started.port}`;
    if (closing) return;
    send({ type: "ready", url, persistDir });
  } catch (err) {
    send({ type: "error", message: err instanceof Error ? err.message : String(err) });
    await shutdown(1);
  }
}

await main();
