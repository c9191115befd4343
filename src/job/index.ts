/** @module job — AgentJetJob: the default swarm YAML, the option → YAML key table, build/dump (spec §10). */
export * from "./default-config.ts";
export * from "./errors.ts";
export * from "./job.ts";
export * from "./options.ts";
export { pythonFloatRepr, pyyamlFloat } from "./yaml-text.ts";
