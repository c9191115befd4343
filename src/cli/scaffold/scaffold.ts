/**
 * @module cli/scaffold/scaffold — `ajet-edge new NAME` on disk: checks everything first (name, project layout, no
 * existing function, file or registry entry), then writes `functions/NAME.ts`, its test and the registry lines in
 * `functions/index.ts`. Works in this repository and in a project made by `ajet-edge init`; the test goes to
 * `test/unit/functions/` here and to `test/` in a user's project. Node only.
 */
import { existsSync, readFileSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { CliError } from "../command.ts";
import { assertFunctionName, identifierFor } from "./names.ts";
import { addToRegistry, importedIdentifiers, isRegistered } from "./registry.ts";
import { defaultTestFile, functionSource, testSource } from "./templates.ts";

/** Paths of a scaffolded function, relative to the project root, `/`-separated. */
export interface ScaffoldPaths {
  functionFile: string;
  testFile: string;
  registry: string;
}

/** True when `root` is this package's own repository (its package.json is named `ajet-edge`). */
export function isAjetEdgeRepo(root: string): boolean {
  try {
    return (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { name?: unknown }).name === "ajet-edge";
  } catch {
    return false;
  }
}

/**
 * Where `new NAME` writes in the project at `root`: the test is `test/unit/functions/NAME.test.ts` in the
 * ajet-edge repository itself, `test/NAME.test.ts` in any other project.
 */
export function scaffoldPaths(name: string, root: string): ScaffoldPaths {
  return {
    functionFile: `functions/${name}.ts`,
    testFile: isAjetEdgeRepo(root) ? defaultTestFile(name) : `test/${name}.test.ts`,
    registry: "functions/index.ts",
  };
}

/** What {@link scaffoldFunction} wrote. */
export interface ScaffoldResult {
  name: string;
  /** the identifier `functions/index.ts` imports the function as */
  identifier: string;
  /** files created, relative to the root */
  created: string[];
  /** files edited, relative to the root */
  edited: string[];
  /** the test file, relative to the root */
  testFile: string;
}

async function readOptional(path: string): Promise<string | null> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

/**
 * Scaffolds a function in the project at `root`. Nothing is written unless every check passes.
 * @throws CliError (exit 2) for a bad name, a root without `functions/index.ts`, an existing function file, test
 *   file or registry entry, or a registry without its markers
 */
export async function scaffoldFunction(options: { root: string; name: string }): Promise<ScaffoldResult> {
  const { root, name } = options;
  assertFunctionName(name);
  const paths = scaffoldPaths(name, root);
  const at = (p: string) => join(root, p);
  const registry = await readOptional(at(paths.registry));
  if (registry === null) {
    throw new CliError(
      `${root} is not an ajet-edge project (no ${paths.registry}); run in the project root, pass --dir, or make a project with \`ajet-edge init DIR\``,
    );
  }
  if (existsSync(at(paths.functionFile)) || isRegistered(registry, name)) {
    throw new CliError(`a function '${name}' already exists (${paths.functionFile} or its registry entry); pick another name`);
  }
  if (existsSync(at(paths.testFile))) {
    throw new CliError(`${paths.testFile} already exists; remove it or pick another name`);
  }
  const identifier = identifierFor(name, importedIdentifiers(registry));
  const names = { name, identifier, testFile: paths.testFile };
  const newRegistry = addToRegistry(registry, name, identifier);

  await writeFile(at(paths.functionFile), functionSource(names), { flag: "wx" });
  await mkdir(dirname(at(paths.testFile)), { recursive: true });
  await writeFile(at(paths.testFile), testSource(names), { flag: "wx" });
  await writeFile(at(paths.registry), newRegistry);
  return { name, identifier, created: [paths.functionFile, paths.testFile], edited: [paths.registry], testFile: paths.testFile };
}

/** Relative display path (for messages). */
export function shown(root: string, path: string): string {
  return relative(process.cwd(), join(root, path)) || ".";
}
