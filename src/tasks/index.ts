/** @module tasks — datasets → `Task`s with stable namespaced ids; the Countdown prompt and generator (spec §6.1). */
export * from "./byte-source.ts";
export * from "./countdown-generator.ts";
export * from "./dataset-index.ts";
export * from "./parquet-index.ts";
export * from "./countdown-prompt.ts";
export * from "./dataset-spec.ts";
export * from "./field-maps.ts";
export * from "./jsonl.ts";
export * from "./load.ts";
export * from "./readers.ts";
export * from "./task-codec.ts";
export * from "./task-id.ts";
export * from "./values.ts";
