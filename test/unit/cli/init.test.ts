/**
 * @module test/unit/cli/init — `ajet-edge init DIR`: the files of a new project (package.json on the ajet-edge
 * dependency given by --from, this package's wrangler.toml with only the top-level name and main changed, the
 * three-line Worker, an empty registry plus the scaffolded example and its test in test/), the npm name taken from
 * the directory, and the refusals (no DIR, a non-empty DIR) with their exit code. The packed-package e2e test runs
 * such a project for real.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { dependencySpec, EXAMPLE_FUNCTION, initProject, npmName, projectWranglerToml } from "../../../src/cli/scaffold/init.ts";
import { runMain } from "../../support/cli.ts";

const repo = fileURLToPath(new URL("../../../", import.meta.url));
const repoPkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string; devDependencies: Record<string, string> };
let base: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "ajet-init-"));
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

describe("initProject", () => {
  it("writes a project on the ajet-edge dependency with one example function and its test", async () => {
    const dir = join(base, "My Rollouts");
    const tarball = join(base, "ajet-edge-0.1.0.tgz");
    const result = await initProject({ dir, from: tarball });
    expect(result.name).toBe("my-rollouts");
    expect(result.created.sort()).toEqual(
      [".gitignore", "README.md", "functions/index.ts", `functions/${EXAMPLE_FUNCTION}.ts`, "package.json", "src/episode.ts", "src/index.ts", `test/${EXAMPLE_FUNCTION}.test.ts`, "tsconfig.json", "wrangler.episode.toml", "wrangler.toml"].sort(),
    );
    const read = (p: string) => readFileSync(join(dir, p), "utf8");
    const pkg = JSON.parse(read("package.json")) as Record<string, Record<string, string>>;
    // relative to the project, so the project and its tarball can move together
    expect(pkg["dependencies"]).toEqual({ "ajet-edge": "file:../ajet-edge-0.1.0.tgz" });
    expect(pkg["scripts"]).toMatchObject({ start: `ajet-edge dev --function ${EXAMPLE_FUNCTION}`, test: "vitest run", typecheck: "tsc --noEmit" });
    expect(pkg["devDependencies"]).toMatchObject({ typescript: repoPkg.devDependencies["typescript"], vitest: repoPkg.devDependencies["vitest"] });
    expect(read("src/index.ts")).toContain('export * from "ajet-edge/worker";');
    expect(read("src/index.ts")).toContain("export default createWorker(rolloutFunctions);");
    expect(read("functions/index.ts")).toContain(`"${EXAMPLE_FUNCTION}": myAgent,\n  // ajet-edge:entries`);
    expect(read(`functions/${EXAMPLE_FUNCTION}.ts`)).toContain('} from "ajet-edge";');
    expect(read(`test/${EXAMPLE_FUNCTION}.test.ts`)).toContain('from "../functions/index.ts";');
    expect(read(".gitignore").split("\n")).toEqual(expect.arrayContaining(["node_modules/", ".wrangler/"]));
    const toml = read("wrangler.toml");
    expect(toml).toMatch(/^name = "my-rollouts"$/m);
    expect(toml).toMatch(/^main = "src\/index.ts"$/m);
    // everything else is this package's wrangler.toml: bindings, migrations, queues
    const own = readFileSync(join(repo, "wrangler.toml"), "utf8");
    expect(toml.split("\n").slice(3)).toEqual(own.split("\n").slice(3));
    // the episode Worker: its own name and entry, its objects bound to this project's main Worker
    expect(read("src/episode.ts")).toContain("export default createEpisodeWorker(rolloutFunctions);");
    const episodeToml = read("wrangler.episode.toml");
    expect(episodeToml).toMatch(/^name = "my-rollouts-episode"$/m);
    expect(episodeToml).toMatch(/^main = "src\/episode.ts"$/m);
    expect(episodeToml).toMatch(/^script_name = "my-rollouts"$/m);
    expect(episodeToml).not.toMatch(/^script_name = "ajet-edge"$/m);
  });

  it("refuses a directory that is not empty and writes nothing", async () => {
    mkdirSync(join(base, "taken"));
    writeFileSync(join(base, "taken", "notes.txt"), "mine\n");
    await expect(initProject({ dir: join(base, "taken") })).rejects.toThrow(/taken exists and is not empty; give a new directory name/);
    expect(existsSync(join(base, "taken", "package.json"))).toBe(false);
  });
});

describe("init helpers", () => {
  it("names the package after the directory, npm-style", () => {
    expect(npmName("/x/My Rollouts")).toBe("my-rollouts");
    expect(npmName("/x/_private.stuff")).toBe("private.stuff");
    expect(npmName("/x/!!!")).toBe("my-rollouts");
  });

  it("reads --from as a path (file:, relative to the project) or as a version range; default ^version", () => {
    expect(dependencySpec(undefined, "0.1.0", "/tmp/a/p")).toBe("^0.1.0");
    expect(dependencySpec("/tmp/a/ajet-edge-0.1.0.tgz", "0.1.0", "/tmp/a/p")).toBe("file:../ajet-edge-0.1.0.tgz");
    expect(dependencySpec("file:/tmp/a/p/vendor/ajet-edge-0.1.0.tgz", "0.1.0", "/tmp/a/p")).toBe("file:./vendor/ajet-edge-0.1.0.tgz");
    expect(dependencySpec("/srv/ajet-edge", "0.1.0", "/tmp/a/p")).toBe("file:../../../srv/ajet-edge");
    expect(dependencySpec("~0.1.2", "0.1.0", "/tmp/a/p")).toBe("~0.1.2");
  });

  it("names the example function --function: its file, test, registry entry and the npm start script", async () => {
    const dir = join(base, "p");
    const result = await initProject({ dir, functionName: "solver" });
    expect(result.created).toEqual(expect.arrayContaining(["functions/solver.ts", "test/solver.test.ts"]));
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts["start"]).toBe("ajet-edge dev --function solver");
    expect(readFileSync(join(dir, "functions/index.ts"), "utf8")).toContain('"solver": solver,');
    expect(readFileSync(join(dir, "README.md"), "utf8")).toContain("functions/solver.ts");
    expect(JSON.stringify(pkg)).not.toContain(EXAMPLE_FUNCTION);
    await expect(initProject({ dir: join(base, "q"), functionName: "Bad_Name" })).rejects.toThrow(/must be kebab-case/);
    expect(existsSync(join(base, "q"))).toBe(false);
  });

  it("changes only the top-level name and main of wrangler.toml, never a binding's name", () => {
    const source = 'name = "ajet-edge"\nmain = "src/edge/index.ts"\n\n[[durable_objects.bindings]]\nname = "SCHEDULER"\nclass_name = "RolloutScheduler"\n';
    expect(projectWranglerToml(source, "p")).toBe('name = "p"\nmain = "src/index.ts"\n\n[[durable_objects.bindings]]\nname = "SCHEDULER"\nclass_name = "RolloutScheduler"\n');
  });
});

describe("ajet-edge init (main)", () => {
  it("exits 0 with the next steps, and 2 without DIR or on a non-empty DIR", async () => {
    const made = await runMain(["init", join(base, "p")]);
    expect(made.code).toBe(0);
    expect(made.logs.join("\n")).toMatch(/next:\n {2}cd .*p\n {2}npm install\n {2}npm start\n {2}npm test$/);
    const none = await runMain(["init"]);
    const again = await runMain(["init", join(base, "p")]);
    expect([none.code, again.code]).toEqual([2, 2]);
    expect(none.errors.join("\n")).toContain("ajet-edge init: missing DIR, e.g. `ajet-edge init my-rollouts`");
    expect(again.errors.join("\n")).toContain("exists and is not empty");
  });
});
