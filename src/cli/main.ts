/**
 * @module cli/main — `ajet-edge <command>`: commander's program over lazily loaded command files in
 * `src/cli/commands/` (each declares its own flags, see `cli/args`). The program gives `--version`, the generated
 * command list (`--help`) and suggestions for a mistyped command. Exit codes: 0 ok, 1 error, 2 usage error,
 * 130 interrupted.
 */
import { Command, CommanderError } from "commander";
import { PROGRAM, usageError } from "./args.ts";
import { CliError, jsonErrorDocument, wantsJson, type CliCommand } from "./command.ts";
import { packageVersion } from "./package-root.ts";

/** The commands, loaded lazily, with the line `ajet-edge --help` shows for each. */
const commands: Record<string, { args?: string; summary: string; load: () => Promise<{ default: CliCommand }> }> = {
  dev: { summary: "run a rollout end to end on this machine: local emulator (or --swarm-url), local Worker, live progress, summary", load: () => import("./commands/dev.ts") },
  run: { summary: "create a run on a deployed or `wrangler dev` Worker (--worker URL) and follow it to its summary", load: () => import("./commands/run.ts") },
  runs: { summary: "list the runs of a Worker (--worker URL), newest first", load: () => import("./commands/runs.ts") },
  status: { args: "RUN", summary: "show one run of a Worker (--watch: refresh until it finishes)", load: () => import("./commands/status.ts") },
  metrics: { args: "RUN", summary: "print one run's metrics (--format csv|jsonl|json): rewards, learning signals, log_metrics, cost", load: () => import("./commands/metrics.ts") },
  rescore: { args: "RUN", summary: "re-score a run's stored transcripts with another reward (--reward FILE | --function NAME); no LLM call, no swarm server", load: () => import("./commands/rescore.ts") },
  stop: { args: "RUN", summary: "stop (drain) one run of a Worker", load: () => import("./commands/stop.ts") },
  "sync-code": { args: "DIR", summary: "send the training code of DIR (its ajet/ package) to an OFFLINE swarm server (--swarm-url URL [--force-restart])", load: () => import("./commands/sync-code.ts") },
  dashboard: { summary: "reopen the runs a `dev --persist DIR` kept, read-only, in the local Worker's dashboard (--persist DIR)", load: () => import("./commands/dashboard.ts") },
  emulator: { summary: "serve a local swarm emulator (default 127.0.0.1:10086)", load: () => import("./commands/emulator.ts") },
  "sandbox-server": { summary: "serve the local sandbox backend (sandboxes as processes with limits) on 127.0.0.1", load: () => import("./commands/sandbox-server.ts") },
  init: { args: "DIR", summary: "make a new project in DIR that depends on ajet-edge, with one example function", load: () => import("./commands/init.ts") },
  new: { args: "NAME", summary: "scaffold functions/NAME.ts, its test and its registry entry", load: () => import("./commands/new.ts") },
};

/** The line printed after a usage error: where the options are (the whole usage would bury the message). */
export function helpHint(command?: string): string {
  return command ? `run 'ajet-edge ${command} --help' for the options` : "run 'ajet-edge --help' for the commands";
}

const COMMAND_HELP_HINT = "run 'ajet-edge <command> --help' for a command's options";

/** The top-level program: `--version`, the command list and its help; the commands' own flags live in their files. */
function program(out: (s: string) => void): Command {
  const p = new Command(PROGRAM)
    .description("serverless rollout functions for AgentJet Swarm")
    .usage("<command> [options]")
    .version(packageVersion(), "-V, --version", "print the package version")
    .helpOption("-h, --help", "show this help")
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: () => {} })
    .showSuggestionAfterError(true)
    .helpCommand("help [command]", "show the help of a command")
    .addHelpText("after", `\n${COMMAND_HELP_HINT}`);
  for (const [name, c] of Object.entries(commands)) p.command(c.args ? `${name} ${c.args}` : name).description(c.summary);
  return p;
}

/**
 * Runs the CLI with `argv` (without node and script). Injectable for tests.
 * @returns the exit code
 */
export async function main(argv: string[]): Promise<number> {
  // `ajet-edge help dev` = `ajet-edge dev --help`
  if (argv[0] === "help" && argv[1] !== undefined && Object.hasOwn(commands, argv[1])) return main([argv[1], "--help"]);
  const [name, ...rest] = argv;
  const entry = name !== undefined && Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!entry) {
    let printed = "";
    const p = program((s) => (printed += s));
    if (!name) {
      console.log(`${p.helpInformation().trimEnd()}\n\n${COMMAND_HELP_HINT}`);
      return 2;
    }
    try {
      p.parse(argv, { from: "user" });
    } catch (err) {
      if (!(err instanceof CommanderError)) throw err;
      if (err.exitCode === 0) {
        console.log(printed.trimEnd());
        return 0;
      }
      const [first, ...more] = usageError(err).message.split("\n");
      const message = err.code === "commander.unknownCommand" ? [`${first}; commands: ${Object.keys(commands).join(", ")}`, ...more].join("\n") : usageError(err).message;
      console.error(`ajet-edge: ${message}\n${helpHint()}`);
      return 2;
    }
    console.log(p.helpInformation().trimEnd());
    return 2;
  }
  // `ajet-edge COMMAND --version` prints the version too (before any `--`), as the program's own flag does
  const own = rest.indexOf("--") < 0 ? rest : rest.slice(0, rest.indexOf("--"));
  if (own.includes("--version") || own.includes("-V")) {
    console.log(packageVersion());
    return 0;
  }
  const cmd = (await entry.load()).default;
  // with --json, stdout holds exactly one JSON document in every outcome: a usage error or a crash gets one too
  const json = (error: string, code: number) => {
    if (wantsJson(rest)) console.log(JSON.stringify((cmd.jsonError ?? jsonErrorDocument)(error, code), null, 2));
  };
  try {
    return await cmd.run(rest);
  } catch (err) {
    if (err instanceof CliError) {
      console.error(`ajet-edge ${cmd.name}: ${err.message}\n${helpHint(cmd.name)}`);
      json(err.message, err.code);
      return err.code;
    }
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    json(err instanceof Error ? err.message : String(err), 1);
    return 1;
  }
}
