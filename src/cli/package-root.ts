/**
 * @module cli/package-root — where this package is on disk, found from the running file upwards, so the same code
 * works from the sources (`src/cli/…`) and from the compiled package (`dist/src/cli/…`, one level deeper).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The fields of this package's package.json the CLI reads. */
export interface OwnPackageJson {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  /** npm's install-script policy: workerd and esbuild need theirs */
  allowScripts?: Record<string, boolean>;
}

/**
 * This package's root: the nearest directory at or above `from` whose package.json is named `ajet-edge`.
 * @throws Error when there is none (a broken install)
 */
export function packageRoot(from: string = fileURLToPath(import.meta.url)): string {
  let dir = dirname(from);
  for (;;) {
    const pkg = join(dir, "package.json");
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, "utf8")) as { name?: unknown }).name === "ajet-edge") return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`the ajet-edge package.json was not found above ${from}`);
    dir = up;
  }
}

/** This package's package.json. @throws Error when it is not found (see {@link packageRoot}) */
export function ownPackageJson(): OwnPackageJson {
  return JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as OwnPackageJson;
}

/** The package's version, e.g. `0.1.0`. */
export function packageVersion(): string {
  return ownPackageJson().version;
}
