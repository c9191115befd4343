/**
 * @module cli/args — the one flag parser of every `ajet-edge` command: `node:util` parseArgs in strict mode with
 * `-h/--help`, its errors turned into {@link CliError} (exit code 2) so every command reports usage errors alike.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { CliError } from "./command.ts";

/** Flag definitions, without `help` (always added). */
export type FlagOptions = NonNullable<ParseArgsConfig["options"]>;

/**
 * Parses `argv` strictly.
 * @returns `null` for `--help`, else the flag values and positionals (positionals only when `allowPositionals`)
 * @throws CliError naming the unknown or malformed flag
 */
export function parseFlags(
  argv: string[],
  options: FlagOptions,
  allowPositionals = false,
): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] } | null {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv, strict: true, allowPositionals, options: { ...options, help: { type: "boolean", short: "h" } } });
  } catch (e) {
    throw new CliError((e as Error).message);
  }
  if (parsed.values["help"]) return null;
  return { values: parsed.values as Record<string, string | boolean | string[] | undefined>, positionals: parsed.positionals };
}
