/**
 * @module functions/index — the registry of rollout functions the Worker bundles: name → default export.
 * Static imports only (the bundler must see every function). `ajet-edge new NAME` appends one import line above
 * the IMPORTS marker and one entry above the ENTRIES marker; keep both markers, one line per function, and the
 * key equal to the function's `name` (kebab-case, the file name).
 */
import { type RolloutFunction } from "ajet-edge";
/** Every shipped rollout function by name. */
export declare const rolloutFunctions: Record<string, RolloutFunction>;
