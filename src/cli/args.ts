/**
 * @module cli/args — the one flag parser of every `ajet-edge` command, on commander: each command declares its
 * flags once (`DefineFlags`), and the same declaration gives the parse, the generated `--help` and the "did you
 * mean" suggestions. A flag that takes a value takes the next argument as it is, so `--steps -1` reaches the
 * command's own validation. Parse errors become {@link CliError} (exit code 2), so every command reports usage
 * errors alike.
 */
import { Command, CommanderError } from "commander";
import { CliError } from "./command.ts";

/** Declares a command's arguments and flags on a commander `Command` (description, options, help text). */
export type DefineFlags = (cmd: Command) => void;

/** Parsed flags: commander's `opts()` (camelCase keys; `--no-x` gives `x: false`) and the positionals. */
export interface ParsedFlags {
  values: Record<string, unknown>;
  positionals: string[];
}

/** The program name every usage line starts with. */
export const PROGRAM = "ajet-edge";

/**
 * A commander command named `name` under the `ajet-edge` program (so usage reads `ajet-edge NAME [options]`),
 * configured not to exit or print: errors throw, output goes to `write`.
 */
export function commandFor(name: string, define: DefineFlags, write: { out?: (s: string) => void; err?: (s: string) => void } = {}): Command {
  const program = new Command(PROGRAM);
  const cmd = program.command(name);
  for (const c of [program, cmd]) {
    c.exitOverride()
      .configureOutput({ writeOut: write.out ?? (() => {}), writeErr: write.err ?? (() => {}) })
      .showSuggestionAfterError(true)
      .allowExcessArguments(false)
      .helpOption("-h, --help", "show this help");
  }
  define(cmd);
  return cmd;
}

/** A commander parse error as our usage error: `unknown option '--stpes'\n(Did you mean --steps?)`. */
export function usageError(err: CommanderError): CliError {
  return new CliError(err.message.replace(/^error: /, ""));
}

/**
 * Parses `argv` (the arguments after the command name) with the command's flag declaration.
 * @returns `null` for `-h/--help`, else the flag values and positionals
 * @throws CliError naming the unknown, mistyped (with a suggestion) or incomplete flag
 */
export function parseFlags(name: string, define: DefineFlags, argv: readonly string[]): ParsedFlags | null {
  const cmd = commandFor(name, define);
  cmd.action(() => {});
  try {
    cmd.parse([...argv], { from: "user" });
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === "commander.helpDisplayed" || err.code === "commander.help") return null;
      throw usageError(err);
    }
    throw err;
  }
  return { values: cmd.opts(), positionals: [...cmd.args] };
}

/** The generated help of a command (`ajet-edge NAME --help`), from its flag declaration. */
export function helpOf(name: string, define: DefineFlags): string {
  let text = "";
  commandFor(name, define, { out: (s) => (text += s) }).outputHelp();
  return text.trimEnd();
}

/** A commander argument parser that collects a repeatable flag's values in order. */
export const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/**
 * An integer flag's value. @returns the number
 * @throws CliError `--NAME must be an integer from MIN to MAX, got 'TEXT'`
 */
export function integerFlag(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^-?\d+$/.test(text) || n < min || n > max) throw new CliError(`--${name} must be an integer from ${min} to ${max}, got '${text}'`);
  return n;
}

/** Waits for SIGINT or SIGTERM (a serving command's stop). @returns the exit code: 130 after SIGINT, 0 after SIGTERM */
export function waitForSignal(): Promise<number> {
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
