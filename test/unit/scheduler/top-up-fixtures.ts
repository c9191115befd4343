/**
 * Fixtures of the top-up tests (scheduler/top-up-ask through `decide`): a run whose first window landed at step 1, the
 * pool the server shows for it, and the asks the run sends. Shared by top-up-ask.test.ts and top-up-ask-rules.test.ts.
 */
import type { PollEngineStatus, PoolSeen } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

/** The top-up asks the run sent with its status polls. */
export const asksOf = (h: Harness) => h.commands.filter((c): c is PollEngineStatus => c.type === "pollEngineStatus" && c.plan?.ask !== undefined).map((c) => c.plan!.ask!);
/** Every episode uuid the run's batches hold. */
export const uuids = (h: Harness) => Object.values(h.state.batches).flatMap((b) => [...b.episodes.keys()]);
/** The pool of step 1 with a task target of `target`, listing our landed episodes (one task each), nothing running. */
export const pool = (h: Harness, target: number, foreign: Record<string, string[]> = {}): PoolSeen => {
  const ours = uuids(h);
  return { globalStep: 1, completedTasks: ours.length + Object.keys(foreign).length, completedTaskTarget: target, episodeUuids: [...ours, ...Object.values(foreign).flat()], taskEpisodes: { ...Object.fromEntries(ours.map((u) => [`t-${u}`, [u]])), ...foreign }, runningTaskIds: {} };
};
/** An engine status observation at step 1 (ROLLING) with `p` and, when given, the server object's top-up grant. */
export const seen = (h: Harness, p: PoolSeen, grant?: { step: number; groups: number }) =>
  h.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 1, pool: p, ...(grant ? { topUpGrant: grant } : {}) });

/** A 1-step run of 2 tasks (1 repeat) whose window landed at step 1, in a batch the pool says takes `target` tasks. */
export function landed(target: number, maxSteps = 1) {
  const h = new Harness(specInput({ batchSize: 2, numRepeat: 1, maxParallel: 4, maxSteps }));
  h.answerTopUps = false;
  h.start();
  h.rolling(1);
  for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 1);
  seen(h, pool(h, target));
  return h;
}
