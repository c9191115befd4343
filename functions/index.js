import countdown from "./countdown.js";
import mathAgent from "./math-agent.js";
import academicTranslation from "./academic-translation.js";
// ajet-edge:imports (new functions are imported above this line)
/** Every shipped rollout function by name. */
export const rolloutFunctions = {
    "countdown": countdown,
    "math-agent": mathAgent,
    "academic-translation": academicTranslation,
    // ajet-edge:entries (new functions are registered above this line)
};
