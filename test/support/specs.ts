/**
 * Run specs the tests share, runtime-neutral (the Workers pool's test/edge/support.ts and the Node-side e2e and
 * security tests both use them).
 */
import type { RunSpecInput } from "../../src/scheduler/index.ts";

/** A run spec over inline Countdown tasks (`n` tasks, ids `cd:train:<i>`). */
export function countdownSpec(swarmUrl: string, overrides: Partial<RunSpecInput> & Record<string, unknown> = {}): Record<string, unknown> {
  const tasks = Array.from({ length: (overrides.taskCount as number | undefined) ?? 4 }, (_, i) => ({ target: 24, nums: [2, 3, 4], id: `t${i}` }));
  const { taskCount: _ignored, ...rest } = overrides;
  return {
    swarms: [{ url: swarmUrl }],
    datasets: [{ name: "cd", kind: "countdown", tasks }],
    function: "countdown",
    batchSize: 2,
    numRepeat: 2,
    maxEnvWorker: 4,
    discardEpisodeTimeoutSeconds: 60,
    ...rest,
  };
}
