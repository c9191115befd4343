// StrykerJS settings shared by `npm run mutation` (scripts/mutation/run.ts adds the rooms to mutate, the concurrency
// and the incremental file) and a plain `npx stryker run`. The unit vitest project only: see
// scripts/mutation/vitest.config.ts for why the Workers-pool project cannot run under Stryker.
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "scripts/mutation/vitest.config.ts", related: true },
  plugins: ["@stryker-mutator/vitest-runner"],
  coverageAnalysis: "perTest",
  mutate: [
    "src/{scheduler,rewards,client,port,runtime,tasks}/**/*.ts",
    "!src/**/index.ts",
  ],
  // the sandbox needs the sources, the unit tests and what they read (docs/ too: unit tests check tables the docs
  // print); not the benches, Worker/e2e tests
  ignorePatterns: ["bench", "dist", ".wrangler", "test/e2e", "test/edge", "test/chaos", "test/security", "reports", ".stryker-tmp"],
  // a static mutant (a module-level constant: wire strings, defaults) is active from import on, so every test has to
  // run for it: 15 % of the port's mutants took ~70 % of its time here. They are left out (reported as Ignored, not
  // in the score): a cost decision on 2 cores — module-level constants are not judged by this run
  ignoreStatic: true,
  concurrency: 2,
  timeoutMS: 10_000,
  timeoutFactor: 2,
  incrementalFile: "reports/mutation/stryker-incremental.json",
  // the incremental file is the full JSON report (mutation-testing-report-schema); the HTML one is for reading locally
  reporters: ["html", "clear-text", "progress-append-only"],
  htmlReporter: { fileName: "reports/mutation/index.html" },
  clearTextReporter: { allowColor: false, logTests: false, maxTestsToLog: 0, reportScoreTable: true, reportMutants: false },
  thresholds: { high: 90, low: 85, break: null },
  // Stryker rewrites a sandboxed tsconfig's `extends`/`references` with the `typescript` package's JS API, which
  // TypeScript 7 (the native compiler) no longer has; our tsconfigs have neither, so point it at no file at all
  tsconfigFile: "no-tsconfig-to-rewrite.json",
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
};
