/**
 * @module cli/dev/project — the ajet-edge project `dev` runs: the nearest directory (the current one or above)
 * holding `wrangler.toml` and `functions/index.ts` — this repository or a project made by `ajet-edge init` — and
 * its registry of rollout functions, loaded in Node (TypeScript through tsx's scoped loader, so nothing is
 * registered globally). Node only.
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { RolloutFunction } from "../../sdk/contract.ts";

/** A project on disk. Paths are absolute. */
export interface DevProject {
  root: string;
  /** `<root>/wrangler.toml` */
  wranglerConfig: string;
  /** `<root>/functions/index.ts` */
  registryPath: string;
}

/** The files that make a directory an ajet-edge project. */
export const PROJECT_FILES = ["wrangler.toml", join("functions", "index.ts")] as const;

/**
 * The project at `start` or the nearest directory above it.
 * @throws Error naming the directory and the fix when there is none
 */
export function findProject(start: string = process.cwd()): DevProject {
  let dir = resolve(start);
  for (;;) {
    if (PROJECT_FILES.every((f) => existsSync(join(dir, f)))) {
      return { root: dir, wranglerConfig: join(dir, "wrangler.toml"), registryPath: join(dir, "functions", "index.ts") };
    }
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  throw new Error(
    `${resolve(start)} is not inside an ajet-edge project (no wrangler.toml and functions/index.ts here or above); ` +
      "run in your project, or make one with `npx ajet-edge init DIR`",
  );
}

/**
 * Loads the project's registry (`export const rolloutFunctions` of `functions/index.ts`).
 * @throws Error when the module does not export `rolloutFunctions` as an object
 */
export async function loadProjectFunctions(project: DevProject): Promise<Readonly<Record<string, RolloutFunction>>> {
  const { tsImport } = await import("tsx/esm/api");
  const mod = (await tsImport(pathToFileURL(project.registryPath).href, import.meta.url)) as { rolloutFunctions?: unknown };
  const functions = mod.rolloutFunctions;
  if (!functions || typeof functions !== "object") {
    throw new Error(`${project.registryPath} must export \`rolloutFunctions\` (name → rollout function), as \`ajet-edge init\` writes it`);
  }
  return functions as Readonly<Record<string, RolloutFunction>>;
}
