/**
 * @module ajet-edge/testing — test a rollout function without a server: `createTestContext` scripts the LLM's
 * replies and records the requests; `createFakeJudge` / `scriptedJudgeFetch` stand in for a judge endpoint;
 * `testSandbox` gives `ctx.sandbox` over a sandbox backend (e.g. `localSandboxBackend` of a local sandbox server).
 */
export * from "./sdk/testing.ts";
export * from "./rewards/judge-fake.ts";
export { testSandbox, type TestSandbox } from "./sandbox/testing.ts";
export { localSandboxBackend, type LocalBackendOptions } from "./sandbox/local-backend.ts";
