/**
 * @module cli/command — what every CLI command file shares with the dispatcher (`cli/main`): the command shape and
 * the usage error. Its own file so the commands import it without importing the dispatcher that loads them.
 */

/**
 * A CLI command: one file in `src/cli/commands/`, default-exporting this shape, listed (with its one-line summary)
 * in `cli/main`'s `commands`. `--help` is the command's own: `run` prints its usage.
 */
export interface CliCommand {
  name: string;
  /** @returns the process exit code */
  run(argv: string[]): Promise<number>;
  /**
   * The command takes `--json` and prints exactly one JSON document on stdout in every outcome: for a usage error
   * or a crash (which `run` does not get to print) `cli/main` prints this one; default `{error, exitCode}`.
   */
  jsonError?: (error: string, exitCode: number) => unknown;
}

/** Whether `argv` (a command's arguments) asks for `--json` (before any `--`). */
export function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  return (end < 0 ? argv : argv.slice(0, end)).includes("--json");
}

/** The `--json` document of a command that failed without its own: `{error, exitCode}`. */
export function jsonErrorDocument(error: string, exitCode: number): { error: string; exitCode: number } {
  return { error, exitCode };
}

/** A usage error: printed as `ajet-edge CMD: message` plus a pointer to `--help` (not the whole usage), exit code 2. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code = 2,
  ) {
    super(message);
    this.name = "CliError";
  }
}
