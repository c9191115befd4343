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
