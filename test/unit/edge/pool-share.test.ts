/**
 * The shared pool read of a swarm server's object (edge/swarm-server/pool-share): runs that ask for the pool
 * information at once share one read and one status poll after it (the workerd test in test/edge/swarm-server.test.ts
 * shows it on a real object); past the share window a run reads afresh; a failed read is not shared.
 */
import { describe, expect, it } from "vitest";
import { POOL_SHARE_MS, PoolShare, poolSeenOf } from "../../../src/edge/swarm-server/pool-share.ts";
import { CurrentBatchRolloutPoolInformation } from "../../../src/protocol/index.ts";
import type { PoolSeen } from "../../../src/scheduler/index.ts";

const pool = (globalStep: number): PoolSeen => ({ globalStep, completedTasks: 0, completedTaskTarget: 2, episodeUuids: [], taskEpisodes: {}, runningTaskIds: {} });

describe("the shared pool read", () => {
  it("six runs asking at once get one read and one poll after it; past the window the next ask reads again", async () => {
    let now = 0;
    let reads = 0;
    const polls: number[] = [];
    const share = new PoolShare();
    const read = async () => {
      reads++;
      await new Promise((r) => setTimeout(r, 5));
      return pool(reads);
    };
    const poll = async () => void polls.push(reads);
    const seen = await Promise.all(Array.from({ length: 6 }, () => share.read(read, poll, () => now)));
    expect(seen.map((p) => p?.globalStep)).toEqual([1, 1, 1, 1, 1, 1]);
    expect({ reads, polls }).toEqual({ reads: 1, polls: [1] }); // the poll started after the read it goes with
    now = POOL_SHARE_MS - 1;
    expect((await share.read(read, poll, () => now))?.globalStep).toBe(1);
    now = POOL_SHARE_MS;
    expect((await share.read(read, poll, () => now))?.globalStep).toBe(2);
    expect(polls).toEqual([1, 2]);
  });

  it("a failed read is not shared, and no poll follows it: the next ask reads again", async () => {
    const share = new PoolShare();
    let polls = 0;
    expect(await share.read(async () => undefined, async () => void polls++, () => 0)).toBeUndefined();
    expect(await share.read(async () => pool(7), async () => void polls++, () => 0)).toEqual(pool(7));
    expect(polls).toBe(1);
  });
});

describe("the pool information as the run's core reads it", () => {
  it("names the engine's sample-collection method once the engine pushed one, and none before (an empty string)", () => {
    const info = (sample_collection_method: string) =>
      CurrentBatchRolloutPoolInformation.parse({ sample_collection_method, completed_tasks: 1, completed_task_target: 2, global_step: 3, completed_tasks_details: { t: ["u1", "u2"] } });
    expect(poolSeenOf(info("rollout_until_all_clients_agree_sync_weight"))).toMatchObject({ globalStep: 3, completedTasks: 1, completedTaskTarget: 2, episodeUuids: ["u1", "u2"], method: "rollout_until_all_clients_agree_sync_weight" });
    expect(poolSeenOf(info(""))).not.toHaveProperty("method");
  });
});
