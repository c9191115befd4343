/**
 * @module cli/main — `ajet-edge <command>`: a tiny dispatcher over lazily loaded command files in
 * `src/cli/commands/` (citty's shape, on `node:util` parseArgs). Exit codes: 0 ok, 1 error, 2 usage error,
 * 130 interrupted.
 */

import { CliError, type CliCommand } from "./command.ts";

/** The commands, loaded lazily, with the line `ajet-edge --help` shows for each (`synopsis` defaults to the name). */
const commands: Record<string, { synopsis?: string; summary: string; load: () => Promise<{ default: CliCommand }> }> = {
  dev: { summary: "run a rollout end to end: emulator (or --swarm-url), local workerd, scheduler, episodes", load: () => import("./commands/dev.ts") },
  emulator: { summary: "serve a local swarm emulator (default 127.0.0.1:10086)", load: () => import("./commands/emulator.ts") },
  init: { synopsis: "init DIR", summary: "make a new project in DIR that depends on ajet-edge, with one example function", load: () => import("./commands/init.ts") },
  new: { synopsis: "new NAME", summary: "scaffold functions/NAME.ts, its test and its registry entry", load: () => import("./commands/new.ts") },
  bench: { summary: "run the benchmarks and write bench/results.json", load: () => import("./commands/bench.ts") },
};

function usage(): string {
  const rows = Object.entries(commands).map(([name, c]) => `  ${(c.synopsis ?? name).padEnd(11)}${c.summary}`);
  return ["usage: ajet-edge <command> [options]", "", "commands:", ...rows, "", "run `ajet-edge <command> --help` for a command's options"].join("\n");
}

/** The line printed after a usage error: where the options are (the whole usage would bury the message). */
export function helpHint(command?: string): string {
  return command ? `run 'ajet-edge ${command} --help' for the options` : "run 'ajet-edge --help' for the commands";
}

/**
 * Runs the CLI with `argv` (without node and script). Injectable for tests.
 * @returns the exit code
 */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    console.log(usage());
    return name ? 0 : 2;
  }
  const load = commands[name]?.load;
  if (!load) {
    console.error(`ajet-edge: unknown command '${name}'; commands: ${Object.keys(commands).join(", ")}\n${helpHint()}`);
    return 2;
  }
  const cmd = (await load()).default;
  try {
    return await cmd.run(rest);
  } catch (err) {
    if (err instanceof CliError) {
      console.error(`ajet-edge ${cmd.name}: ${err.message}\n${helpHint(cmd.name)}`);
      return err.code;
    }
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    return 1;
  }
}
