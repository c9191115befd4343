/**
 * @module cli/commands/new — `ajet-edge new NAME`: scaffolds a working rollout function (`functions/NAME.ts`), its
 * unit test and its registry entry in `functions/index.ts`, in this repository or in a project made by
 * `ajet-edge init` (the seed's write-swarm-client skill). Exit codes: 0 written, 2 usage error (bad or taken name, not a project), 1 I/O error.
 */
import type { Command } from "commander";
import { helpOf, parseFlags } from "../args.ts";
import { resolve } from "node:path";
import { CliError, type CliCommand } from "../command.ts";
import { scaffoldFunction, shown } from "../scaffold/scaffold.ts";
import { DEMO_ROWS } from "../scaffold/templates.ts";

/** The command's argument and flags (the help is generated from these). */
export function defineNewFlags(cmd: Command): void {
  cmd
    .description(
      "Scaffolds a rollout function on contract v1 that works as is: one LLM call with a system prompt, the answer in " +
        `\\boxed{}, reward 1.0 when it equals the task's gold answer, else 0.0, and ${DEMO_ROWS.length} demo tasks so that ` +
        "`npm start -- --function NAME` runs right away. Writes functions/NAME.ts and its test (test/NAME.test.ts; " +
        "test/unit/functions/ in the ajet-edge repository) and registers NAME in functions/index.ts.",
    )
    .argument("[name]", "kebab-case: a lower-case letter, then lower-case letters, digits and single hyphens (my-agent)")
    .option("--dir <dir>", "project root to scaffold into (default: the current directory)")
    .allowExcessArguments(true);
}

/** Parsed command options. */
export interface NewCliOptions {
  name: string;
  /** absolute project root */
  root: string;
}

/**
 * Parses the command's argv.
 * @returns the options, or null for `--help`. @throws CliError on a usage error.
 */
export function parseNewArgs(argv: string[]): NewCliOptions | null {
  const parsed = parseFlags("new", defineNewFlags, argv);
  if (!parsed) return null;
  const [name, ...extra] = parsed.positionals;
  if (!name) throw new CliError("missing NAME, e.g. `ajet-edge new my-agent`");
  if (extra.length) throw new CliError(`expected one NAME, got ${parsed.positionals.length}: ${parsed.positionals.join(" ")}`);
  return { name, root: resolve((parsed.values["dir"] as string | undefined) ?? ".") };
}

const command: CliCommand = {
  name: "new",
  async run(argv) {
    const options = parseNewArgs(argv);
    if (!options) {
      console.log(helpOf("new", defineNewFlags));
      return 0;
    }
    const result = await scaffoldFunction(options);
    const at = (p: string) => shown(options.root, p);
    for (const file of result.created) console.log(`created  ${at(file)}`);
    for (const file of result.edited) console.log(`edited   ${at(file)}`);
    console.log(
      [
        "",
        "next:",
        `  npx vitest run ${result.testFile}`,
        `  npm start -- --function ${result.name}     # its demo tasks on the local emulator (= npx ajet-edge dev --function ${result.name})`,
        "  guide: docs/writing-functions.md of the ajet-edge package (node_modules/ajet-edge/docs/ in your project)",
      ].join("\n"),
    );
    return 0;
  },
};
export default command;
