import { describe, expect, it } from "vitest";
import { checkThrottlePolicy, poolForThrottle, rememberSeenTask, shouldThrottle, SwarmAbortError, SwarmInputError } from "../../../src/client/index.ts";
import { CurrentBatchRolloutPoolInformation, SwarmThrottlePolicy } from "../../../src/protocol/index.ts";

const ME = "me";
const policy = (ratio: number, current = "new-task") =>
  SwarmThrottlePolicy.parse({ ratio, expected_batch_size: 32, expected_num_repeat: 4, current_task_id: current });

/** `n` running episodes of this client, one per distinct task `t0…t(n-1)`. */
function runningOwn(n: number, extra: Record<string, Record<string, string>> = {}) {
  const running: Record<string, Record<string, string>> = { ...extra };
  for (let i = 0; i < n; i++) running[`ep${i}`] = { client_uuid: ME, optional_task_id: `t${i}`, episode_status: "claimed" };
  return CurrentBatchRolloutPoolInformation.parse({ running_episode_details: running });
}

describe("BC-31 throttle ratio arithmetic (spec §7.1)", () => {
  it("BC-31 batch 32, ratio 0.4 (cap 12.8): holding 12 tasks the 13th is allowed", () => {
    expect(shouldThrottle(policy(0.4), runningOwn(12), ME, [])).toBe(false);
  });
  it("BC-31 batch 32, ratio 0.4: holding 13 tasks the next new task is throttled", () => {
    const d = checkThrottlePolicy(policy(0.4), runningOwn(13), ME, []);
    expect(d.throttle).toBe(true);
    expect(d.reason).toBe(
      "Throttling because there are already 13 unique tasks in the batch, which meets/exceeds the threshold of 12.8 for task_id new-task.",
    );
  });
  it("BC-31 ratio 0.5 (cap 16): 15 held → allowed, 16 held → throttled", () => {
    expect(shouldThrottle(policy(0.5), runningOwn(15), ME, [])).toBe(false);
    expect(shouldThrottle(policy(0.5), runningOwn(16), ME, [])).toBe(true);
  });
  it("BC-31 the 2nd repeat of a task this client already started is always allowed", () => {
    // t3 has 1 of 4 repeats running; the client is far over its cap for new tasks.
    expect(shouldThrottle(policy(0.5), runningOwn(20), ME, [])).toBe(true);
    expect(shouldThrottle(policy(0.5, "t3"), runningOwn(20), ME, [])).toBe(false);
  });
  it("BC-31 a task seen recently or started by another client is allowed", () => {
    expect(shouldThrottle(policy(0.5), runningOwn(20), ME, ["new-task"])).toBe(false);
    const alien = { x: { client_uuid: "other", optional_task_id: "new-task" } };
    expect(shouldThrottle(policy(0.5), runningOwn(20, alien), ME, [])).toBe(false);
  });
  it("BC-31 tasks shared with other clients do not count toward this client's cap", () => {
    // 16 own tasks, 1 of them also run by another client → 15 unique → under the cap of 16.
    const shared = { y: { client_uuid: "other", optional_task_id: "t0" } };
    expect(shouldThrottle(policy(0.5), runningOwn(16, shared), ME, [])).toBe(false);
  });
  it("BC-31 nothing running (null) and the batch not full → not throttled", () => {
    const completed: Record<string, string[]> = {};
    for (let i = 0; i < 20; i++) completed[`c${i}`] = [ME, ME, ME, ME];
    const pool = CurrentBatchRolloutPoolInformation.parse({ completed_tasks_client_uuids: completed, running_episode_details: null });
    expect(shouldThrottle(policy(0.5), pool, ME, [])).toBe(false);
  });
  it("BC-31 running_episode_details {} is not null: the escape hatch does not apply", () => {
    const completed: Record<string, string[]> = {};
    for (let i = 0; i < 20; i++) completed[`c${i}`] = [ME];
    const base = { completed_tasks_client_uuids: completed };
    expect(shouldThrottle(policy(0.5), CurrentBatchRolloutPoolInformation.parse({ ...base, running_episode_details: null }), ME, [])).toBe(false);
    expect(shouldThrottle(policy(0.5), CurrentBatchRolloutPoolInformation.parse({ ...base, running_episode_details: {} }), ME, [])).toBe(true);
  });
  it("BC-31 null details: own completed entries count once per task (the walk stops), so the hatch stays open", () => {
    const completed: Record<string, string[]> = {};
    for (let i = 0; i < 32; i++) completed[`c${i}`] = [ME, ME, ME, ME];
    const pool = CurrentBatchRolloutPoolInformation.parse({ completed_tasks_client_uuids: completed });
    expect(shouldThrottle(policy(0.5), pool, ME, [])).toBe(false);
    // 32 tasks finished by other clients (the batch is full) plus 16 own tasks → the cap (16) is evaluated.
    const full: Record<string, string[]> = {};
    for (let i = 0; i < 32; i++) full[`o${i}`] = ["o", "o", "o", "o"];
    for (let i = 0; i < 16; i++) full[`c${i}`] = [ME];
    expect(shouldThrottle(policy(0.5), CurrentBatchRolloutPoolInformation.parse({ completed_tasks_client_uuids: full }), ME, [])).toBe(true);
  });
  it("stops walking a completed list at the first own entry (faithful quirk)", () => {
    // [me, other]: the walk stops at "me", so the task is own and NOT alien → counts toward the cap.
    // [other, me]: "other" is seen first → alien → does not count.
    const completed: Record<string, string[]> = {};
    for (let i = 0; i < 16; i++) completed[`c${i}`] = i === 0 ? ["other", ME] : [ME, "other"];
    const pool = CurrentBatchRolloutPoolInformation.parse({ completed_tasks_client_uuids: completed, running_episode_details: {} });
    expect(checkThrottlePolicy(policy(0.5), pool, ME, []).throttle).toBe(false); // 15 unique own
    completed["c0"] = [ME, "other"];
    const pool2 = CurrentBatchRolloutPoolInformation.parse({ completed_tasks_client_uuids: completed, running_episode_details: {} });
    expect(checkThrottlePolicy(policy(0.5), pool2, ME, []).throttle).toBe(true); // 16 unique own
  });
  it("an empty current_task_id is an input error, not a retry loop (spec §11.14)", () => {
    expect(() => shouldThrottle(policy(0.5, ""), runningOwn(0), ME, [])).toThrow(SwarmInputError);
    expect(() => shouldThrottle(policy(0.5, ""), runningOwn(0), ME, [])).toThrow(/Task_Ratio_Limit requires current_task_id to be set\./);
  });
});

describe("rememberSeenTask (Python _remember_seen_task)", () => {
  it("appends once and keeps at most batch × repeat × 3 entries", () => {
    const p = SwarmThrottlePolicy.parse({ expected_batch_size: 1, expected_num_repeat: 2, current_task_id: "x" });
    const recent: string[] = [];
    for (const t of ["a", "b", "a", "c", "d", "e", "f", "g"]) rememberSeenTask(recent, t, p);
    expect(recent).toEqual(["b", "c", "d", "e", "f", "g"]);
  });
});

describe("the pool read for the throttle check (Python get_rollout_stat)", () => {
  const warnings: string[] = [];
  const logger = { info: () => {}, warn: (m: string) => warnings.push(m), error: () => {}, debug: () => {} };

  it("a failed read never throttles: the all-defaults pool, with the seed's warning naming the error", async () => {
    warnings.length = 0;
    const view = await poolForThrottle(async () => {
      throw new Error("connect ECONNREFUSED");
    }, logger as never);
    expect(view).toEqual(CurrentBatchRolloutPoolInformation.parse({}));
    expect(warnings).toEqual(["Error getting rollout statistics: connect ECONNREFUSED"]);
  });

  it("the caller's abort is not a failed read: it propagates, with no warning", async () => {
    warnings.length = 0;
    const aborted = new SwarmAbortError("throttle check");
    await expect(poolForThrottle(async () => Promise.reject(aborted), logger as never)).rejects.toBe(aborted);
    expect(warnings).toEqual([]);
  });
});
