/**
 * @module functions/index — the registry of rollout functions the Worker bundles: name → default export.
 * Static imports only (the bundler must see every function). `ajet-edge new NAME` appends one import line above
 * the IMPORTS marker and one entry above the ENTRIES marker; keep both markers, one line per function, and the
 * key equal to the function's `name` (kebab-case, the file name).
 */
import type { RolloutFunction } from "ajet-edge";
import countdown from "./countdown.ts";
import mathAgent from "./math-agent.ts";
import academicTranslation from "./academic-translation.ts";
import codeAgent from "./code-agent.ts";
// ajet-edge:imports (new functions are imported above this line)

/** Every shipped rollout function by name. */
export const rolloutFunctions: Record<string, RolloutFunction> = {
  "countdown": countdown,
  "math-agent": mathAgent,
  "academic-translation": academicTranslation,
  "code-agent": codeAgent,
  // ajet-edge:entries (new functions are registered above this line)
};
