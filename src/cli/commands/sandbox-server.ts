/**
 * @module cli/commands/sandbox-server — `ajet-edge sandbox-server`: serves the local sandbox backend
 * (src/sandbox/local-server) on 127.0.0.1 until Ctrl-C, then destroys every sandbox it holds. At its start it
 * reaps what stopped servers under the same `--root` left (processes and directories). The API token comes from
 * `AJET_SANDBOX_TOKEN` (never argv: `ps` shows it), or is made and printed once in the ready line. Exit codes: 130
 * after Ctrl-C, 0 after SIGTERM, 2 on a usage error, 1 when it cannot listen.
 */
import type { Command } from "commander";
import { collect, helpOf, integerFlag, parseFlags, waitForSignal } from "../args.ts";
import { CliError, type CliCommand } from "../command.ts";
import { defaultSandboxRoot, startSandboxServer, type RunningSandboxServer } from "../../sandbox/local-server/index.ts";

/** The command's flags (the help is generated from these). */
export function defineSandboxServerFlags(cmd: Command): void {
  cmd
    .description("Serves the local sandbox backend: each sandbox a temp dir and its processes, with CPU, memory, time and output limits.")
    .option("--port <n>", "TCP port (default 0 = any free port)")
    .option("--host <addr>", "interface to bind (default 127.0.0.1; the API runs commands, keep it on loopback)")
    .option("--root <dir>", `state root shared by servers on this machine (default ${defaultSandboxRoot()})`)
    .option("--max-sandboxes <n>", "sandboxes alive at once at most (default 4000)")
    .option("--fault <kind:rate>", "inject a fault (chaos tests): create-fail:RATE refuses that share of creates (503, retryable)", collect)
    .option("--seed <n>", "seed of the fault draws (default 1)");
}

/** Parsed options. */
export interface SandboxServerCliOptions {
  port: number;
  host: string;
  root?: string;
  maxSandboxes?: number;
  createFailRate?: number;
  seed: number;
}


/**
 * Parses the command's argv. @returns the options, or null for `--help`
 * @throws CliError on a usage error (a bad number, an unknown fault)
 */
export function parseSandboxServerArgs(argv: string[]): SandboxServerCliOptions | null {
  const flags = parseFlags("sandbox-server", defineSandboxServerFlags, argv);
  if (!flags) return null;
  const v = flags.values;
  let createFailRate: number | undefined;
  for (const f of (v["fault"] as string[] | undefined) ?? []) {
    const m = /^create-fail(?::([0-9.]+))?$/.exec(f);
    const rate = m ? Number(m[1] ?? "1") : Number.NaN;
    if (!m || !(rate >= 0 && rate <= 1)) throw new CliError(`--fault must be create-fail:RATE with RATE from 0 to 1, got '${f}'`);
    createFailRate = rate;
  }
  return {
    port: integerFlag("port", (v["port"] as string | undefined) ?? "0", 0, 65535),
    host: (v["host"] as string | undefined) ?? "127.0.0.1",
    ...(v["root"] ? { root: v["root"] as string } : {}),
    ...(v["maxSandboxes"] ? { maxSandboxes: integerFlag("max-sandboxes", v["maxSandboxes"] as string, 1, 1_000_000) } : {}),
    ...(createFailRate !== undefined ? { createFailRate } : {}),
    seed: integerFlag("seed", (v["seed"] as string | undefined) ?? "1", 0, 2 ** 32 - 1),
  };
}


/** The command's I/O (injectable for tests). */
export interface SandboxServerIo {
  log(line: string): void;
  error(line: string): void;
  env: Readonly<Record<string, string | undefined>>;
  waitForStop(server: RunningSandboxServer): Promise<number>;
}

/**
 * Runs the command. @returns the exit code
 * @throws CliError on a usage error (main prints it, exit code 2)
 */
export async function runSandboxServerCommand(argv: string[], io: SandboxServerIo = { log: console.log, error: console.error, env: process.env, waitForStop: waitForSignal }): Promise<number> {
  const o = parseSandboxServerArgs(argv);
  if (!o) {
    io.log(helpOf("sandbox-server", defineSandboxServerFlags));
    return 0;
  }
  const given = io.env["AJET_SANDBOX_TOKEN"] || undefined;
  if (given !== undefined && given.length < 16) throw new CliError("AJET_SANDBOX_TOKEN must be at least 16 characters (or unset it: a random token is made)");
  let server: RunningSandboxServer;
  try {
    server = await startSandboxServer({
      port: o.port,
      host: o.host,
      seed: o.seed,
      ...(given ? { token: given } : {}),
      ...(o.root ? { root: o.root } : {}),
      ...(o.maxSandboxes ? { maxSandboxes: o.maxSandboxes } : {}),
      ...(o.createFailRate !== undefined ? { createFailRate: o.createFailRate } : {}),
      log: (line) => io.error(line),
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    io.error(`ajet-edge sandbox-server: ${code === "EADDRINUSE" ? `port ${o.port} is in use; pick another with --port N (0 = any free port)` : `cannot start: ${(err as Error).message}`}`);
    return 1;
  }
  const token = given ? "token from AJET_SANDBOX_TOKEN" : `token ${server.token}`;
  const faults = o.createFailRate ? `, injecting create-fail:${o.createFailRate}` : "";
  io.log(`ajet-edge sandbox server ready at ${server.url} (${token}; root ${server.sandboxes.root}; reaped ${server.reaped} left by stopped servers${faults}); Ctrl-C to stop`);
  const code = await io.waitForStop(server);
  await server.close();
  io.log("ajet-edge sandbox server stopped (every sandbox destroyed)");
  return code;
}

const command: CliCommand = {
  name: "sandbox-server",
  run: (argv) => runSandboxServerCommand(argv),
};
export default command;
