/**
 * @module ajet-edge/testing — test a rollout function without a server: `createTestContext` scripts the LLM's
 * replies and records the requests; `createFakeJudge` / `scriptedJudgeFetch` stand in for a judge endpoint.
 */
export * from "./sdk/testing.ts";
export * from "./rewards/judge-fake.ts";
