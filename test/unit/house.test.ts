/**
 * The house keeps its shape (docs/design/rooms.md, issue 17): no import circle anywhere in the project's sources, the
 * rooms of `src/edge` import only the rooms below them, and no file of `src/edge` grows past 300 lines (biome keeps
 * functions of `src/edge` and `src/runtime` under 80 lines: biome.jsonc). Imports are read from the sources as text.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const repo = fileURLToPath(new URL("../../", import.meta.url));

/** The source files under `dirs` (TypeScript and the dashboard's browser modules), repo-relative. */
function sources(...dirs: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(join(repo, dir))) {
      const path = join(dir, name);
      if (statSync(join(repo, path)).isDirectory()) walk(path);
      else if (/\.(ts|js)$/.test(name) && !name.endsWith(".d.ts")) out.push(path);
    }
  };
  for (const d of dirs) if (existsSync(join(repo, d))) walk(d);
  return out.sort();
}

/** A statement that imports or re-exports a relative path (`import … from "./x"`, `export … from`, `import "./x"`). */
const IMPORT = /^\s*(?:import|export)\b[^;]*?["'](\.{1,2}\/[^"']+)["']/gm;

/** The project's files each file imports (relative imports that name a source file). */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  return new Map(
    files.map((f) => {
      const text = readFileSync(join(repo, f), "utf8");
      const targets = [...text.matchAll(IMPORT)].map((m) => normalize(join(dirname(f), m[1]!))).filter((t) => known.has(t));
      return [f, [...new Set(targets)]];
    }),
  );
}

/** The import circles: strongly connected components of more than one file, or a file importing itself (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** The floors of `src/edge` (docs/design/rooms.md): a room imports only rooms on a lower floor. */
const EDGE_FLOORS: Record<string, number> = { ground: 0, "swarm-server": 1, consumer: 1, run: 2, dashboard: 2, api: 3, "(top)": 4 };

/** The room of a file of `src/edge`: its first folder, or `(top)` for `worker.ts` and `index.ts`. */
function edgeRoom(file: string): string {
  const parts = relative("src/edge", file).split(/[\\/]/);
  return parts.length > 1 ? parts[0]! : "(top)";
}

describe("the house", () => {
  const graph = importGraph(sources("src", "functions", "bench", "scripts"));

  it("has no import circle anywhere in the project's sources", () => {
    expect(graph.size).toBeGreaterThan(200);
    expect(circles(graph)).toEqual([]);
  });

  it("has every room of src/edge on a floor, importing only rooms below it", () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      if (!file.startsWith("src/edge/")) continue;
      const from = edgeRoom(file);
      expect(EDGE_FLOORS[from], `${file}: a room not on the floors of docs/design/rooms.md`).toBeDefined();
      for (const t of targets) {
        if (!t.startsWith("src/edge/")) continue;
        const to = edgeRoom(t);
        if (to !== from && EDGE_FLOORS[to]! >= EDGE_FLOORS[from]!) upward.push(`${file} -> ${t}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it("keeps every file of src/edge at 300 lines or fewer", () => {
    const long = sources("src/edge")
      .map((f) => ({ f, lines: readFileSync(join(repo, f), "utf8").split("\n").length - 1 }))
      .filter((x) => x.lines > 300);
    expect(long).toEqual([]);
  });
});
