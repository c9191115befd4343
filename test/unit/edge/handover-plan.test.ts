/**
 * The queue consumer's side of the handover (edge/consumer/handover-plan, docs/design/long-episodes.md): the gate
 * and reserves per wall, every episode moving (a run with secrets or gateway headers too: no value in the record), and the
 * `takeOver` call to the attempt's host (only for an applied claim; sent once more after a failure).
 */
import { describe, expect, it } from "vitest";
import { consumerHandover, handoverReserveMs, hostName, hostWallMs, reportReserveMs, type HostEnv } from "../../../src/edge/consumer/handover-plan.ts";
import type { HandoverRecord } from "../../../src/runtime/episode-resume.ts";
import type { ClaimedAttempt } from "../../../src/runtime/episode-runner.ts";
import { countdownTask, episodeMessage } from "../runtime/_harness.ts";

/** An `EPISODE_HOST` namespace whose hosts record `takeOver` calls; the first `failures` calls throw. */
function hosts(failures = 0) {
  const calls: Array<{ name: string; record: HandoverRecord }> = [];
  let failed = 0;
  const ns = {
    idFromName: (name: string) => ({ name }),
    get: (id: { name: string }) => ({
      takeOver: async (record: HandoverRecord) => {
        if (failed++ < failures) throw new Error("network lost");
        calls.push({ name: id.name, record });
        return "handed";
      },
    }),
  };
  return { calls, env: { EPISODE_HOST: ns } as unknown as HostEnv };
}

const task = countdownTask(3);
const attempt = (over: Partial<ClaimedAttempt> = {}): ClaimedAttempt => ({
  msg: episodeMessage(task, { runHasSecrets: false }),
  task,
  held: [{ swarm: "default", episodeUuid: "ep-1", episode: { kind: "claimed", episodeUuid: "ep-1", baseUrl: "http://127.0.0.1:10086/v1", apiKey: "sk-ajet-x", episodeType: "train", discardEpisodeTimeoutSeconds: 60 }, globalStep: 4, client: {} as never } as never],
  claimedAtMs: 1_000,
  claimApplied: async () => true,
  ...over,
});

describe("handover timing per wall", () => {
  it("the gate is min(300 s, half the wall) before it, the hard stop min(20 s, a quarter) before it; a host leg's wall is 900 s unless set", () => {
    expect([handoverReserveMs(900_000), reportReserveMs(900_000)]).toEqual([300_000, 20_000]);
    expect([handoverReserveMs(20_000), reportReserveMs(20_000)]).toEqual([10_000, 5_000]);
    expect(hostWallMs(undefined)).toBe(900_000);
    expect(hostWallMs("40")).toBe(40_000);
    for (const bad of ["", "abc", "0", "-3", "Infinity"]) expect(hostWallMs(bad)).toBe(900_000);
  });
});

describe("consumerHandover", () => {
  it("without an EPISODE_HOST binding there is no handover; a run with secrets or gateway headers moves with no value in its record", async () => {
    expect(consumerHandover({} as HostEnv, { atMs: 20_000, ms: 20_000 })).toBeUndefined();
    const h = hosts();
    const plan = consumerHandover(h.env, { atMs: 20_000, ms: 20_000 })!;
    const withHeaders = episodeMessage(task, { runHasSecrets: true, swarms: [{ name: "default", url: "http://127.0.0.1:10086", headers: { "x-gw": "{{secrets.GW}}" } }] as never });
    for (const msg of [episodeMessage(task, { runHasSecrets: true }), episodeMessage(task), withHeaders]) expect(await plan(attempt({ msg }))!.hand([])).toBe("handed");
    expect(h.calls.map((c) => c.record.msg.runHasSecrets)).toEqual([true, undefined, true]);
    expect(h.calls[2]!.record.msg.swarms[0]).toMatchObject({ headers: { "x-gw": "{{secrets.GW}}" } }); // the template, never a value
  });

  it("hands the attempt to its host (one per run, episode key and attempt) with the claims as plain data and the journal; the gate at wall − 10 s", async () => {
    const h = hosts();
    const plan = consumerHandover(h.env, { atMs: 120_000, ms: 20_000 })!(attempt())!;
    expect(plan.gateAtMs).toBe(110_000);
    const entries = [{ key: "k1", status: 200, headers: [] as Array<[string, string]>, body: "{}" }];
    expect(await plan.hand(entries)).toBe("handed");
    expect(h.calls).toHaveLength(1);
    const { name, record } = h.calls[0]!;
    expect(name).toBe(hostName({ runId: "run-test", episodeKey: `${task.task_id}#0`, attempt: 1 }));
    expect(record).toMatchObject({ leg: 1, claimedAtMs: 1_000, entries, task, claims: [{ swarm: "default", episodeUuid: "ep-1", globalStep: 4, episode: { apiKey: "sk-ajet-x" } }] });
    expect(record.claims[0]).not.toHaveProperty("client");
  });

  it("a claim the run did not apply is never moved (declined); a failed takeOver is sent once more", async () => {
    const h = hosts();
    const declined = consumerHandover(h.env, { atMs: 20_000, ms: 20_000 })!(attempt({ claimApplied: async () => false }))!;
    expect(await declined.hand([])).toBe("declined");
    expect(h.calls).toEqual([]);
    const flaky = hosts(1);
    const plan = consumerHandover(flaky.env, { atMs: 20_000, ms: 20_000 })!(attempt())!;
    expect(await plan.hand([])).toBe("handed");
    expect(flaky.calls).toHaveLength(1);
    const down = hosts(2);
    await expect(consumerHandover(down.env, { atMs: 20_000, ms: 20_000 })!(attempt())!.hand([])).rejects.toThrow("network lost");
  });
});
