/**
 * @module cli/commands/emulator — `ajet-edge emulator`: serves the local swarm emulator (src/emulator) until
 * Ctrl-C. Prints one ready line with the URL. Exit codes: 130 after Ctrl-C (SIGINT), 0 after SIGTERM, 2 on a
 * usage error or bad input (an unreadable or invalid `--answer-key` file, a `--host` that is not this machine's),
 * 1 when the server cannot start (port taken). Errors are one line naming the fix, never a stack trace.
 */
import { appendFileSync } from "node:fs";
import { parseFaultFlag, type FaultSpec } from "../../emulator/faults.ts";
import { EmulatorProfile, loadAnswerKeyFile, startEmulator, type AnswerKeyEntry, type RunningEmulator } from "../../emulator/index.ts";
import type { Command } from "commander";
import { collect, helpOf, integerFlag, parseFlags, waitForSignal } from "../args.ts";
import { CliError, type CliCommand } from "../command.ts";

/** The command's flags (the help is generated from these). */
export function defineEmulatorFlags(cmd: Command): void {
  cmd
    .description("Serves a local AgentJet swarm server emulator (simulated engine and policy) on 127.0.0.1.")
    .option("--port <n>", "TCP port (default 10086; 0 = any free port)")
    .option("--host <addr>", "interface to bind (default 127.0.0.1)")
    .option("--profile <name>", "timings: real (default) | dev | fast | slow (LLM calls of ~20 s to minutes)")
    .option("--llm-latency-ms <ms>", "hold every LLM call this long (fixed, milliseconds), instead of the profile's latency; streamed calls stay open on keepalives")
    .option("--answer-key <file>", "JSONL answer key: {match, answer, format}, GSM8K {question, answer} or Countdown {target, nums, solution}")
    .option("--seed <n>", "seed of ids and of the simulated policy (default 0)")
    .option("--upstream <url>", "forward chat calls to this OpenAI-compatible base URL instead of the simulated policy")
    .option("--upstream-key <key>", "API key for --upstream (required with it)")
    .option("--upstream-model <m>", "model name to ask the upstream for (default: the request's model)")
    .option("--fault <kind[:rate[:max[:first|Ns]]]>", "inject a fault (repeatable): end-500-after-act, end-drop-after-act, end-drop-closing, end-502-html, claim-lost, claim-500-after-act, abort-500, llm-429, llm-500, llm-stall; RATE 0-1 (default 1), MAX a cap; a 4th field 'first' (an episode's first request only) or 'Ns' (a window of N seconds from the first injection), e.g. end-502-html:1::30s", collect)
    .option("--journal <file>", "append what the server did (claims, accepted ends, aborts, reverts, status) as JSON lines")
    .option("--require-header <name=value>", "refuse (401) every request without this header and value, like an access gateway in front of the server (repeatable)", collect);
}

/** Parsed command options. */
export interface EmulatorCliOptions {
  port: number;
  host: string;
  profile: EmulatorProfile;
  /** `--llm-latency-ms N`: fixed latency of every LLM call, ms */
  llmLatencyMs?: number;
  answerKeyFile?: string;
  seed: number;
  upstream?: { baseUrl: string; apiKey: string; model?: string };
  /** `--fault` flags, parsed */
  faults?: FaultSpec[];
  /** `--journal FILE` */
  journalFile?: string;
  /** `--require-header NAME=VALUE`, repeatable: header name → value */
  requireHeaders?: Record<string, string>;
}

/**
 * Parses `--require-header` values (`NAME=VALUE`).
 * @throws CliError naming the bad value
 */
export function parseRequireHeaders(values: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const v of values) {
    const at = v.indexOf("=");
    const name = at > 0 ? v.slice(0, at).trim() : "";
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name) || at === v.length - 1) throw new CliError(`--require-header must be NAME=VALUE (e.g. X-Gateway-Token=abc), got '${v}'`);
    headers[name] = v.slice(at + 1);
  }
  return headers;
}


/**
 * Parses the command's argv.
 * @returns the options, or null for `--help`. @throws CliError on a usage error.
 */
export function parseEmulatorArgs(argv: string[]): EmulatorCliOptions | null {
  const flags = parseFlags("emulator", defineEmulatorFlags, argv);
  if (!flags) return null;
  const values = flags.values;
  const profile = EmulatorProfile.safeParse(values["profile"] ?? "real");
  if (!profile.success) throw new CliError(`--profile must be one of ${EmulatorProfile.options.join(", ")}, got '${String(values["profile"])}'`);
  const latency = values["llmLatencyMs"] as string | undefined;
  const upstreamUrl = values["upstream"] as string | undefined;
  const upstreamKey = values["upstreamKey"] as string | undefined;
  if (upstreamUrl && !upstreamKey) throw new CliError("--upstream needs --upstream-key KEY");
  if (upstreamKey && !upstreamUrl) throw new CliError("--upstream-key needs --upstream URL");
  const model = values["upstreamModel"] as string | undefined;
  let faults: FaultSpec[] = [];
  try {
    faults = ((values["fault"] as string[] | undefined) ?? []).map(parseFaultFlag);
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  const journalFile = values["journal"] as string | undefined;
  const requireHeaders = parseRequireHeaders((values["requireHeader"] as string[] | undefined) ?? []);
  return {
    ...(faults.length ? { faults } : {}),
    ...(journalFile ? { journalFile } : {}),
    port: integerFlag("port", (values["port"] as string | undefined) ?? "10086", 0, 65535),
    host: (values["host"] as string | undefined) ?? "127.0.0.1",
    profile: profile.data,
    ...(latency !== undefined ? { llmLatencyMs: integerFlag("llm-latency-ms", latency, 0, 3_600_000) } : {}),
    seed: integerFlag("seed", (values["seed"] as string | undefined) ?? "0", -(2 ** 31), 2 ** 31 - 1),
    ...(values["answerKey"] ? { answerKeyFile: values["answerKey"] as string } : {}),
    ...(upstreamUrl && upstreamKey ? { upstream: { baseUrl: upstreamUrl, apiKey: upstreamKey, ...(model ? { model } : {}) } } : {}),
    ...(Object.keys(requireHeaders).length ? { requireHeaders } : {}),
  };
}

/** Appends each journal line to `path` synchronously (the line is on disk when the request is answered, even if killed next). */
function fileSink(path: string): (line: string) => void {
  return (line) => appendFileSync(path, line + "\n");
}


/** A start failure as one line and its exit code (1 runtime, 2 bad input). */
export class EmulatorStartError extends Error {
  constructor(
    message: string,
    readonly code: 1 | 2,
  ) {
    super(message);
    this.name = "EmulatorStartError";
  }
}

const errnoOf = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | null)?.code;

/**
 * Reads the `--answer-key` JSONL file.
 * @throws EmulatorStartError (code 2) naming the file and the fix: missing, a directory, unreadable, or a bad line
 */
export async function readAnswerKey(path: string): Promise<AnswerKeyEntry[]> {
  try {
    return await loadAnswerKeyFile(path);
  } catch (err) {
    const code = errnoOf(err);
    if (code === "ENOENT") throw new EmulatorStartError(`--answer-key ${path}: no such file; give the path of a JSONL answer key`, 2);
    if (code === "EISDIR") throw new EmulatorStartError(`--answer-key ${path} is a directory; give a JSONL file`, 2);
    if (code === "EACCES" || code === "EPERM") throw new EmulatorStartError(`--answer-key ${path}: permission denied; make the file readable`, 2);
    // loadAnswerKeyFile's own errors name the file, the line and the field
    throw new EmulatorStartError(`bad --answer-key file: ${(err as Error).message}`, 2);
  }
}

/** A listen error as one line with the fix (EADDRINUSE, EACCES, EADDRNOTAVAIL), else the error's message. */
export function listenError(err: unknown, where: { host: string; port: number }): EmulatorStartError {
  const at = `${where.host}:${where.port}`;
  switch (errnoOf(err)) {
    case "EADDRINUSE":
      return new EmulatorStartError(`port ${where.port} on ${where.host} is already in use (another emulator or swarm server?); stop it, or pick another with --port N (--port 0 = any free port)`, 1);
    case "EACCES":
      return new EmulatorStartError(`not allowed to listen on ${at} (ports below 1024 need privileges); pick a port above 1023 with --port N`, 1);
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
      return new EmulatorStartError(`--host ${where.host} is not an address of this machine; use 127.0.0.1 (the default) or 0.0.0.0 (every interface)`, 2);
    default:
      return new EmulatorStartError(`cannot listen on ${at}: ${err instanceof Error ? err.message : String(err)}`, 1);
  }
}

/** The command's I/O: output lines, error lines, and how to wait until it should stop. */
export interface EmulatorCommandIo {
  log: (line: string) => void;
  /** one-line errors (default console.error) */
  error?: (line: string) => void;
  waitForStop: (running: RunningEmulator) => Promise<number>;
}

/**
 * Runs the command with injectable stop and output (for tests).
 * @returns the exit code: 0 / 130 after a stop, 1 when the server cannot start, 2 for a bad answer key or host
 * @throws CliError on a usage error (main prints it, exit code 2)
 */
export async function runEmulatorCommand(argv: string[], io: EmulatorCommandIo = { log: console.log, error: console.error, waitForStop: waitForSignal }): Promise<number> {
  const options = parseEmulatorArgs(argv);
  if (!options) {
    io.log(helpOf("emulator", defineEmulatorFlags));
    return 0;
  }
  let running: RunningEmulator;
  try {
    const answerKey = options.answerKeyFile ? await readAnswerKey(options.answerKeyFile) : [];
    running = await startEmulator({
      port: options.port,
      host: options.host,
      profile: options.profile,
      ...(options.llmLatencyMs !== undefined ? { timings: { llmLatency: { kind: "fixed" as const, ms: options.llmLatencyMs } } } : {}),
      seed: options.seed,
      ...(answerKey.length ? { answerKey } : {}),
      ...(options.upstream ? { upstream: options.upstream } : {}),
      ...(options.faults ? { faults: options.faults } : {}),
      ...(options.journalFile ? { journalSink: fileSink(options.journalFile) } : {}),
      ...(options.requireHeaders ? { requireHeaders: options.requireHeaders } : {}),
    }).catch((err: unknown) => {
      // errno errors come from listen(); anything else is the emulator refusing an option
      throw errnoOf(err) ? listenError(err, options) : new EmulatorStartError(`invalid option: ${(err as Error).message}`, 2);
    });
  } catch (err) {
    if (!(err instanceof EmulatorStartError)) throw err;
    (io.error ?? console.error)(`ajet-edge emulator: ${err.message}`);
    return err.code;
  }
  const keys = running.emulator.answerKey.size;
  const via = `${options.upstream ? `upstream ${options.upstream.baseUrl}` : `simulated policy, ${keys} answer key rows`}${options.requireHeaders ? `; requires header ${Object.keys(options.requireHeaders).join(", ")}` : ""}`;
  io.log(`ajet-edge emulator ready at ${running.url} (profile ${options.profile}, seed ${options.seed}, ${via}); Ctrl-C to stop`);
  const code = await io.waitForStop(running);
  await running.close();
  io.log("ajet-edge emulator stopped");
  return code;
}

const command: CliCommand = {
  name: "emulator",
  run: (argv) => runEmulatorCommand(argv),
};
export default command;
