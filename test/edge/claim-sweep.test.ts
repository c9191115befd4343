/**
 * Held claims reconciled inside workerd: a claim of the run that no attempt holds (a `/claim_episode` whose answer
 * was lost after the server acted) is released by the run itself, not left to the server's janitor; and an
 * episode whose abort the server never confirmed is aborted again by the object.
 */
import { describe, expect, it } from "vitest";
import { ControlledRun, countdownSpec, TestEmulator } from "./support.ts";

async function rollingRun() {
  const emu = await TestEmulator.start({ policy: { initialAccuracy: 1, malformedRate: 0 }, answerKey: [{ target: 24, nums: [2, 3, 4] }] });
  await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
  const run = await ControlledRun.create(countdownSpec(emu.url, { maxSteps: 1 }));
  return { emu, run };
}

describe("claims nobody holds", () => {
  it("a claim of the run's client that no attempt holds is released when the run finishes, so nothing is left claimed", async () => {
    const { emu, run } = await rollingRun();
    const first = run.sent[0]!;
    const orphan = await emu.client({ clientUuid: first.clientUuid }).claimEpisode({ episodeType: "train", discardEpisodeTimeoutSeconds: 60 });
    if (orphan.kind !== "claimed") throw new Error(`claim: ${orphan.kind}`);
    // another client's claim is never touched
    const foreign = await emu.client({ clientUuid: "someone-else" }).claimEpisode({ episodeType: "train", discardEpisodeTimeoutSeconds: 60 });
    if (foreign.kind !== "claimed") throw new Error(`claim: ${foreign.kind}`);

    await run.call((s) => s.stop());
    await run.expireLeases(run.sent.map((m) => m.episodeKey));
    await run.tick();
    const view = await run.call((s) => s.status());
    expect(view?.phase).toBe("finished");
    const records = (await emu.state()).records;
    expect(records.find((r) => r.episode_uuid === orphan.episodeUuid)?.episode_status).toBe("registered");
    expect(records.find((r) => r.episode_uuid === foreign.episodeUuid)).toMatchObject({ episode_status: "claimed", client_uuid: "someone-else" });
    expect(records.filter((r) => r.episode_status === "claimed" && r.client_uuid === first.clientUuid)).toEqual([]);
    expect(view?.log.some((l) => l.message.startsWith("released a claim of this run that nobody held"))).toBe(true);
  });

  it("an episode reported with an unconfirmed abort has its claim aborted again by the object's alarm", async () => {
    const { emu, run } = await rollingRun();
    const m = run.sent[0]!;
    const c = await emu.client({ clientUuid: m.clientUuid }).claimEpisode({ episodeType: "train", discardEpisodeTimeoutSeconds: 60 });
    if (c.kind !== "claimed") throw new Error(`claim: ${c.kind}`);
    await run.call((s) => s.episodeClaimed({ episodeKey: m.episodeKey, attempt: 1, dispatchId: m.dispatchId, claims: [{ swarm: "default", episodeUuid: c.episodeUuid, globalStep: 1 }] }));
    await run.call((s) => s.episodeOutcomeRecorded({ episodeKey: m.episodeKey, attempt: 1, outcome: { kind: "abort", cause: "function_error" } }));
    await run.call((s) => s.episodeReported({ episodeKey: m.episodeKey, attempt: 1, result: "aborted", cause: "abort_unconfirmed" }));
    await run.tick();
    const aborts = (await emu.requests()).filter((r) => r.path === "/abort_episode").map((r) => r.body.episode_uuid);
    expect(aborts).toEqual([c.episodeUuid]);
    expect((await emu.state()).records.find((r) => r.episode_uuid === c.episodeUuid)?.episode_status).toBe("registered");
  });
});
