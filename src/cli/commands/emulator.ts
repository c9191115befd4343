/**
 * @module cli/commands/emulator — `ajet-edge emulator`: serves the local swarm emulator (src/emulator) until
 * Ctrl-C. Prints one ready line with the URL. Exit codes: 130 after Ctrl-C (SIGINT), 0 after SIGTERM, 2 on a
 * usage error, 1 when the server cannot start (port taken, bad answer key file).
 */
import { parseArgs } from "node:util";
import { EmulatorProfile, startEmulator, type RunningEmulator } from "../../emulator/index.ts";
import { CliError, type CliCommand } from "../main.ts";

const USAGE = [
  "usage: ajet-edge emulator [options]",
  "",
  "Serves a local AgentJet swarm server emulator (simulated engine and policy) on 127.0.0.1.",
  "",
  "options:",
  "  --port N              TCP port (default 10086; 0 = any free port)",
  "  --host ADDR           interface to bind (default 127.0.0.1)",
  "  --profile NAME        timings: real (default) | dev | fast",
  "  --answer-key FILE     JSONL answer key: {match, answer, format}, GSM8K {question, answer} or Countdown {target, nums, solution}",
  "  --seed N              seed of ids and of the simulated policy (default 0)",
  "  --upstream URL        forward chat calls to this OpenAI-compatible base URL instead of the simulated policy",
  "  --upstream-key KEY    API key for --upstream (required with it)",
  "  --upstream-model M    model name to ask the upstream for (default: the request's model)",
  "  -h, --help            show this help",
].join("\n");

/** Parsed command options. */
export interface EmulatorCliOptions {
  port: number;
  host: string;
  profile: EmulatorProfile;
  answerKeyFile?: string;
  seed: number;
  upstream?: { baseUrl: string; apiKey: string; model?: string };
}

function integer(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^-?\d+$/.test(text) || n < min || n > max) throw new CliError(`--${name} must be an integer from ${min} to ${max}, got '${text}'`);
  return n;
}

/**
 * Parses the command's argv.
 * @returns the options, or null for `--help`. @throws CliError on a usage error.
 */
export function parseEmulatorArgs(argv: string[]): EmulatorCliOptions | null {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        port: { type: "string" },
        host: { type: "string" },
        profile: { type: "string" },
        "answer-key": { type: "string" },
        seed: { type: "string" },
        upstream: { type: "string" },
        "upstream-key": { type: "string" },
        "upstream-model": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (e) {
    throw new CliError((e as Error).message);
  }
  if (values["help"]) return null;
  const profile = EmulatorProfile.safeParse(values["profile"] ?? "real");
  if (!profile.success) throw new CliError(`--profile must be one of real, dev, fast, got '${String(values["profile"])}'`);
  const upstreamUrl = values["upstream"] as string | undefined;
  const upstreamKey = values["upstream-key"] as string | undefined;
  if (upstreamUrl && !upstreamKey) throw new CliError("--upstream needs --upstream-key KEY");
  if (upstreamKey && !upstreamUrl) throw new CliError("--upstream-key needs --upstream URL");
  const model = values["upstream-model"] as string | undefined;
  return {
    port: integer("port", (values["port"] as string | undefined) ?? "10086", 0, 65535),
    host: (values["host"] as string | undefined) ?? "127.0.0.1",
    profile: profile.data,
    seed: integer("seed", (values["seed"] as string | undefined) ?? "0", -(2 ** 31), 2 ** 31 - 1),
    ...(values["answer-key"] ? { answerKeyFile: values["answer-key"] as string } : {}),
    ...(upstreamUrl && upstreamKey ? { upstream: { baseUrl: upstreamUrl, apiKey: upstreamKey, ...(model ? { model } : {}) } } : {}),
  };
}

/** Waits for SIGINT or SIGTERM; @returns the exit code (130 or 0). */
function waitForSignal(): Promise<number> {
  return new Promise((resolve) => {
    const onInt = () => done(130);
    const onTerm = () => done(0);
    const done = (code: number) => {
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
      resolve(code);
    };
    process.once("SIGINT", onInt);
    process.once("SIGTERM", onTerm);
  });
}

/**
 * Runs the command with injectable stop and output (for tests).
 * @returns the exit code.
 */
export async function runEmulatorCommand(
  argv: string[],
  io: { log: (line: string) => void; waitForStop: (running: RunningEmulator) => Promise<number> } = { log: console.log, waitForStop: waitForSignal },
): Promise<number> {
  const options = parseEmulatorArgs(argv);
  if (!options) {
    io.log(USAGE);
    return 0;
  }
  const running = await startEmulator({
    port: options.port,
    host: options.host,
    profile: options.profile,
    seed: options.seed,
    ...(options.answerKeyFile ? { answerKeyFile: options.answerKeyFile } : {}),
    ...(options.upstream ? { upstream: options.upstream } : {}),
  });
  const keys = running.emulator.answerKey.size;
  const via = options.upstream ? `upstream ${options.upstream.baseUrl}` : `simulated policy, ${keys} answer key rows`;
  io.log(`ajet-edge emulator ready at ${running.url} (profile ${options.profile}, seed ${options.seed}, ${via}); Ctrl-C to stop`);
  const code = await io.waitForStop(running);
  await running.close();
  io.log("ajet-edge emulator stopped");
  return code;
}

const command: CliCommand = {
  name: "emulator",
  description: "serve a local swarm emulator (default 127.0.0.1:10086)",
  usage: USAGE,
  run: (argv) => runEmulatorCommand(argv),
};
export default command;
