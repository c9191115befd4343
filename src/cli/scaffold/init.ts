/**
 * @module cli/scaffold/init — `ajet-edge init DIR`: a standalone project that depends on the ajet-edge package:
 * `package.json`, `wrangler.toml` (this package's own, with the project's name and entry), the Worker entry
 * `src/index.ts` (the `ajet-edge/worker` factory), `functions/index.ts` (the registry) with one example function
 * and its vitest test (written by the `new` scaffold), `tsconfig.json`, a README and a `.gitignore`. Node only.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { CliError } from "../command.ts";
import { packageRoot, type OwnPackageJson } from "../package-root.ts";
import { assertFunctionName } from "./names.ts";
import { REGISTRY_MARKERS } from "./registry.ts";
import { scaffoldFunction } from "./scaffold.ts";

/** The example function every new project starts with. */
export const EXAMPLE_FUNCTION = "my-agent";

/** Options of {@link initProject}. */
export interface InitOptions {
  /** the directory to create (absolute); it must not exist or be empty */
  dir: string;
  /**
   * the `ajet-edge` dependency spec of the new package.json: a version range, a tarball path or a directory
   * (relative paths are resolved against the current directory, then written relative to `dir`); default
   * `^<this package's version>`
   */
  from?: string;
  /** the example function's name (kebab-case), which `npm start` runs; default {@link EXAMPLE_FUNCTION} */
  functionName?: string;
}

/** What {@link initProject} wrote. */
export interface InitResult {
  dir: string;
  /** the project's npm name */
  name: string;
  /** files created, relative to `dir`, `/`-separated */
  created: string[];
}

/** An npm package name from a directory name: lower case, `[a-z0-9-._]`, not starting with `.` or `_`. */
export function npmName(dir: string): string {
  const name = basename(dir).toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[._-]+/, "").replace(/-+$/, "");
  return name || "my-rollouts";
}

/**
 * The `ajet-edge` dependency spec for `from`: a path (a tarball, a directory) as `file:` + the path relative to the
 * project directory `dir` (npm resolves it from the project's package.json, so the project can be moved or shared
 * with its tarball), anything else (a version range, a tag) as given.
 */
export function dependencySpec(from: string | undefined, version: string, dir: string): string {
  if (from === undefined) return `^${version}`;
  const path = from.replace(/^file:/, "");
  const looksLikePath = from.startsWith("file:") || path.endsWith(".tgz") || path.startsWith(".") || isAbsolute(path) || existsSync(path);
  if (!looksLikePath) return from;
  const rel = relative(dir, resolve(path)).split(sep).join("/");
  return `file:${rel.startsWith(".") ? rel : `./${rel}`}`;
}

/** `wrangler.toml` of a project: this package's, with the project's name and `main = "src/index.ts"`. */
export function projectWranglerToml(source: string, name: string): string {
  const lines = source.split("\n");
  // only the top-level keys, before the first [table]: bindings have `name` keys too
  const firstTable = lines.findIndex((line) => /^\s*\[/.test(line));
  const out = lines.map((line, i) => {
    if (firstTable >= 0 && i >= firstTable) return line;
    if (/^name\s*=/.test(line)) return `name = ${JSON.stringify(name)}`;
    if (/^main\s*=/.test(line)) return 'main = "src/index.ts"';
    return line;
  });
  if (out[0]?.startsWith("#")) out[0] = `# ${name}: an ajet-edge main Worker (the API and the scheduler Durable Objects; episodes run in wrangler.episode.toml's Worker).`;
  return out.join("\n");
}

/**
 * `wrangler.episode.toml` of a project: this package's, with the episode Worker named `<name>-episode`, its entry
 * `src/episode.ts`, and its Durable Object bindings pointed at the project's main Worker (`script_name = <name>`).
 */
export function projectEpisodeToml(source: string, name: string): string {
  const lines = source.split("\n");
  const firstTable = lines.findIndex((line) => /^\s*\[/.test(line));
  return lines
    .map((line, i) => {
      if (/^script_name\s*=/.test(line)) return `script_name = ${JSON.stringify(name)}`;
      if (firstTable >= 0 && i >= firstTable) return line;
      if (/^name\s*=/.test(line)) return `name = ${JSON.stringify(`${name}-episode`)}`;
      if (/^main\s*=/.test(line)) return 'main = "src/episode.ts"';
      return line;
    })
    .join("\n");
}

/** The files of a new project, path → text, before the example function is scaffolded into it. */
export function projectFiles(input: { name: string; spec: string; pkg: OwnPackageJson; wranglerToml: string; episodeToml: string; functionName?: string }): Record<string, string> {
  const fn = input.functionName ?? EXAMPLE_FUNCTION;
  const dev = { ...input.pkg.dependencies, ...input.pkg.devDependencies };
  const pin = (dep: string) => {
    const version = dev[dep];
    if (!version) throw new Error(`the ajet-edge package.json lists no version of ${dep}`);
    return version;
  };
  const packageJson = {
    name: input.name,
    version: "0.1.0",
    private: true,
    type: "module",
    scripts: {
      start: `ajet-edge dev --function ${fn}`,
      test: "vitest run",
      typecheck: "tsc --noEmit",
      new: "ajet-edge new",
      deploy: "wrangler deploy && wrangler deploy -c wrangler.episode.toml",
    },
    dependencies: { "ajet-edge": input.spec },
    devDependencies: {
      "@cloudflare/workers-types": pin("@cloudflare/workers-types"),
      "@types/node": pin("@types/node"),
      typescript: pin("typescript"),
      vitest: pin("vitest"),
      wrangler: pin("wrangler"),
    },
    ...(input.pkg.allowScripts ? { allowScripts: input.pkg.allowScripts } : {}),
  };
  const tsconfig = {
    compilerOptions: {
      target: "es2022",
      module: "es2022",
      moduleResolution: "bundler",
      lib: ["es2022"],
      types: ["@cloudflare/workers-types", "node"],
      strict: true,
      noUncheckedIndexedAccess: true,
      isolatedModules: true,
      verbatimModuleSyntax: true,
      allowImportingTsExtensions: true,
      skipLibCheck: true,
      noEmit: true,
    },
    include: ["src/**/*.ts", "functions/**/*.ts", "test/**/*.ts"],
  };
  return {
    "package.json": `${JSON.stringify(packageJson, null, 2)}\n`,
    "tsconfig.json": `${JSON.stringify(tsconfig, null, 2)}\n`,
    "wrangler.toml": input.wranglerToml,
    "wrangler.episode.toml": input.episodeToml,
    ".gitignore": ["node_modules/", ".wrangler/", "dist/", ".ajet/", "*.log", ""].join("\n"),
    "src/index.ts": `/**
 * The main Worker (wrangler.toml \`main\`): the runs API and the scheduler Durable Objects, built by ajet-edge over
 * the rollout functions of functions/index.ts (run creation checks their names). Episodes run in src/episode.ts.
 */
import { createWorker } from "ajet-edge/worker"; // first: ajet-edge's own modules load before your functions
import { rolloutFunctions } from "../functions/index.ts";

export * from "ajet-edge/worker"; // the Durable Object classes wrangler.toml binds
export default createWorker(rolloutFunctions);
`,
    "src/episode.ts": `/**
 * The episode Worker (wrangler.episode.toml \`main\`): the per-episode queue consumer over the rollout functions of
 * functions/index.ts. Its bundle holds ajet-edge's runtime and your functions only; it calls the main Worker's
 * scheduler objects by script_name.
 */
import { createEpisodeWorker } from "ajet-edge/episode-worker"; // first: the global fetch is fenced before your functions load
import { rolloutFunctions } from "../functions/index.ts";

// EpisodeHost: the object wrangler.episode.toml binds, which holds episodes past the queue consumer's wall
export { EpisodeRunner, EpisodeHost } from "ajet-edge/episode-worker";
export default createEpisodeWorker(rolloutFunctions);
`,
    "functions/index.ts": `/**
 * The registry of rollout functions the Worker bundles: name → default export. Static imports only (the bundler
 * must see every function). \`npx ajet-edge new NAME\` adds one import line above the imports marker and one entry
 * above the entries marker; keep both markers, one line per function, and the key equal to the function's \`name\`.
 */
import type { RolloutFunction } from "ajet-edge";
${REGISTRY_MARKERS.imports} (new functions are imported above this line)

/** Every rollout function of this project by name. */
export const rolloutFunctions: Record<string, RolloutFunction> = {
  ${REGISTRY_MARKERS.entries} (new functions are registered above this line)
};
`,
    "README.md": readme(input.name, fn),
  };
}

function readme(name: string, fn: string): string {
  return `# ${name}

Rollout functions for AgentJet Swarm on Cloudflare Workers, made with \`ajet-edge init\`.

\`\`\`sh
npm install
npm start          # a whole run on this machine: a local swarm emulator + this Worker in local workerd
npm test           # the functions' tests (vitest)
npm run typecheck
\`\`\`

- \`functions/${fn}.ts\`: an example function (one LLM call; reward 1.0 when the last \`\\boxed{}\` equals the
  task's gold answer). \`npm start\` runs it on its demo tasks; \`npm start -- --dataset PATH.jsonl --kind gsm8k\` on yours.
- \`npx ajet-edge new NAME\`: a new function in \`functions/NAME.ts\`, its test in \`test/NAME.test.ts\` and its line in
  \`functions/index.ts\`; run it with \`npm start -- --function NAME\`.
- \`src/index.ts\`: the main Worker (API, scheduler objects), three lines over \`ajet-edge/worker\`; \`wrangler.toml\`: its
  bindings. \`src/episode.ts\`: the episode Worker over \`ajet-edge/episode-worker\`; \`wrangler.episode.toml\`: its bindings.
- Deploying: \`npm run deploy\` (the main Worker, then the episode Worker) after the steps of \`node_modules/ajet-edge/docs/cloudflare.md\`. Writing
  functions: \`node_modules/ajet-edge/docs/writing-functions.md\`.
- Upgrading: \`npm install ajet-edge@latest\`, then compare \`wrangler.toml\` and \`wrangler.episode.toml\` with
  \`node_modules/ajet-edge/\`'s
  (a new Durable Object class needs its binding and migration here).
`;
}

/**
 * Creates the project.
 * @throws CliError (exit 2) when `dir` exists and is not empty
 */
export async function initProject(options: InitOptions): Promise<InitResult> {
  const dir = resolve(options.dir);
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new CliError(`${dir} exists and is not empty; give a new directory name, e.g. \`ajet-edge init my-rollouts\``);
  }
  const functionName = options.functionName ?? EXAMPLE_FUNCTION;
  assertFunctionName(functionName);
  const root = packageRoot();
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as OwnPackageJson;
  const name = npmName(dir);
  const files = projectFiles({
    name,
    spec: dependencySpec(options.from, pkg.version, dir),
    functionName,
    pkg,
    wranglerToml: projectWranglerToml(readFileSync(join(root, "wrangler.toml"), "utf8"), name),
    episodeToml: projectEpisodeToml(readFileSync(join(root, "wrangler.episode.toml"), "utf8"), name),
  });
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text, { flag: "wx" });
  }
  const example = await scaffoldFunction({ root: dir, name: functionName });
  return { dir, name, created: [...Object.keys(files), ...example.created] };
}
