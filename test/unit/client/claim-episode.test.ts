import { describe, expect, it } from "vitest";
import { normalizeServerUrl, rewriteBaseUrl, routeUrl, SwarmClient, SwarmInputError } from "../../../src/client/index.ts";
import { defaultEpisodeKey, ServerText } from "../../../src/protocol/index.ts";
import { allBodiesConsumed, claimFail, claimOk, scriptedClient, scriptedFetch } from "./_support.ts";

const UUID = "9f1e0000000000000000000000000001";
const KEY = defaultEpisodeKey(UUID);
const claimed = (baseUrl?: string) => claimOk(UUID, baseUrl);
const failed = claimFail;

describe("URLs (spec §5.3, §11.19)", () => {
  it("normalises the server URL and keeps a path prefix", () => {
    expect(normalizeServerUrl("http://127.0.0.1:10086")).toBe("http://127.0.0.1:10086");
    expect(normalizeServerUrl("https://gw.example.com/ajet/")).toBe("https://gw.example.com/ajet");
    expect(normalizeServerUrl("https://gw.example.com//ajet//")).toBe("https://gw.example.com/ajet");
    expect(routeUrl("https://gw.example.com/ajet", "/claim_episode")).toBe("https://gw.example.com/ajet/claim_episode");
    expect(() => normalizeServerUrl("gw.example.com")).toThrow(SwarmInputError);
    expect(() => normalizeServerUrl("ftp://gw.example.com")).toThrow(/must be http/);
  });
  it("rewrites scheme, host and port of the returned base URL", () => {
    expect(rewriteBaseUrl("http://127.0.0.1:10086", "http://127.0.0.1:10086/v1")).toBe("http://127.0.0.1:10086/v1");
    expect(rewriteBaseUrl("https://gw.example.com/ajet", "http://10.0.0.5:10086/v1/")).toBe("https://gw.example.com/ajet/v1");
    expect(rewriteBaseUrl("https://gw.example.com/ajet", "http://10.0.0.5:10086//v1")).toBe("https://gw.example.com/ajet/v1");
    expect(rewriteBaseUrl("https://gw.example.com/ajet", "")).toBe("https://gw.example.com/ajet/v1");
  });
  it("BC-37 server URL https://gw.example.com/ajet/ + returned http://10.0.0.5:10086/v1 → https://gw.example.com/ajet/v1, key verbatim", async () => {
    const server = scriptedFetch({ "POST /claim_episode": claimed() }, "/ajet");
    const client = new SwarmClient({ baseURL: "https://gw.example.com/ajet/", clientUuid: "client-1", fetch: server.fetch });
    const r = await client.claimEpisode();
    expect(server.calls[0]!.url).toBe("https://gw.example.com/ajet/claim_episode");
    expect(r).toMatchObject({ kind: "claimed", episodeUuid: UUID, baseUrl: "https://gw.example.com/ajet/v1", apiKey: KEY });
    expect(r.kind === "claimed" && r.baseUrl.includes("//v1")).toBe(false);
  });
});

describe("claimEpisode: one attempt, a discriminated result (spec §3.8)", () => {
  it("sends every field, throttle_policy null when unused, and returns claimed", async () => {
    const { client, server, clock } = scriptedClient({ "POST /claim_episode": claimed("http://127.0.0.1:10086/v1") });
    const r = await client.claimEpisode({ discardEpisodeTimeoutSeconds: 60 });
    expect(server.calls[0]!.body).toEqual({ client_uuid: "client-1", episode_type: "train", discard_episode_timeout: 60, throttle_policy: null });
    expect(Object.keys(server.calls[0]!.body as object)).toContain("throttle_policy");
    expect(r).toMatchObject({
      kind: "claimed",
      episodeUuid: UUID,
      baseUrl: "http://swarm.test:10086/v1",
      apiKey: KEY,
      episodeType: "train",
      discardEpisodeTimeoutSeconds: 60,
      claimedAtMs: clock.state.nowMs,
      expiresAtMs: clock.state.nowMs + 8 * 60 * 1000,
    });
    expect(allBodiesConsumed(server.responses)).toBe(true);
  });

  it("defaults to 240 s and serialises a throttle policy with its default ratio", async () => {
    const { client, server } = scriptedClient({ "POST /claim_episode": claimed() });
    await client.claimEpisode({
      episodeType: "eval",
      throttlePolicy: { expected_batch_size: 32, expected_num_repeat: 4, current_task_id: "1234" } as never,
    });
    expect(server.calls[0]!.body).toEqual({
      client_uuid: "client-1",
      episode_type: "eval",
      discard_episode_timeout: 240,
      throttle_policy: { ratio: 1.5, expected_batch_size: 32, expected_num_repeat: 4, current_task_id: "1234" },
    });
  });

  it.each([
    ["notReady", ServerText.engineNotReady("ENGINE.WEIGHT_SYNCING"), { kind: "notReady", reason: "syncing", status: "ENGINE.WEIGHT_SYNCING" }],
    ["notReady", ServerText.engineNotReady("ENGINE.ROLLING_POST"), { kind: "notReady", reason: "postRolling", status: "ENGINE.ROLLING_POST" }],
    ["notReady", ServerText.engineNotReady("ENGINE.OFFLINE"), { kind: "notReady", reason: "notReady", status: "ENGINE.OFFLINE" }],
    ["empty", ServerText.noAvailableEpisodes, { kind: "empty" }],
    ["empty", ServerText.vanishedEpisode, { kind: "empty" }],
    ["rejected", "Something new from a newer server", { kind: "rejected" }],
  ])("maps a %s fail_cause to a value, not an error", async (_kind, failCause, expected) => {
    const { client } = scriptedClient({ "POST /claim_episode": failed(failCause) });
    expect(await client.claimEpisode()).toEqual({ ...expected, failCause });
  });

  it.each([
    [{ discardEpisodeTimeoutSeconds: 0 }, "discardEpisodeTimeoutSeconds"],
    [{ discardEpisodeTimeoutSeconds: Number.NaN }, "discardEpisodeTimeoutSeconds"],
    [{ episodeType: "bogus" as never }, "episodeType"],
    [{ throttlePolicy: { expected_batch_size: 32, expected_num_repeat: 4, current_task_id: "" } as never }, "throttlePolicy.current_task_id"],
    [{ throttlePolicy: { expected_batch_size: "32", current_task_id: "x" } as never }, "throttlePolicy"],
  ])("refuses bad options before any request (%o)", async (options, field) => {
    const { client, server } = scriptedClient({ "POST /claim_episode": claimed() });
    const err = (await client.claimEpisode(options).catch((e: unknown) => e)) as SwarmInputError;
    expect(err).toBeInstanceOf(SwarmInputError);
    expect(err.field).toBe(field);
    expect(server.calls).toHaveLength(0);
  });
});
