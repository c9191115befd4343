/**
 * @module cli/commands/init — `ajet-edge init DIR [--from SPEC] [--function NAME]`: makes a standalone project that depends on
 * ajet-edge (cli/scaffold/init.ts). Exit codes: 0 written, 2 usage error (no DIR, a non-empty DIR), 1 I/O error.
 */
import { relative, resolve } from "node:path";
import type { Command } from "commander";
import { helpOf, parseFlags } from "../args.ts";
import { CliError, type CliCommand } from "../command.ts";
import { EXAMPLE_FUNCTION, initProject } from "../scaffold/init.ts";

/** The command's argument and flags (the help is generated from these). */
export function defineInitFlags(cmd: Command): void {
  cmd
    .description(
      "Makes a new project in DIR that depends on ajet-edge: package.json, wrangler.toml, src/index.ts (the Worker), " +
        `functions/ with one example function (--function, default ${EXAMPLE_FUNCTION}) and its test, tsconfig.json, README.md, .gitignore. ` +
        "Then: cd DIR && npm install && npm start.",
    )
    .argument("[dir]", "the new project's directory (missing or empty)")
    .option("--from <spec>", "the ajet-edge dependency: a version range, a packed tarball (.tgz) or a directory, written relative to DIR (default: ^ this version)")
    .option("--function <name>", `the example function's name, which npm start runs (default ${EXAMPLE_FUNCTION})`)
    .allowExcessArguments(true);
}

const command: CliCommand = {
  name: "init",
  async run(argv) {
    const parsed = parseFlags("init", defineInitFlags, argv);
    if (!parsed) {
      console.log(helpOf("init", defineInitFlags));
      return 0;
    }
    const [dir, ...extra] = parsed.positionals;
    if (!dir) throw new CliError("missing DIR, e.g. `ajet-edge init my-rollouts`");
    if (extra.length) throw new CliError(`expected one DIR, got ${parsed.positionals.length}: ${parsed.positionals.join(" ")}`);
    const from = parsed.values["from"] as string | undefined;
    const functionName = parsed.values["function"] as string | undefined;
    const result = await initProject({ dir: resolve(dir), ...(from !== undefined ? { from } : {}), ...(functionName !== undefined ? { functionName } : {}) });
    const shown = relative(process.cwd(), result.dir) || ".";
    for (const file of result.created) console.log(`created  ${shown}/${file}`);
    console.log(["", "next:", `  cd ${shown}`, "  npm install", "  npm start", "  npm test"].join("\n"));
    return 0;
  },
};
export default command;
