/**
 * Fixtures of the top-up tests (scheduler/top-up-ask through `decide`): a run whose first window landed at step 1, the
 * pool the server shows for it, the asks the run sends, and a finishing run waiting for others. Shared by the top-up-* tests.
 */
import type { PollEngineStatus, PoolSeen } from "../../../src/scheduler/index.ts";
import { TOP_UP_RETRY_MS } from "../../../src/scheduler/top-up-ask.ts";
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

/** The step-1 pool of {@link landed}(6) with another client still serving one task of the batch. */
export const serving = (h: Harness): PoolSeen => ({ ...pool(h, 6), runningTaskIds: { "other-uuid": "other-task" } });

/**
 * A finishing run whose batch lacks 4 tasks: it topped up the 2 its room allows (granted, landed), and another client
 * still serves a task of the batch, so it waits for others (its wait recorded at step 1, TOP_UP_RETRY_MS later).
 */
export function waitingForOthers(): Harness {
  const h = landed(6);
  seen(h, pool(h, 6), { step: 1, groups: 2 });
  for (const d of h.takeDispatches()) h.finishEpisode(d, 1, 1);
  seen(h, serving(h));
  h.advance(TOP_UP_RETRY_MS);
  return h;
}
