/** @module protocol — zod schemas and exact strings of the AgentJet swarm wire protocol (spec §2, §3, §6, §7). */
export * from "./api-key.ts";
export * from "./endpoints.ts";
export * from "./engine.ts";
export * from "./episode.ts";
export * from "./gateway-headers.ts";
export * from "./server-texts.ts";
export * from "./pool.ts";
export * from "./task.ts";
export * from "./throttle.ts";
