/**
 * @module cli/commands/sync-code — `ajet-edge sync-code DIR --swarm-url URL [--force-restart]`: sends the training code
 * of DIR (its `ajet/` package, git-tracked files) to an OFFLINE swarm server (`POST /sync_train_code`, spec §3.3), as
 * the Python client's `sync_train_code_from_dir`; the next engine start runs it. `--force-restart` stops a running
 * engine first (it stops training for every client of that server).
 */
import type { Command } from "commander";
import { SwarmClient, SwarmEngineStateError, SwarmError } from "../../client/index.ts";
import { trainCodeFiles, zipFiles } from "../../node/zip-dir.ts";
import { helpOf, parseFlags } from "../args.ts";
import { CliError, type CliCommand } from "../command.ts";
import { processIo, type DevIo } from "../dev/output.ts";

function defineSyncCodeFlags(cmd: Command): void {
  cmd
    .description("Sends the training code of DIR (its ajet/ package) to a swarm server; the next engine start runs it.")
    .argument("<dir>", "the AgentJet checkout whose ajet/ the server should run")
    .requiredOption("--swarm-url <url>", "the swarm server, e.g. http://HOST:10086")
    .option("--force-restart", "stop the server's engine first when it is not OFFLINE (stops training for every client of that server)");
}

/**
 * Runs the command with injectable I/O.
 * @returns 0 synced; 1 the server refused or could not be reached
 * @throws CliError on a usage error (no ajet/ in DIR, a bad URL)
 */
export async function runSyncCodeCommand(argv: string[], io: DevIo = processIo, fetchFn: typeof fetch = fetch): Promise<number> {
  const flags = parseFlags("sync-code", defineSyncCodeFlags, argv);
  if (!flags) {
    io.out(`${helpOf("sync-code", defineSyncCodeFlags)}\n`);
    return 0;
  }
  const dir = flags.positionals[0]!;
  const url = String(flags.values["swarmUrl"]);
  let files: string[];
  let client: SwarmClient;
  try {
    files = trainCodeFiles(dir);
    client = new SwarmClient({ baseURL: url, fetch: fetchFn, logger: { info: () => {}, warn: (m) => io.err(`${m}\n`), error: (m) => io.err(`${m}\n`) } });
  } catch (err) {
    throw new CliError(err instanceof Error ? err.message : String(err));
  }
  if (files.length === 0) throw new CliError(`${dir}/ajet holds no file to send`);
  const zip = zipFiles(dir, files);
  try {
    if (flags.values["forceRestart"] === true) {
      io.out("stopping the engine first (--force-restart)…\n");
      await client.stopEngine();
    }
    const r = await client.syncTrainCode(zip);
    io.out(`synced ${files.length} files (${zip.byteLength} bytes zipped) to ${client.baseURL}${r.tempAjetCodePath ? `: ${r.tempAjetCodePath}` : ""}; the next engine start runs this code\n`);
    return 0;
  } catch (err) {
    if (err instanceof SwarmEngineStateError) {
      io.err(`ajet-edge sync-code: the engine of ${client.baseURL} is ${err.engineStatus}; code can only be synced while it is OFFLINE. Stop it first, or pass --force-restart (it stops training for every client of that server)\n`);
      return 1;
    }
    io.err(`ajet-edge sync-code: ${err instanceof SwarmError || err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

const command: CliCommand = { name: "sync-code", run: (argv) => runSyncCodeCommand(argv) };
export default command;
