/**
 * @module test/unit/client/pure-rules — the client's pure rules one at a time: route and base-URL rewriting
 * (BC-37), which `/end_episode` refusals are `expired`/`lost` (BC-23, BC-26), what a failed call says and whether it
 * is retried, the local expiry tracker (BC-24), own running episodes in the throttle (BC-31), and the claim's input
 * and protocol errors.
 */
import { describe, expect, it } from "vitest";
import {
  checkThrottlePolicy,
  classifyEndEpisodeError,
  isRetryableError,
  normalizeServerUrl,
  rewriteBaseUrl,
  routeUrl,
  SwarmAbortError,
  SwarmAPIError,
  SwarmConnectionError,
  SwarmDeadlineError,
  SwarmInputError,
  SwarmProtocolError,
  SwarmServerOfflineError,
  SwarmTimeoutError,
} from "../../../src/client/index.ts";
import { buildClaimRequest, toClaimResult } from "../../../src/client/claim.ts";
import { LocalExpiryTracker, resolveLocalExpiry } from "../../../src/client/local-expiry.ts";
import { CurrentBatchRolloutPoolInformation, ServerText, SwarmThrottlePolicy } from "../../../src/protocol/index.ts";

const SERVER = "https://gw.example.com/ajet";
const END = "POST /end_episode";
const E1 = "9f1e0000000000000000000000000001";

describe("URLs (BC-37)", () => {
  it("a route is joined under the prefix with exactly one slash, its inner slashes kept", () => {
    expect(routeUrl(SERVER, "claim_episode")).toBe(`${SERVER}/claim_episode`);
    expect(routeUrl(SERVER, "//claim_episode")).toBe(`${SERVER}/claim_episode`);
    expect(routeUrl(SERVER, "/v1/chat/completions")).toBe(`${SERVER}/v1/chat/completions`);
    expect(routeUrl(SERVER, "v1/chat/completions")).toBe(`${SERVER}/v1/chat/completions`);
  });

  it("the returned base URL's own path is kept (not only /v1), under the server's prefix", () => {
    expect(rewriteBaseUrl(SERVER, "http://10.0.0.5:10086/api/v2")).toBe(`${SERVER}/api/v2`);
    expect(rewriteBaseUrl("http://127.0.0.1:10086", "http://10.0.0.5:10086/proxy/v1/")).toBe("http://127.0.0.1:10086/proxy/v1");
  });

  it("a path-only or relative returned value is put under the server URL", () => {
    expect(rewriteBaseUrl(SERVER, "v1")).toBe(`${SERVER}/v1`);
    expect(rewriteBaseUrl(SERVER, "v1/")).toBe(`${SERVER}/v1`);
    expect(rewriteBaseUrl(SERVER, "api/v2")).toBe(`${SERVER}/api/v2`);
    expect(rewriteBaseUrl(SERVER, "/api/v2")).toBe(`${SERVER}/api/v2`);
  });

  it("whitespace around the returned value is ignored", () => {
    expect(rewriteBaseUrl(SERVER, "  http://10.0.0.5:10086/v1 \n")).toBe(`${SERVER}/v1`);
  });

  it("a bad server URL names the baseURL field, the value received and an example", () => {
    const notUrl = (() => {
      try {
        normalizeServerUrl("gw.example.com");
      } catch (err) {
        return err;
      }
    })() as SwarmInputError;
    expect(notUrl).toBeInstanceOf(SwarmInputError);
    expect(notUrl.field).toBe("baseURL");
    expect(notUrl.message).toBe('baseURL: not a URL: "gw.example.com"; pass e.g. "http://127.0.0.1:10086"');
    expect(() => normalizeServerUrl("ftp://gw.example.com")).toThrow(new SwarmInputError("baseURL", 'must be http(s), got "ftp://gw.example.com"'));
  });
});

describe("classifyEndEpisodeError: only a 400/404 with a known text is a refusal", () => {
  const apiError = (status: number, detail: string) => new SwarmAPIError(status, "endEpisode", END, detail, { detail });

  it("the known texts under another status are no refusal (the outcome is unknown)", () => {
    expect(classifyEndEpisodeError(apiError(400, ServerText.episodeNotFound(E1)))).toMatchObject({ kind: "lost", reason: "notFound" });
    expect(classifyEndEpisodeError(apiError(500, ServerText.episodeNotFound(E1)))).toBeNull();
    expect(classifyEndEpisodeError(apiError(409, ServerText.episodeNotFound(E1)))).toBeNull();
    expect(classifyEndEpisodeError(apiError(502, "Engine is not in rolling state"))).toBeNull();
  });

  it("an unknown 400 or 404 text is no refusal either", () => {
    expect(classifyEndEpisodeError(apiError(400, "Invalid reward shape"))).toBeNull();
    expect(classifyEndEpisodeError(apiError(404, "Not Found"))).toBeNull();
    expect(classifyEndEpisodeError(apiError(400, "Engine is not in rolling state, status ENGINE.OFFLINE"))).toMatchObject({ kind: "lost", reason: "engineNotRolling" });
  });
});

describe("errors: what a failed call says, and whether it is retried", () => {
  it("each error's message names what failed and the numbers", () => {
    expect(new SwarmTimeoutError("endEpisode", END, 5000).message).toBe(`${END} timed out after 5000 ms (the server may still complete it)`);
    expect(new SwarmAbortError("claimEpisode").message).toBe("claimEpisode aborted by the caller's signal");
    expect(new SwarmProtocolError("claimEpisode", "POST /claim_episode", "bad body", [], {}).message).toBe("POST /claim_episode: bad body");
    expect(new SwarmServerOfflineError(["ENGINE.ROLLING", "ENGINE.BOOTING"]).message).toMatch(/^Engine status is OFFLINE while waiting for \[ENGINE\.ROLLING, ENGINE\.BOOTING\]\. /);
    expect(new SwarmDeadlineError("waiting for engine status [ENGINE.ROLLING]", "ENGINE.BOOTING").message).toBe(
      "waiting for engine status [ENGINE.ROLLING]: deadline reached (last engine status: ENGINE.BOOTING)",
    );
    expect(new SwarmDeadlineError("claiming", null).message).toBe("claiming: deadline reached");
  });

  it("HTTP 408 and 429 are retried like 5xx; other 4xx are not", () => {
    const api = (status: number) => new SwarmAPIError(status, "claimEpisode", "POST /claim_episode", "x", {});
    expect([408, 429, 500, 503].map((s) => isRetryableError(api(s)))).toEqual([true, true, true, true]);
    expect([400, 401, 404, 409, 422].map((s) => isRetryableError(api(s)))).toEqual([false, false, false, false, false]);
  });

  it("a connection error is retried unless its cause says retryable: false", () => {
    expect(isRetryableError(new SwarmConnectionError("claimEpisode", "fetch failed", new TypeError("fetch failed")))).toBe(true);
    expect(isRetryableError(new SwarmConnectionError("claimEpisode", "fetch failed", undefined))).toBe(true);
    expect(isRetryableError(new SwarmConnectionError("claimEpisode", "budget", { retryable: false }))).toBe(false);
  });
});

describe("local expiry (BC-24)", () => {
  it("the option: off by default and for false, on with factor 8 for true, on with the given fields for an object", () => {
    expect(resolveLocalExpiry(undefined)).toEqual({ enabled: false, lifetimeFactor: 8 });
    expect(resolveLocalExpiry(false)).toEqual({ enabled: false, lifetimeFactor: 8 });
    expect(resolveLocalExpiry(true)).toEqual({ enabled: true, lifetimeFactor: 8 });
    expect(resolveLocalExpiry({ lifetimeFactor: 2 })).toEqual({ enabled: true, lifetimeFactor: 2 });
    expect(resolveLocalExpiry({ enabled: false })).toEqual({ enabled: false, lifetimeFactor: 8 });
  });

  it("an episode is overdue only after its expiry instant, by the ms past it; taking it forgets it", () => {
    const t = new LocalExpiryTracker({ enabled: true, lifetimeFactor: 8 });
    const expires = t.expiryOf(1000, 60);
    expect(expires).toBe(1000 + 8 * 60_000);
    t.remember("a", expires);
    expect(t.takeOverdueMs("a", expires)).toBeNull();
    t.remember("a", expires);
    expect(t.takeOverdueMs("a", expires + 250)).toBe(250);
    expect(t.takeOverdueMs("a", expires + 500)).toBeNull();
  });

  it("an untracked or forgotten episode, or tracking off, is never overdue", () => {
    const t = new LocalExpiryTracker({ enabled: true, lifetimeFactor: 8 });
    expect(t.takeOverdueMs("never-claimed", 10 ** 12)).toBeNull();
    t.remember("b", 0);
    t.forget("b");
    expect(t.takeOverdueMs("b", 10 ** 12)).toBeNull();
    const off = new LocalExpiryTracker({ enabled: false, lifetimeFactor: 8 });
    off.remember("c", 0);
    expect(off.takeOverdueMs("c", 10 ** 12)).toBeNull();
  });

  it("remembers 10,000 claims; the 10,001st forgets the oldest one only", () => {
    const t = new LocalExpiryTracker({ enabled: true, lifetimeFactor: 8 });
    for (let i = 0; i < 10_000; i++) t.remember(`e${i}`, 0);
    expect(t.takeOverdueMs("e0", 1)).toBe(1); // all 10,000 still tracked
    t.remember("e0", 0);
    t.remember("e10000", 0); // 10,001 → the oldest (e1, since e0 was re-remembered last) goes
    expect(t.takeOverdueMs("e1", 1)).toBeNull();
    expect(t.takeOverdueMs("e0", 1)).toBe(1);
    expect(t.takeOverdueMs("e2", 1)).toBe(1);
    expect(t.takeOverdueMs("e10000", 1)).toBe(1);
  });
});

describe("throttle: own running episodes without a task id (BC-31)", () => {
  const ME = "me";
  const policy = SwarmThrottlePolicy.parse({ ratio: 0.1, expected_batch_size: 10, expected_num_repeat: 4, current_task_id: "new-task" });

  it("own episodes without optional_task_id never count as own tasks", () => {
    const running: Record<string, Record<string, string>> = {};
    for (let i = 0; i < 5; i++) running[`ep${i}`] = { client_uuid: ME, episode_status: "claimed" };
    const pool = CurrentBatchRolloutPoolInformation.parse({ running_episode_details: running });
    expect(checkThrottlePolicy(policy, pool, ME, []).throttle).toBe(false);
    // one real own task reaches the cap of 10 × 0.1 = 1
    running.ep9 = { client_uuid: ME, optional_task_id: "t1", episode_status: "claimed" };
    expect(checkThrottlePolicy(policy, CurrentBatchRolloutPoolInformation.parse({ running_episode_details: running }), ME, []).throttle).toBe(true);
  });

  it("an empty current_task_id is refused naming the policy field", () => {
    const bad = { ...policy, current_task_id: "" } as SwarmThrottlePolicy;
    expect(() => checkThrottlePolicy(bad, CurrentBatchRolloutPoolInformation.parse({}), ME, [])).toThrow(
      new SwarmInputError("throttle_policy.current_task_id", "Task_Ratio_Limit requires current_task_id to be set."),
    );
  });
});

describe("claim: input and protocol errors", () => {
  it("each refused option names its field, the value received and what is allowed", () => {
    expect(() => buildClaimRequest("c", { discardEpisodeTimeoutSeconds: 0 })).toThrow(
      new SwarmInputError("discardEpisodeTimeoutSeconds", "must be a positive number of seconds, got 0"),
    );
    expect(() => buildClaimRequest("c", { episodeType: "test" as never })).toThrow(new SwarmInputError("episodeType", 'must be "train" or "eval", got "test"'));
    expect(() => buildClaimRequest("c", { throttlePolicy: { ratio: 0.5, expected_batch_size: 32, expected_num_repeat: 4, current_task_id: "" } as never })).toThrow(
      new SwarmInputError("throttlePolicy.current_task_id", "Task_Ratio_Limit requires current_task_id to be set."),
    );
  });

  it("a policy that fails its schema lists each issue as path: message, separated by '; '", () => {
    let err: unknown;
    try {
      buildClaimRequest("c", { throttlePolicy: { ratio: "x", expected_batch_size: "y", expected_num_repeat: 4, current_task_id: "t" } as never });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SwarmInputError);
    expect((err as SwarmInputError).field).toBe("throttlePolicy");
    expect((err as Error).message).toMatch(/^throttlePolicy: ratio: [^;]+; expected_batch_size: [^;]+$/);
  });

  it("a success without an episode uuid is a protocol error, not a claim", () => {
    const req = buildClaimRequest("c", {});
    const raw = { success: true, episode_uuid: "", openai_base_url: "http://10.0.0.5:10086/v1", openai_api_key: "k", fail_cause: "" } as never;
    let err: unknown;
    try {
      toClaimResult(SERVER, req, raw, () => ({ claimedAtMs: 0, expiresAtMs: 0 }));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SwarmProtocolError);
    expect(err).toMatchObject({ endpoint: "claimEpisode", route: "POST /claim_episode", issues: [], body: raw, message: "POST /claim_episode: success without episode_uuid" });
  });

  it("a not-ready fail cause without a readable status reports the status as unknown", () => {
    const req = buildClaimRequest("c", {});
    const raw = { success: false, episode_uuid: "", openai_base_url: "", openai_api_key: "", fail_cause: "Engine not ready, please wait" } as never;
    expect(toClaimResult(SERVER, req, raw, () => ({ claimedAtMs: 0, expiresAtMs: 0 }))).toEqual({
      kind: "notReady", reason: "notReady", status: "unknown", failCause: "Engine not ready, please wait",
    });
  });
});
