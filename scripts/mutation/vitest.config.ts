/**
 * @module scripts/mutation/vitest.config — the vitest config StrykerJS runs: the root config's `unit` project alone
 * (Node). The `edge` project runs inside workerd through @cloudflare/vitest-pool-workers, which Stryker's vitest
 * runner cannot drive (it needs the tests in its own Node threads to activate a mutant and read per-test coverage);
 * `e2e` starts whole processes. So a mutant is judged by the unit tests only.
 */
import { defineConfig, type TestProjectInlineConfiguration } from "vitest/config";
import root from "../../vitest.config.ts";

const unit = (root.test?.projects ?? []).find((p): p is TestProjectInlineConfiguration => typeof p === "object" && "test" in p && p.test?.name === "unit");
if (!unit) throw new Error("vitest.config.ts has no `unit` project; scripts/mutation/vitest.config.ts runs that one");

/**
 * Unit tests a mutant is NOT judged by (they still run in `npm test`): each survivor pays every test that covers it,
 * on 2 cores, so slow files that are not tests of the mutated rooms stay out —
 *  - the CLI's, the emulator's and the dashboard's own tests (processes, servers, renderers: not the rooms' rules);
 *  - the two 13–17 s scheduler simulations (random worlds of 40 seeds × thousands of events); the seeded fast-check
 *    laws in test/unit/scheduler/laws.test.ts judge the same rules on smaller worlds.
 */
export const NOT_JUDGING = ["test/unit/cli/**", "test/unit/emulator/**", "test/unit/dashboard/**", "test/unit/scheduler/property.test.ts", "test/unit/scheduler/distinct-windows.test.ts"];

// - instrumented code runs slower (every mutant is a branch, every statement counts coverage): a test's budget grows;
// - `isolate: false`: the test files share one module graph instead of importing the sources again for each file and
//   each mutant (Stryker switches mutants at run time, so a loaded module serves every mutant; static ones are ignored)
// MUTATION_TESTS (set by `npm run mutation -- --tests <globs>`, comma-separated): only these unit test files judge the
// mutants — a short run of one file by the tests that state its rules; a mutant only another test kills then survives
const only = process.env.MUTATION_TESTS?.split(",").map((g) => g.trim()).filter(Boolean);

export default defineConfig({
  ...unit,
  test: {
    ...unit.test, name: undefined, ...(only?.length ? { include: only } : {}),
    exclude: [...(unit.test?.exclude ?? []), "**/node_modules/**", ...NOT_JUDGING], testTimeout: 180_000, isolate: false,
  },
});
