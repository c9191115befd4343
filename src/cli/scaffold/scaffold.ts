/**
 * @module cli/scaffold/scaffold — `ajet-edge new NAME` on disk: checks everything first (name, project layout, no
 * existing function, file or registry entry), then writes `functions/NAME.ts`, `test/unit/functions/NAME.test.ts`,
 * the registry lines in `functions/index.ts` and the README subsection. Node only.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join, relative } from "node:path";
import { CliError } from "../command.ts";
import { assertFunctionName, identifierFor } from "./names.ts";
import { addReadmeSection, type ReadmeEdit } from "./readme.ts";
import { addToRegistry, importedIdentifiers, isRegistered } from "./registry.ts";
import { functionSource, readmeSection, testSource } from "./templates.ts";

/** Paths of a scaffolded function, relative to the project root. */
export function scaffoldPaths(name: string): { functionFile: string; testFile: string; registry: string; readme: string } {
  return {
    functionFile: join("functions", `${name}.ts`),
    testFile: join("test", "unit", "functions", `${name}.test.ts`),
    registry: join("functions", "index.ts"),
    readme: "README.md",
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
  readme: ReadmeEdit["change"];
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
  const paths = scaffoldPaths(name);
  const at = (p: string) => join(root, p);
  const registry = await readOptional(at(paths.registry));
  if (registry === null) {
    throw new CliError(`${root} is not an ajet-edge project (no ${paths.registry}); run in the project root or pass --dir`);
  }
  if (existsSync(at(paths.functionFile)) || isRegistered(registry, name)) {
    throw new CliError(`a function '${name}' already exists (${paths.functionFile} or its registry entry); pick another name`);
  }
  if (existsSync(at(paths.testFile))) {
    throw new CliError(`${paths.testFile} already exists; remove it or pick another name`);
  }
  const identifier = identifierFor(name, importedIdentifiers(registry));
  const names = { name, identifier };
  const newRegistry = addToRegistry(registry, name, identifier);
  const readme = addReadmeSection(await readOptional(at(paths.readme)), name, readmeSection(names));

  await writeFile(at(paths.functionFile), functionSource(names), { flag: "wx" });
  await mkdir(join(root, "test", "unit", "functions"), { recursive: true });
  await writeFile(at(paths.testFile), testSource(names), { flag: "wx" });
  await writeFile(at(paths.registry), newRegistry);
  if (readme.change !== "unchanged") await writeFile(at(paths.readme), readme.text);
  return {
    name,
    identifier,
    created: [paths.functionFile, paths.testFile, ...(readme.change === "created" ? [paths.readme] : [])],
    edited: [paths.registry, ...(readme.change === "appended" || readme.change === "inserted" ? [paths.readme] : [])],
    readme: readme.change,
  };
}

/** Relative display path (for messages). */
export function shown(root: string, path: string): string {
  return relative(process.cwd(), join(root, path)) || ".";
}
