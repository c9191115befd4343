/** @module test/unit/functions/llm-guards — BC-38, BC-40, BC-42, BC-43 through real openai clients and the harness. */
import { APIConnectionError, InternalServerError } from "openai";
import { describe, expect, it } from "vitest";
import { EpisodeAbortError } from "../../../src/sdk/contract.ts";
import {
  assertChatCompletionChunk,
  assertChatCompletionShape,
  findEpisodeAbortError,
  withChatCompletionGuards,
} from "../../../src/sdk/llm-guards.ts";
import { createTestContext, scriptedReplies } from "../../../src/sdk/testing.ts";
import { describeShared, loadTranscript } from "../../support/shared.ts";

const ask = { model: "m", messages: [{ role: "system" as const, content: "s" }, { role: "user" as const, content: "q" }] };

/** Runs one non-streaming call and returns what it threw, unwrapped to the EpisodeAbortError if there is one. */
async function abortOf(promise: Promise<unknown>): Promise<EpisodeAbortError | undefined> {
  try {
    await promise;
  } catch (err) {
    return findEpisodeAbortError(err);
  }
  throw new Error("expected the call to fail");
}

describe("chat-completion guards", () => {
  it("BC-38 a 200 body with status_code/detail and no choices is a non-retryable auth error", async () => {
    const auth = { status: 200, body: { status_code: 401, detail: "Missing authorization header", headers: null } };
    const { ctx, callCount } = createTestContext({ reply: () => auth });
    const err = await abortOf(ctx.llm.chat.completions.create(ask));
    expect(err).toBeInstanceOf(EpisodeAbortError);
    expect(err?.reason).toBe("auth_error");
    expect(err?.message).toContain("Missing authorization header");
    expect(callCount()).toBe(1); // maxRetries 0: never retried
    expect(() => assertChatCompletionShape({ detail: "Invalid authorization data" })).toThrow(/refused the episode key/);
    expect(() => assertChatCompletionShape({ choices: [] })).toThrow(EpisodeAbortError);
    expect(() => assertChatCompletionShape("<html>")).toThrow(EpisodeAbortError);
  });

  it("BC-40 an in-band SSE error chunk is an infrastructure error, not an empty reply", async () => {
    const { ctx } = createTestContext({
      reply: () => ({ sse: ['{"error":{"message":"engine queue full"}}', "[DONE]"] }),
    });
    const stream = await ctx.llm.chat.completions.create({ ...ask, stream: true });
    const read = async () => {
      for await (const _chunk of stream) void _chunk;
    };
    await expect(read()).rejects.toMatchObject({ name: "EpisodeAbortError", reason: "infra_error" });
    expect(() => assertChatCompletionChunk({ error: { message: "x" } })).toThrow("the LLM stream carried an error after HTTP 200: ");
  });

  it("BC-40 a stream that ends without [DONE] is an infrastructure error", async () => {
    const chunk = JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "4" }, finish_reason: null }] });
    const { ctx } = createTestContext({ reply: () => ({ sse: [chunk] }) });
    const stream = await ctx.llm.chat.completions.create({ ...ask, stream: true });
    const seen: string[] = [];
    const read = async () => {
      for await (const c of stream) seen.push(c.choices[0]?.delta.content ?? "");
    };
    await expect(read()).rejects.toMatchObject({ reason: "infra_error", message: expect.stringContaining("[DONE]") });
    expect(seen).toEqual(["4"]);
  });

  it("BC-43 finish_reason abort aborts the episode (JSON and stream); length passes", async () => {
    const { ctx } = createTestContext({
      reply: scriptedReplies(
        { content: "Let me compute 3", finishReason: "abort" },
        { content: "…\\boxed{12", finishReason: "length" },
        { content: "Let me compute 3", finishReason: "abort" },
      ),
    });
    expect((await abortOf(ctx.llm.chat.completions.create(ask)))?.reason).toBe("llm_aborted");
    const cut = await ctx.llm.chat.completions.create(ask);
    expect(cut.choices[0]?.finish_reason).toBe("length");
    const stream = await ctx.llm.chat.completions.create({ ...ask, stream: true });
    const read = async () => {
      for await (const _c of stream) void _c;
    };
    await expect(read()).rejects.toMatchObject({ reason: "llm_aborted" });
  });

  it("BC-42 the harness clients never retry: one 500 is one request and an APIError", async () => {
    const { ctx, callCount } = createTestContext({ reply: () => ({ status: 500, body: { detail: "Internal Server Error" } }) });
    await expect(ctx.llm.chat.completions.create(ask)).rejects.toBeInstanceOf(InternalServerError);
    expect(callCount()).toBe(1);
  });

  it("wraps the guard's error in the SDK's APIConnectionError, and findEpisodeAbortError recovers it", async () => {
    const { ctx } = createTestContext({ reply: () => ({ status: 200, body: { detail: "timed out waiting" } }) });
    const thrown = await ctx.llm.chat.completions.create(ask).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(APIConnectionError); // not APIConnectionTimeoutError: "timed out" is hyphenated
    expect(findEpisodeAbortError(thrown)?.reason).toBe("auth_error");
    expect(findEpisodeAbortError(new Error("plain"))).toBeUndefined();
  });

  it("leaves other paths, methods and error statuses untouched", async () => {
    const inner = async () => new Response('{"detail":"x"}', { status: 200, headers: { "content-type": "application/json" } });
    const guarded = withChatCompletionGuards(inner);
    expect((await guarded("http://h/v1/models", { method: "GET" })).status).toBe(200);
    expect((await guarded("http://h/v1/chat/completions", { method: "GET" })).status).toBe(200);
    const notFound = withChatCompletionGuards(async () => new Response("{}", { status: 404 }));
    expect((await notFound("http://h/v1/chat/completions", { method: "POST" })).status).toBe(404);
    await expect(guarded("http://h/v1/chat/completions", { method: "POST" })).rejects.toMatchObject({ reason: "auth_error" });
  });
});

describeShared("chat-completion guards against the real-server transcript", () => {
  const exchanges = loadTranscript().filter((e) => e.endpoint === "POST /v1/chat/completions" && e.response.status === 200);

  it("BC-38 the recorded 200 auth bodies abort; the recorded completions and stream pass unchanged", async () => {
    expect(exchanges.length).toBeGreaterThanOrEqual(4);
    for (const e of exchanges) {
      const body = typeof e.response.body === "string" ? e.response.body : JSON.stringify(e.response.body);
      const headers = { "content-type": e.response.headers["content-type"] ?? "application/json" };
      const guarded = withChatCompletionGuards(async () => new Response(body, { status: 200, headers }));
      const call = guarded("http://h/v1/chat/completions", { method: "POST" }).then((r) => r.text());
      if (e.probe_label?.includes("authorization")) await expect(call).rejects.toMatchObject({ reason: "auth_error" });
      else expect(await call).toBe(body);
    }
  });
});
