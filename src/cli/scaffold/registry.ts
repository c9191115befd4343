/**
 * @module cli/scaffold/registry — registers a new function in `functions/index.ts`: one import line above the
 * `// ajet-edge:imports` marker and one entry above the `// ajet-edge:entries` marker (the registry's own
 * contract). Pure text in, text out; refuses instead of guessing.
 */
import { CliError } from "../command.ts";

/** The marker comments `ajet-edge new` inserts above (see functions/index.ts). */
export const REGISTRY_MARKERS = { imports: "// ajet-edge:imports", entries: "// ajet-edge:entries" } as const;

/** Identifiers bound by the registry's import statements (default, namespace, named and type imports). */
export function importedIdentifiers(source: string): Set<string> {
  const names = new Set<string>();
  for (const m of source.matchAll(/^\s*import\s+(?:type\s+)?([^;]*?)\s+from\s+["'][^"']+["']/gm)) {
    for (const part of (m[1] ?? "").replace(/[{}*]/g, ",").split(",")) {
      const local = part.trim().split(/\s+as\s+/).pop()?.replace(/^type\s+/, "").trim();
      if (local) names.add(local);
    }
  }
  return names;
}

/** True when the registry already imports `./NAME.ts` or has an entry keyed `NAME`. */
export function isRegistered(source: string, name: string): boolean {
  const escaped = name.replace(/[-]/g, "\\-");
  return (
    new RegExp(`from\\s+["']\\./${escaped}(?:\\.ts)?["']`).test(source) ||
    new RegExp(`^\\s*["']?${escaped}["']?\\s*:`, "m").test(source)
  );
}

function markerLine(lines: readonly string[], marker: string): number {
  const at = lines.findIndex((l) => l.trim().startsWith(marker));
  if (at < 0) {
    throw new CliError(
      `functions/index.ts has no '${marker}' line; restore it (new functions are inserted above it) and run again`,
    );
  }
  return at;
}

/**
 * Adds `import IDENT from "./NAME.ts";` above the imports marker and `"NAME": IDENT,` (indented like the marker)
 * above the entries marker.
 * @throws CliError when a marker is missing or `name` is already registered (running twice never adds twice)
 */
export function addToRegistry(source: string, name: string, identifier: string): string {
  if (isRegistered(source, name)) {
    throw new CliError(`'${name}' is already registered in functions/index.ts; pick another name or remove the old entry`);
  }
  const lines = source.split("\n");
  const importsAt = markerLine(lines, REGISTRY_MARKERS.imports);
  const entriesAt = markerLine(lines, REGISTRY_MARKERS.entries);
  if (entriesAt < importsAt) throw new CliError("functions/index.ts: the entries marker must come after the imports marker");
  const indent = /^\s*/.exec(lines[entriesAt]!)?.[0] ?? "  ";
  lines.splice(entriesAt, 0, `${indent}"${name}": ${identifier},`);
  lines.splice(importsAt, 0, `import ${identifier} from "./${name}.ts";`);
  return lines.join("\n");
}
