import { describe, expect, it } from "vitest";
import {
  classifyEndEpisodeError,
  SwarmAPIError,
  SwarmInputError,
  SwarmOperationError,
  SwarmTimeoutError,
} from "../../../src/client/index.ts";
import { InvalidWorkflowOutputError, ServerText } from "../../../src/protocol/index.ts";
import { allBodiesConsumed, claimOk, json, never, scriptedClient, text } from "./_support.ts";

const E1 = "e1000000000000000000000000000001";
const END = "POST /end_episode";
const ABORT = "POST /abort_episode";
const ok = json(200, { success: true });
const detail400 = (d: string) => json(400, { detail: d });

describe("endEpisode (spec §3.9, §5.5)", () => {
  it("sends task_id and metadata.task_id from the task, on a copy of the caller's output", async () => {
    const { client, server } = scriptedClient({ [END]: ok });
    const output = { reward: 0.0, is_success: false, metadata: { answer_given: 80 } };
    const r = await client.endEpisode({ task_id: "arith-2" }, E1, output);
    expect(r).toEqual({ kind: "ended", deliveredEarlier: false });
    expect(server.calls[0]!.body).toEqual({
      client_uuid: "client-1",
      episode_uuid: E1,
      workflow_output: { reward: 0, is_success: false, metadata: { answer_given: 80, task_id: "arith-2" }, log_metrics: {} },
      task_id: "arith-2",
      declare_client_active: true,
    });
    expect(output).toEqual({ reward: 0.0, is_success: false, metadata: { answer_given: 80 } });
    expect(allBodiesConsumed(server.responses)).toBe(true);
  });

  it("BC-30 an empty task_id is refused before any network call", async () => {
    const { client, server } = scriptedClient({ [END]: ok });
    for (const task of [{ task_id: "" }, ""]) {
      const err = (await client.endEpisode(task, E1, { reward: 1 }).catch((e: unknown) => e)) as SwarmInputError;
      expect(err).toBeInstanceOf(SwarmInputError);
      expect(err.field).toBe("task.task_id");
    }
    await expect(client.endEpisode("t", "", { reward: 1 })).rejects.toBeInstanceOf(SwarmInputError);
    expect(server.calls).toHaveLength(0);
  });

  it.each([
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["null", null],
    ["a list", [0.2, 1.0]],
  ])("BC-22 a reward of %s is refused at the client boundary before any network call", async (_n, reward) => {
    const { client, server } = scriptedClient({ [END]: ok });
    const err = await client.endEpisode("t", E1, { reward } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidWorkflowOutputError);
    expect((err as InvalidWorkflowOutputError).reason).toBe("invalid_reward");
    expect(server.calls).toHaveLength(0);
  });

  it.each([
    ["expired", "notClaimed", detail400(ServerText.episodeNotClaimed(E1))],
    ["expired", "claimedByOtherClient", json(404, { detail: ServerText.claimedByOther(E1, "other", "client-1") })],
    ["lost", "notFound", detail400(ServerText.episodeNotFound(E1))],
    ["lost", "weightSyncing", detail400(ServerText.endNotRolling("ENGINE.WEIGHT_SYNCING"))],
    ["lost", "engineNotRolling", detail400(ServerText.endNotRolling("ENGINE.OFFLINE"))],
  ])("BC-23 a refusal is a %s/%s value, sent once and never retried", async (kind, reason, reply) => {
    const { client, server } = scriptedClient({ [END]: reply, [ABORT]: ok });
    const r = await client.endEpisode("t", E1, { reward: 1 });
    expect(r).toMatchObject({ kind, reason });
    expect(r.kind !== "ended" && r.kind !== "abortedLocally" && r.error).toBeInstanceOf(SwarmAPIError);
    expect(server.routes()).toEqual([END]); // no retry and no abort (abort has no ownership check)
  });

  it("an unclassified error (text 500) is thrown; success:false is a SwarmOperationError", async () => {
    const a = scriptedClient({ [END]: text(500, "Internal Server Error") });
    await expect(a.client.endEpisode("t", E1, { reward: 1 })).rejects.toBeInstanceOf(SwarmAPIError);
    const b = scriptedClient({ [END]: json(200, { success: false }) });
    await expect(b.client.endEpisode("t", E1, { reward: 1 })).rejects.toBeInstanceOf(SwarmOperationError);
  });

  it("BC-26 a timed-out end is not retried; the resend that gets 'not found' counts as delivered", async () => {
    const { client, server } = scriptedClient({ [END]: [never, detail400(ServerText.episodeNotFound(E1))] });
    const first = await client.endEpisode("t", E1, { reward: 1 }, { timeoutMs: 5 }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(SwarmTimeoutError);
    expect(server.callsTo(END)).toHaveLength(1);
    const resend = await client.endEpisode("t", E1, { reward: 1 }, { isResend: true });
    expect(resend).toEqual({ kind: "ended", deliveredEarlier: true });
    expect(server.callsTo(END)).toHaveLength(2);
  });

  it("BC-26 helpers classify errors for callers that catch them", () => {
    const nf = new SwarmAPIError(400, "endEpisode", END, ServerText.episodeNotFound(E1), {});
    expect(classifyEndEpisodeError(nf)).toMatchObject({ kind: "lost", reason: "notFound" });
    expect(classifyEndEpisodeError(new SwarmAPIError(500, "endEpisode", END, "Internal Server Error", ""))).toBeNull();
    expect(classifyEndEpisodeError(new Error("x"))).toBeNull();
  });
});

describe("BC-24 local expiry (8 × discard_episode_timeout)", () => {
  const script = { "POST /claim_episode": claimOk(E1), [END]: ok, [ABORT]: ok };

  it("BC-24 past the cap (240 s → 1920 s) sends exactly one abort and no end", async () => {
    const { client, server, clock } = scriptedClient(script, { localExpiry: true });
    const ep = await client.claimEpisode({ discardEpisodeTimeoutSeconds: 240 });
    expect(ep.kind === "claimed" && ep.expiresAtMs - ep.claimedAtMs).toBe(1_920_000);
    clock.advance(2_000_000);
    const r = await client.endEpisode("t", E1, { reward: 1 });
    expect(r).toEqual({ kind: "abortedLocally", reason: "localExpiry", overdueMs: 80_000 });
    expect(server.callsTo(ABORT)).toHaveLength(1);
    expect(server.callsTo(END)).toHaveLength(0);
  });

  it("BC-24 below the cap it ends", async () => {
    const { client, server, clock } = scriptedClient(script, { localExpiry: { lifetimeFactor: 8 } });
    await client.claimEpisode({ discardEpisodeTimeoutSeconds: 240 });
    clock.advance(1_900_000);
    expect(await client.endEpisode("t", E1, { reward: 1 })).toEqual({ kind: "ended", deliveredEarlier: false });
    expect(server.routes()).toEqual(["POST /claim_episode", END]);
  });

  it("off by default: the consumer decides, so a late end is sent", async () => {
    const { client, server, clock } = scriptedClient(script);
    await client.claimEpisode({ discardEpisodeTimeoutSeconds: 240 });
    clock.advance(2_000_000);
    await client.endEpisode("t", E1, { reward: 1 });
    expect(server.callsTo(END)).toHaveLength(1);
    expect(server.callsTo(ABORT)).toHaveLength(0);
  });
});

describe("abortEpisode (spec §3.10)", () => {
  it("sends exactly the Python body", async () => {
    const { client, server } = scriptedClient({ [ABORT]: ok });
    expect(await client.abortEpisode(E1)).toBe(true);
    expect(server.calls[0]!.body).toEqual({
      client_uuid: "client-1",
      episode_uuid: E1,
      workflow_output: { reward: 0.0, is_success: null, metadata: {}, log_metrics: {} },
      task_id: "",
      declare_client_active: true,
    });
  });

  it("reports errors typed, or logs and returns false when quiet", async () => {
    const { client, log } = scriptedClient({ [ABORT]: text(500, "Internal Server Error") });
    await expect(client.abortEpisode(E1)).rejects.toBeInstanceOf(SwarmAPIError);
    expect(await client.abortEpisode(E1, { quiet: true })).toBe(false);
    expect(log.lines.filter((l) => l.level === "error")).toHaveLength(1);
  });
});
