/**
 * @module cli/scaffold/names — the rules for a new rollout function's name (`ajet-edge new NAME`): kebab-case,
 * not reserved, and the TypeScript identifier the registry imports it as.
 */
import { CliError } from "../command.ts";

/** A function name: lower-case letters, digits and single inner hyphens, starting with a letter (kebab-case). */
export const FUNCTION_NAME = /^[a-z][a-z0-9-]*$/;

/** The longest name accepted, in characters (it becomes a file name and part of run specs). */
export const MAX_FUNCTION_NAME_CHARS = 64;

/** Names that are files of `functions/` already or would read as something else. */
const RESERVED_NAMES = new Set(["index"]);

/** JavaScript reserved words and globals a default import must not shadow. */
const RESERVED_IDENTIFIERS = new Set(
  (
    "break case catch class const continue debugger default delete do else enum export extends false finally for " +
    "function if import in instanceof new null return super switch this throw true try typeof var void while with " +
    "yield let static implements interface package private protected public await arguments eval undefined NaN " +
    "Infinity globalThis"
  ).split(" "),
);

/**
 * Checks a function name.
 * @throws CliError (exit 2) naming the rule and a valid example, e.g. for `MyAgent`, `my_agent`, `2fast`, `a--b`,
 *   `agent-`, `index`
 */
export function assertFunctionName(name: string): void {
  const example = 'e.g. "my-agent"';
  if (!FUNCTION_NAME.test(name)) {
    throw new CliError(
      `function name '${name}' must be kebab-case: start with a lower-case letter, then lower-case letters, ` +
        `digits and hyphens (${example})`,
    );
  }
  if (name.endsWith("-") || name.includes("--")) {
    throw new CliError(`function name '${name}' must not end with '-' or contain '--' (${example})`);
  }
  if (name.length > MAX_FUNCTION_NAME_CHARS) {
    throw new CliError(`function name '${name}' is longer than ${MAX_FUNCTION_NAME_CHARS} characters`);
  }
  if (RESERVED_NAMES.has(name)) {
    throw new CliError(`function name '${name}' is reserved (functions/${name}.ts is the registry); pick another name`);
  }
}

/**
 * The camelCase identifier of a kebab-case name (`my-agent` → `myAgent`); a reserved word gets `Function`
 * appended (`new` → `newFunction`), and a name in `taken` gets `Fn`, `Fn2`, … until it is free.
 */
export function identifierFor(name: string, taken: ReadonlySet<string> = new Set()): string {
  let base = name.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
  if (RESERVED_IDENTIFIERS.has(base)) base += "Function";
  if (!taken.has(base)) return base;
  for (let i = 1; ; i++) {
    const candidate = `${base}Fn${i === 1 ? "" : i}`;
    if (!taken.has(candidate)) return candidate;
  }
}
