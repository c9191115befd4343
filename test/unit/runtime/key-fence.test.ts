/** The global-fetch fence: requests without an episode key pass untouched; an open key takes its episode's route; a closed key is refused unsent. */
import { describe, expect, it } from "vitest";
import { bearerOf, installKeyFence, KeyFence, keysOf } from "../../../src/runtime/key-fence.ts";

const ok = (tag: string) => async () => new Response(tag);

describe("key fence", () => {
  it("reads the Bearer token from init headers (record, array, Headers) and from a Request", () => {
    expect(bearerOf("http://x", { headers: { Authorization: "Bearer sk-ajet-1" } })).toBe("sk-ajet-1");
    expect(bearerOf("http://x", { headers: [["authorization", "bearer sk-ajet-2"]] })).toBe("sk-ajet-2");
    expect(bearerOf(new Request("http://x", { headers: { authorization: "Bearer sk-ajet-3" } }))).toBe("sk-ajet-3");
    expect(bearerOf("http://x")).toBeUndefined();
    expect(bearerOf("http://x", { headers: { "x-api-key": "sk-ajet-4" } })).toBe("sk-ajet-4");
  });

  it("fences an episode key sent as x-api-key, also beside another Bearer token (an Anthropic client may send both)", async () => {
    const fence = new KeyFence(ok("original"));
    const close = fence.open("sk-ajet-a", ok("episode"));
    const both = { headers: { authorization: "Bearer sk-other", "x-api-key": "sk-ajet-a" } };
    expect(keysOf("http://x", both)).toEqual(["sk-other", "sk-ajet-a"]);
    expect(await (await fence.fetch("http://llm/v1/messages", both)).text()).toBe("episode");
    close();
    await expect(fence.fetch("http://llm/v1/messages", both)).rejects.toMatchObject({ name: "EpisodeAbortError", reason: "episode_over" });
  });

  it("routes an open key to its episode, refuses it once closed, and passes every other request to the original", async () => {
    const sent: string[] = [];
    const fence = new KeyFence(async (input) => (sent.push(String(input)), new Response("original")));
    const close = fence.open("sk-ajet-a", ok("episode"));
    const withKey = { headers: { authorization: "Bearer sk-ajet-a" } };
    expect(await (await fence.fetch("http://llm/v1/chat/completions", withKey)).text()).toBe("episode");
    expect(await (await fence.fetch("http://judge/v1/chat/completions", { headers: { authorization: "Bearer other" } })).text()).toBe("original");
    close();
    await expect(fence.fetch("http://llm/v1/chat/completions", withKey)).rejects.toMatchObject({ name: "EpisodeAbortError", reason: "episode_over" });
    expect(sent).toEqual(["http://judge/v1/chat/completions"]);
  });

  it("installKeyFence wraps a scope's fetch once (a second install returns the same fence)", async () => {
    const scope = { fetch: async (_i: string | URL | Request) => new Response("platform") };
    const a = installKeyFence(scope);
    const b = installKeyFence(scope);
    expect(b).toBe(a);
    expect(await (await scope.fetch("http://x")).text()).toBe("platform");
    expect(await (await a.original("http://x")).text()).toBe("platform");
  });
});
